package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"net/url"
	"testing"
	"time"
)

// BenchmarkDPoPProof measures one DPoP proof (jwx: build, embed jwk, sign ES256) against the
// baseline of the bare ECDSA P-256 signature it contains.
func BenchmarkDPoPProof(b *testing.B) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c := &Client{now: time.Now}
	u, _ := url.Parse("https://auth.shop.localhost:8443/oauth/token")
	b.Run("proof", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.proof(key, "POST", u, "at_token", "nonce"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-ecdsa-sign", func(b *testing.B) {
		sum := sha256.Sum256([]byte("header.payload"))
		for b.Loop() {
			if _, err := ecdsa.SignASN1(rand.Reader, key, sum[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
