package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"net/url"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkDPoPProof measures one DPoP proof of a signed-in request (the key's header encoded
// once; claims encoded, ES256 signature) against the baseline of the bare ECDSA P-256 signature
// it contains.
func BenchmarkDPoPProof(b *testing.B) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c := &Client{now: time.Now}
	s, err := newDPoPSigner(key)
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("https://auth.shop.localhost:8443/oauth/token")
	sum := sha256.Sum256([]byte("header.payload"))
	benchratio.RunCPU(b, "proof", "ecdsa-sign", func(b *testing.B) {
		if _, err := c.proof(s, "POST", u, "at_token", "nonce"); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		if _, err := ecdsa.SignASN1(rand.Reader, key, sum[:]); err != nil {
			b.Fatal(err)
		}
	})
}
