package keyringtest

import (
	"errors"
	"syscall"
	"testing"

	"github.com/danieljoos/wincred"
)

// lookupOutside reads an item from the Credential Manager with github.com/danieljoos/wincred
// (CredReadW), under the target name go-keyring gives it ("SERVICE:USER"): it checks where and
// how the item is stored, beside go-keyring rather than through it.
func lookupOutside(t *testing.T, service, user string) (string, bool) {
	t.Helper()
	c, err := wincred.GetGenericCredential(service + ":" + user)
	if errors.Is(err, syscall.ERROR_NOT_FOUND) {
		return "", false
	}
	if err != nil {
		t.Fatalf("CredReadW(%s:%s): %v", service, user, err)
	}
	return string(c.CredentialBlob), true
}
