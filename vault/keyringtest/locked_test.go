package keyringtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/vault"
)

const envLockedChild = "POPPYDESK_LOCKED_KEYRING_CHILD"

// TestLockedKeyringChild runs inside the private D-Bus session TestLockedKeyringIsReported
// starts, where gnome-keyring runs but was never unlocked: every keyring call must fail with
// an error matching both ErrKeyringUnavailable and ErrKeyringLocked.
func TestLockedKeyringChild(t *testing.T) {
	if os.Getenv(envLockedChild) == "" {
		t.Skip("the child process of TestLockedKeyringIsReported")
	}
	k := vault.NewKeyring(vault.KeyringOptions{Service: "PoppydeskTest-locked-" + randomHex(4)})
	_, err := k.Names(context.Background())
	if !errors.Is(err, vault.ErrKeyringUnavailable) || !errors.Is(err, vault.ErrKeyringLocked) {
		t.Fatalf("a locked keyring answered %v; want an error matching ErrKeyringUnavailable and ErrKeyringLocked", err)
	}
	if err := k.Set(context.Background(), "item", []byte("v")); !errors.Is(err, vault.ErrKeyringLocked) {
		t.Fatalf("writing to a locked keyring answered %v; want ErrKeyringLocked", err)
	}
}

// TestLockedKeyringIsReported starts a real gnome-keyring in a D-Bus session of its own, without
// unlocking it (as a desktop whose login keyring stays locked), and runs TestLockedKeyringChild
// there. A missing dbus-run-session or gnome-keyring-daemon skips it, unless
// POPPYDESK_REQUIRE_KEYRING=1 makes that a failure.
func TestLockedKeyringIsReported(t *testing.T) {
	if os.Getenv(envLockedChild) != "" {
		t.Skip("in the child")
	}
	if runtime.GOOS != "linux" {
		t.Skipf("a locked Secret Service collection is a Linux desktop's state; the %s keyring is locked and unlocked by the OS, which no test here can drive", runtime.GOOS)
	}
	for _, tool := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
				t.Fatalf("POPPYDESK_REQUIRE_KEYRING=1 but %s is missing", tool)
			}
			t.Skipf("%s is missing (Debian packages dbus-daemon, gnome-keyring)", tool)
		}
	}
	data := t.TempDir() // no login keyring yet: a new one needs a password nobody gives
	cmd := exec.Command("dbus-run-session", "--", "sh", "-c",
		`gnome-keyring-daemon --start --components=secrets >/dev/null && exec "$0" -test.run='^TestLockedKeyringChild$' -test.count=1 -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), envLockedChild+"=1", "XDG_DATA_HOME="+data, "XDG_RUNTIME_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLockedKeyringChild") {
		t.Fatalf("the locked-keyring child: %v\n%s", err, out)
	}
}
