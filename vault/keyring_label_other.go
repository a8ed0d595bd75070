//go:build !linux

package vault

import "github.com/zalando/go-keyring"

// setLabelled stores password with go-keyring's Set: the macOS Keychain and the Windows
// Credential Manager name an item by its service and account, which go-keyring sets.
func setLabelled(service, user, _, password string) error {
	return keyring.Set(service, user, password)
}
