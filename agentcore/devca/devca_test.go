package devca_test

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/devca"
)

// TestLeafVerifiesAgainstItsCAOnly: a server certificate verifies for its names with the CA's
// pool, and a name-constrained CA cannot vouch for any other name (RFC 5280 §4.2.1.10).
func TestLeafVerifiesAgainstItsCAOnly(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		permitted []string
		leafFor   string
		ok        bool
	}{
		{"unconstrained", nil, "shop.localhost", true},
		{"constrained, its own name", []string{"agent.localhost"}, "agent.localhost", true},
		{"constrained, another name", []string{"agent.localhost"}, "bank.example", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca, err := devca.New(now, devca.Options{Name: "test CA", Organization: "test", Lifetime: time.Hour, Permitted: tc.permitted})
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := ca.Leaf(now, tc.leafFor)
			if err != nil {
				t.Fatal(err)
			}
			cert, err := x509.ParseCertificate(leaf.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if cert.NotAfter.After(ca.Cert.NotAfter) {
				t.Errorf("the leaf outlives its CA: %s > %s", cert.NotAfter, ca.Cert.NotAfter)
			}
			_, err = cert.Verify(x509.VerifyOptions{DNSName: tc.leafFor, Roots: ca.Pool(), CurrentTime: now})
			if (err == nil) != tc.ok {
				t.Fatalf("Verify for %s: %v; want ok %v", tc.leafFor, err, tc.ok)
			}
		})
	}
}

// TestParseRoundTrip: a CA written as PEM reads back with its key; a key of another CA is refused.
func TestParseRoundTrip(t *testing.T) {
	now := time.Now()
	a, err := devca.New(now, devca.Options{Name: "a", Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, err := devca.New(now, devca.Options{Name: "b", Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ka, _ := a.KeyPEM()
	kb, _ := b.KeyPEM()
	back, err := devca.Parse(a.PEM, ka)
	if err != nil || !back.Cert.Equal(a.Cert) {
		t.Fatalf("Parse = %v", err)
	}
	if _, err := back.Leaf(now, "x.localhost"); err != nil {
		t.Fatal(err)
	}
	if _, err := devca.Parse(a.PEM, kb); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("another CA's key: %v", err)
	}
}
