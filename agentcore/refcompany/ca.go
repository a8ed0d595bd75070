package refcompany

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/devca"
)

// CA is the certificate authority generated for one reference Company run (agentcore/devca). It
// is trusted only by clients configured with it explicitly (dev mode), never added to a system
// store.
type CA = devca.CA

// NewCA generates a CA valid from now-1h to now+48h.
func NewCA(now time.Time) (*CA, error) { return newCA(now, 48*time.Hour) }

// newCA generates a CA valid from now-1h to now+validity.
func newCA(now time.Time, validity time.Duration) (*CA, error) {
	return devca.New(now, devca.Options{Name: "Poppydesk reference Company dev CA", Organization: "Poppydesk reference Company", Lifetime: validity})
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
		ca, err := devca.Parse(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("refcompany: the CA kept in %s does not parse (%w); remove %s and %s to make a new one", dir, err, certPath, keyPath)
		}
		if now.Add(24 * time.Hour).Before(ca.Cert.NotAfter) {
			return ca, nil
		}
	} else if !errors.Is(err1, fs.ErrNotExist) && err1 != nil || !errors.Is(err2, fs.ErrNotExist) && err2 != nil {
		return nil, fmt.Errorf("refcompany: reading the CA kept in %s: %w", dir, errors.Join(err1, err2))
	}
	ca, err := newCA(now, keptCAValidity)
	if err != nil {
		return nil, err
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("refcompany: creating %s for the CA: %w", dir, err)
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return nil, fmt.Errorf("refcompany: keeping the CA key: %w", err)
	}
	if err := os.WriteFile(certPath, ca.PEM, 0o644); err != nil {
		return nil, fmt.Errorf("refcompany: keeping the CA certificate: %w", err)
	}
	return ca, nil
}
