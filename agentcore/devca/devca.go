// Package devca makes the certificate authorities of developer mode and the demo: loopback HTTPS
// that a client trusts only because it was configured to (spec 3 "configured on purpose"). The
// reference Company serves its hosts with one made at each start; Poppydesk serves its own client
// metadata (spec 4.1) to a developer's Company with one kept in its data folder, name-constrained
// (RFC 5280 §4.2.1.10) so that even a copy of its key cannot issue a certificate for any other
// name. No CA made here is ever added to a system store.
//
// It is written here, with crypto/x509, because the standard library has every piece and no
// library in go.mod makes CAs; both users get the same certificates from one place.
package devca

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
	"math/big"
	"net"
	"time"
)

// MaxLeafLifetime bounds the lifetime of a server certificate; it never outlives its CA either.
const MaxLeafLifetime = 30 * 24 * time.Hour

// Options describe a new CA.
type Options struct {
	// Name is the CA's common name; Organization its organization.
	Name, Organization string
	// Lifetime is how long the CA is valid from now (it is valid from an hour before now).
	Lifetime time.Duration
	// Permitted, when set, constrains the CA to these DNS names and their subdomains and to
	// 127.0.0.1 (a critical name constraint): the CA can issue for nothing else.
	Permitted []string
}

// CA is a certificate authority and its key.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // the certificate, PEM-encoded
	key  *ecdsa.PrivateKey
}

var loopback = net.IPv4(127, 0, 0, 1).To4()

// New makes a CA valid from an hour before now for o.Lifetime.
func New(now time.Time, o Options) (*CA, error) {
	if o.Lifetime <= 0 {
		return nil, errors.New("devca: a CA needs a lifetime")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: o.Name, Organization: []string{o.Organization}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(o.Lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	if len(o.Permitted) > 0 {
		tmpl.PermittedDNSDomainsCritical = true
		tmpl.PermittedDNSDomains = o.Permitted
		tmpl.PermittedIPRanges = []*net.IPNet{{IP: loopback, Mask: net.CIDRMask(32, 32)}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("devca: making the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// Parse reads a CA written by PEM and KeyPEM.
func Parse(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("devca: the CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devca: the CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devca: the CA key: %w", err)
	}
	if !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("devca: the key does not belong to the CA certificate")
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(cb), key: key}, nil
}

// KeyPEM is the CA's private key, PEM-encoded (keep it private).
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// Pool returns a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf issues a server certificate for dnsNames and 127.0.0.1, valid from an hour before now
// until the CA expires, at most MaxLeafLifetime.
func (ca *CA) Leaf(now time.Time, dnsNames ...string) (tls.Certificate, error) {
	if len(dnsNames) == 0 {
		return tls.Certificate{}, errors.New("devca: a server certificate needs a DNS name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		IPAddresses:  []net.IP{loopback},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(MaxLeafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("devca: issuing the server certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}, nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}
