package app

// Poppydesk's own certificate authority for developer mode: the developer's Company must fetch
// Poppydesk's client metadata (spec 4.1) over HTTPS from a loopback URL, so Poppydesk serves it
// with a certificate from a CA it generates once and shows as a file for the developer to trust.
// The CA is name-constrained (RFC 5280 §4.2.1.10) to agent.localhost, localhost and 127.0.0.1:
// even a copy of its key cannot issue a certificate for any other name. Its key lives in the
// data folder (mode 0600) rather than the keyring because it protects only that loopback
// listener, which serves public documents.

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

// DevAgentHost is the name under which developer mode serves Poppydesk's client metadata.
const DevAgentHost = "agent.localhost"

// Files of the developer-mode CA, under the data folder's "developer" folder.
const (
	devCACertFile = "poppydesk-agent-ca.pem"
	devCAKeyFile  = "poppydesk-agent-ca.key"
)

// devCA is the developer-mode CA.
type devCA struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certPath string
}

// DevCAPath is where developer mode keeps the CA certificate the developer's Company trusts.
func DevCAPath(p Paths) string { return filepath.Join(p.Data, "developer", devCACertFile) }

// EnsureDevCA loads the developer-mode CA from the data folder, generating it the first time,
// and returns the path of its certificate (PEM) for the developer's Company to trust.
func EnsureDevCA(p Paths, now time.Time) (string, error) {
	ca, err := loadDevCA(p, now)
	if err != nil {
		return "", err
	}
	return ca.certPath, nil
}

func loadDevCA(p Paths, now time.Time) (*devCA, error) {
	dir := filepath.Join(p.Data, "developer")
	certPath, keyPath := filepath.Join(dir, devCACertFile), filepath.Join(dir, devCAKeyFile)
	cb, cerr := os.ReadFile(certPath)
	kb, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		cblk, _ := pem.Decode(cb)
		kblk, _ := pem.Decode(kb)
		if cblk == nil || kblk == nil {
			return nil, fmt.Errorf("the developer-mode CA in %s does not parse; delete both files to get a new one", dir)
		}
		cert, err := x509.ParseCertificate(cblk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the developer-mode CA certificate %s: %w", certPath, err)
		}
		key, err := x509.ParseECPrivateKey(kblk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the developer-mode CA key %s: %w", keyPath, err)
		}
		if now.Before(cert.NotAfter.Add(-24 * time.Hour)) {
			return &devCA{cert: cert, key: key, certPath: certPath}, nil
		}
	} else if !errors.Is(cerr, fs.ErrNotExist) && cerr != nil {
		return nil, fmt.Errorf("reading the developer-mode CA: %w", cerr)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Poppydesk developer mode CA (agent.localhost only)", Organization: []string{"Poppydesk"}},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         []string{DevAgentHost, "localhost"},
		PermittedIPRanges:           []*net.IPNet{{IP: net.IPv4(127, 0, 0, 1).To4(), Mask: net.CIDRMask(32, 32)}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return &devCA{cert: cert, key: key, certPath: certPath}, nil
}

// leaf issues the listener's certificate for agent.localhost, localhost and 127.0.0.1.
func (ca *devCA) leaf(now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: DevAgentHost},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{DevAgentHost, "localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}, nil
}
