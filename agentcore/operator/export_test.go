package operator

import "crypto/rsa"

// PrivateKeyForBenchmark gives the benchmark the key for its baseline, a bare RSA operation.
func (k *Key) PrivateKeyForBenchmark() *rsa.PrivateKey { return k.priv }
