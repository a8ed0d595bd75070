package poppytest

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/devca"
)

// ServerTLS is a server certificate for a loopback host under development (an operator served
// with `poppydesk operator serve --tls-cert --tls-key`), from a CA of the test's own, written as
// PEM files.
type ServerTLS struct {
	CA                        *devca.CA
	CAFile, CertFile, KeyFile string
}

// NewServerTLS makes a CA and a certificate for host and writes the CA's certificate, the chain
// and the key (0600) into dir.
func NewServerTLS(t TB, dir, host string) ServerTLS {
	t.Helper()
	ca, err := devca.New(time.Now(), devca.Options{Name: "Poppydesk test CA", Organization: "Poppydesk tests", Lifetime: 24 * time.Hour})
	if err != nil {
		t.Fatalf("making a CA: %v", err)
	}
	leaf, err := ca.Leaf(time.Now(), host)
	if err != nil {
		t.Fatalf("making a certificate for %s: %v", host, err)
	}
	s := ServerTLS{CA: ca, CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "tls.pem"), KeyFile: filepath.Join(dir, "tls.key")}
	var chain []byte
	for _, der := range leaf.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		t.Fatalf("encoding the key: %v", err)
	}
	for f, b := range map[string][]byte{s.CAFile: ca.PEM, s.CertFile: chain, s.KeyFile: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatalf("writing %s: %v", f, err)
		}
	}
	return s
}
