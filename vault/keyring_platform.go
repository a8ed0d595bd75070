package vault

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// The size limits of each OS keyring as github.com/zalando/go-keyring v0.2.8 enforces them. Its
// own words (keyring.go, ErrSetDataTooBig): "On MacOS: The combination of service, username &
// password should not exceed ~3000 bytes. On Windows: The service is limited to 32KiB while the
// password is limited to 2560 bytes. On Linux/Unix: There is no theoretical limit but
// performance suffers with big values (>100KiB)". Its test TestSetTooLong expects a 10,002-byte
// value to fail with ErrSetDataTooBig on Windows and macOS.
const (
	// windowsMaxBlob is keyring_windows.go's check `len(password) > 2560` (CredWrite's
	// CRED_MAX_CREDENTIAL_BLOB_SIZE, 5*512 bytes; github.com/danieljoos/wincred's README: "The
	// size of a credential blob is limited to 2560 Bytes by the Windows API").
	windowsMaxBlob = 2560
	// windowsMaxService is keyring_windows.go's check `len(service) >= 512`.
	windowsMaxService = 512
	// darwinMaxCommand is keyring_darwin.go's check `len(command) > 4096`: Set writes one line
	// `add-generic-password -U -s SERVICE -a USER -w go-keyring-base64:BASE64(PASSWORD)` to the
	// standard input of `/usr/bin/security -i`, each field quoted for a POSIX shell. go-keyring
	// checks the length only after it has started `security`, so a value that is too big leaves
	// that process waiting on its input; Poppydesk therefore never hands it a line that is too
	// long (darwinMaxValue).
	darwinMaxCommand = 4096
)

// darwinCommandOverhead is the length of go-keyring's `add-generic-password` line without the
// quoted service, user and password: "add-generic-password -U -s " + " -a " + " -w " + "\n".
const darwinCommandOverhead = len("add-generic-password -U -s ") + len(" -a ") + len(" -w ") + len("\n")

// darwinPasswordPrefix is what go-keyring puts before the base64 of every value on macOS.
const darwinPasswordPrefix = "go-keyring-base64:"

// shellUnsafe is the character class go-keyring's internal/shellescape.Quote (from
// al.essio.dev/pkg/shellescape) quotes a string for; go-keyring keeps it internal, so its length
// rule is restated here to size values before calling it.
var shellUnsafe = regexp.MustCompile(`[^\w@%+=:,./-]`)

// shellQuotedLen is len(shellescape.Quote(s)): two quote characters for the empty string, s as
// is when it has no unsafe character, else s in single quotes with each quote written as 4+1
// characters ('"'"').
func shellQuotedLen(s string) int {
	switch {
	case s == "":
		return 2
	case shellUnsafe.MatchString(s):
		return 2 + len(s) + 4*strings.Count(s, "'")
	default:
		return len(s)
	}
}

// darwinMaxValue is the largest value (bytes given to go-keyring's Set) whose
// `add-generic-password` line for service and user stays within darwinMaxCommand.
func darwinMaxValue(service, user string) int {
	room := darwinMaxCommand - darwinCommandOverhead - shellQuotedLen(service) - shellQuotedLen(user) - len(darwinPasswordPrefix)
	if room < 4 {
		return 0
	}
	return base64.StdEncoding.DecodedLen(room - room%4) // 3 bytes per 4 base64 characters
}

// maxEncodedSize is the longest string encodeValue makes of a value of MaxItemSize bytes (base64
// behind encodedPrefix). The Secret Service takes it in one item.
const maxEncodedSize = len(encodedPrefix) + (MaxItemSize+2)/3*4

// itemLimit is the largest string go-keyring's Set takes for one item of service named user on
// platform (a GOOS value); an error when the platform refuses the service name itself.
func itemLimit(platform, service, user string) (int, error) {
	switch platform {
	case "windows":
		if len(service) >= windowsMaxService {
			return 0, fmt.Errorf("the keyring service name is %d bytes; the Windows Credential Manager takes fewer than %d (set a shorter POPPYDESK_KEYRING_SERVICE)", len(service), windowsMaxService)
		}
		return windowsMaxBlob, nil
	case "darwin":
		n := darwinMaxValue(service, user)
		if n < partMinSize {
			return 0, fmt.Errorf("the keyring service and item names are too long for the macOS Keychain through /usr/bin/security (%d and %d bytes); set a shorter POPPYDESK_KEYRING_SERVICE", len(service), len(user))
		}
		return n, nil
	default:
		return maxEncodedSize, nil
	}
}

// ItemLimit is the largest value, in bytes as go-keyring's Set takes it, that one keyring item
// of service named user holds on platform (a GOOS value); 0 when the platform refuses the names.
// Longer values are kept in parts.
func ItemLimit(platform, service, user string) int {
	n, err := itemLimit(platform, service, user)
	if err != nil {
		return 0
	}
	return n
}

// keyringName is the OS keyring's name on platform, as a user knows it.
func keyringName(platform string) string {
	switch platform {
	case "windows":
		return "Windows Credential Manager"
	case "darwin":
		return "macOS Keychain"
	default:
		return "Secret Service"
	}
}

// KeyringHelp says, for platform (a GOOS value), how to make the OS keyring usable, as a
// sentence to which the caller adds what to do next (", then retry"). It ends every
// ErrKeyringUnavailable message and the window's "no keyring" problem.
func KeyringHelp(platform string) string {
	const noFallback = "Poppydesk keeps secrets only in the OS keyring and has no plain-text fallback. "
	switch platform {
	case "windows":
		return noFallback + "On Windows that is the Credential Manager of your user account, which needs a normal " +
			"sign-in with a loaded user profile (not a service account or `runas /netonly`); the policy " +
			"\"Network access: Do not allow storage of passwords and credentials for network authentication\" " +
			"also blocks it. Sign in to Windows as yourself"
	case "darwin":
		return noFallback + "On macOS that is your login Keychain, reached through /usr/bin/security. " +
			"Unlock it (Keychain Access, or `security unlock-keychain`) and allow access if macOS asks"
	default:
		return noFallback + "Start a Secret Service provider in your desktop session and unlock it, for example GNOME Keyring " +
			"(`gnome-keyring-daemon --unlock --components=secrets`, Debian package gnome-keyring) or KeePassXC " +
			"with Settings > Secret Service Integration enabled"
	}
}
