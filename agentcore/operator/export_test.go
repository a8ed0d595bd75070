package operator

import "crypto/rsa"

// PrivateKeyForBenchmark gives the benchmark the key for its baseline, a bare RSA operation.
func (k *Key) PrivateKeyForBenchmark() *rsa.PrivateKey { return k.priv }

// BlindSignForBenchmark is the operator's blind signature alone.
func (k *Key) BlindSignForBenchmark(blinded []byte) ([]byte, error) {
	return k.signer.BlindSign(blinded)
}
