package refcompany

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority generated for one reference Company run. It is trusted only by
// clients configured with it explicitly (dev mode), never added to a system store.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // the CA certificate, PEM-encoded
	key  *ecdsa.PrivateKey
}

// NewCA generates a CA valid from now-1h to now+48h.
func NewCA(now time.Time) (*CA, error) { return newCA(now, 48*time.Hour) }

// newCA generates a CA valid from now-1h to now+validity.
func newCA(now time.Time, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Poppydesk reference Company dev CA", Organization: []string{"Poppydesk reference Company"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// Pool returns a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf issues a server certificate for the given DNS names (and 127.0.0.1).
func (ca *CA) Leaf(now time.Time, dnsNames ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(47 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("refcompany: issuing the server certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}, nil
}

// Files of a CA kept in a folder (LoadOrCreateCA).
const (
	caCertFile = "refcompany-ca.pem"
	caKeyFile  = "refcompany-ca.key"
	// keptCAValidity is how long a kept CA is valid: a developer trusts it once for a year.
	keptCAValidity = 365 * 24 * time.Hour
)

// LoadOrCreateCA loads the CA kept in dir, or generates one valid for a year and keeps it
// there (the key with mode 0600), so a reference Company started again with the same folder
// serves certificates its clients already trust. A kept CA that expires within a day is
// replaced.
func LoadOrCreateCA(dir string, now time.Time) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	if err1 == nil && err2 == nil {
		cb, _ := pem.Decode(certPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb == nil || kb == nil {
			return nil, fmt.Errorf("refcompany: the CA kept in %s does not parse; remove %s and %s to make a new one", dir, certPath, keyPath)
		}
		cert, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			return nil, fmt.Errorf("refcompany: the CA certificate %s: %w", certPath, err)
		}
		key, err := x509.ParseECPrivateKey(kb.Bytes)
		if err != nil {
			return nil, fmt.Errorf("refcompany: the CA key %s: %w", keyPath, err)
		}
		if now.Add(24 * time.Hour).Before(cert.NotAfter) {
			return &CA{Cert: cert, PEM: certPEM, key: key}, nil
		}
	} else if !errors.Is(err1, fs.ErrNotExist) && err1 != nil || !errors.Is(err2, fs.ErrNotExist) && err2 != nil {
		return nil, fmt.Errorf("refcompany: reading the CA kept in %s: %w", dir, errors.Join(err1, err2))
	}
	ca, err := newCA(now, keptCAValidity)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("refcompany: creating %s for the CA: %w", dir, err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("refcompany: keeping the CA key: %w", err)
	}
	if err := os.WriteFile(certPath, ca.PEM, 0o644); err != nil {
		return nil, fmt.Errorf("refcompany: keeping the CA certificate: %w", err)
	}
	return ca, nil
}
