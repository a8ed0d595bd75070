package app

// Poppydesk's own certificate authority for developer mode: the developer's Company must fetch
// Poppydesk's client metadata (spec 4.1) over HTTPS from a loopback URL, so Poppydesk serves it
// with a certificate from a CA it generates once and shows as a file for the developer to trust.
// The CA is name-constrained (RFC 5280 §4.2.1.10) to agent.localhost, localhost and 127.0.0.1:
// even a copy of its key cannot issue a certificate for any other name. Its key lives in the
// data folder (mode 0600) rather than the keyring because it protects only that loopback
// listener, which serves public documents.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/devca"
)

// DevAgentHost is the name under which developer mode serves Poppydesk's client metadata.
const DevAgentHost = "agent.localhost"

// Files of the developer-mode CA, under the data folder's "developer" folder.
const (
	devCACertFile = "poppydesk-agent-ca.pem"
	devCAKeyFile  = "poppydesk-agent-ca.key"
)

// devCA is the developer-mode CA and where its certificate is.
type devCA struct {
	*devca.CA
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
		ca, err := devca.Parse(cb, kb)
		if err != nil {
			return nil, fmt.Errorf("the developer-mode CA in %s does not parse (%w); delete both files to get a new one", dir, err)
		}
		if now.Before(ca.Cert.NotAfter.Add(-24 * time.Hour)) {
			return &devCA{CA: ca, certPath: certPath}, nil
		}
	} else if !errors.Is(cerr, fs.ErrNotExist) && cerr != nil {
		return nil, fmt.Errorf("reading the developer-mode CA: %w", cerr)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := devca.New(now, devca.Options{Name: "Poppydesk developer mode CA (agent.localhost only)", Organization: "Poppydesk",
		Lifetime: 365 * 24 * time.Hour, Permitted: []string{DevAgentHost, "localhost"}})
	if err != nil {
		return nil, err
	}
	kp, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, kp, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, ca.PEM, 0o644); err != nil {
		return nil, err
	}
	return &devCA{CA: ca, certPath: certPath}, nil
}

// leaf issues the listener's certificate for agent.localhost, localhost and 127.0.0.1.
func (ca *devCA) leaf(now time.Time) (tls.Certificate, error) {
	return ca.Leaf(now, DevAgentHost, "localhost")
}
