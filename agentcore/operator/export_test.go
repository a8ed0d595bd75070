package operator

import (
	"context"
	"crypto/rsa"
)

// PrivateKeyForBenchmark gives the benchmark the key for its baseline, a bare RSA operation.
func (k *Key) PrivateKeyForBenchmark() *rsa.PrivateKey { return k.priv }

// BlindSignForBenchmark is the operator's blind signature alone.
func (k *Key) BlindSignForBenchmark(blinded []byte) ([]byte, error) {
	return k.signer.BlindSign(blinded)
}

// OpenStoreAt opens the database migrated to version v only, as an older build left it.
func OpenStoreAt(ctx context.Context, dsn string, v int) (*Store, error) {
	return openStore(ctx, dsn, v)
}

// Exec runs a statement on the store's database, as an older build would write.
func (s *Store) Exec(ctx context.Context, query string, args ...any) error {
	_, err := s.db.ExecContext(ctx, s.q(query), args...)
	return err
}

// CRTBlindSign is the operator's blind signature with key k.
func CRTBlindSign(k *rsa.PrivateKey, blinded []byte) ([]byte, error) {
	s, err := newCRTSigner(k)
	if err != nil {
		return nil, err
	}
	return s.BlindSign(blinded)
}
