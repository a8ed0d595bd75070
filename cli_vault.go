package main

import (
	"context"
	"os"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// keyringService is the Secret Service "service" attribute of Poppydesk's items.
// POPPYDESK_KEYRING_SERVICE overrides it (tests use a throwaway one).
func keyringService() string {
	if s := os.Getenv("POPPYDESK_KEYRING_SERVICE"); s != "" {
		return s
	}
	return vault.DefaultService
}

// openSecrets opens the engine's secret store over the OS keyring (vault.Keyring: one item per
// bundle, cached, every call bounded by a timeout). It makes one keyring call to find out early,
// with a clear message, when no Secret Service is reachable or it is locked.
func openSecrets(ctx context.Context) (store.Secrets, error) {
	kr := vault.NewKeyring(vault.KeyringOptions{Service: keyringService()})
	if _, err := kr.Names(ctx); err != nil {
		return nil, err
	}
	return store.NewSecrets(kr), nil
}
