// Package endpoint is where the app serves the model's MCP interface (agentcore/modelapi) and
// how a relay (agentcore/modelapi/relay) reaches it: a Unix socket on Unix systems, a named pipe
// on Windows. It is a package of its own, with no dependency beyond the standard library,
// golang.org/x/sys and github.com/Microsoft/go-winio, so that the relay an MCP client starts
// links nothing else.
//
// The default location depends only on the OS user and the home folder, never on environment
// variables that an MCP client may drop (the official MCP SDKs start a stdio server with only
// HOME, LOGNAME, PATH, SHELL, TERM and USER): the app started from the desktop menu and a relay
// started by any client compute the same place.
//
//   - Linux and other Unix systems: /run/user/UID/poppydesk/mcp-HOMEKEY.sock when /run/user/UID
//     is the user's own private folder (systemd-logind makes it at login; it is what
//     XDG_RUNTIME_DIR names), else /tmp/poppydesk-UID/mcp-HOMEKEY.sock. The folder is 0700 and
//     must belong to the user, the socket is 0600, and on Linux both ends check the other's uid
//     (SO_PEERCRED). The app holds a shared lock on the folder so systemd-tmpfiles' age-based
//     cleaning of /tmp leaves it alone.
//   - Windows: the named pipe \\.\pipe\poppydesk-mcp-SID-HOMEKEY, whose security descriptor
//     names the user's SID as owner and as the only one allowed in, denies network logons, and
//     rejects remote clients (go-winio creates every pipe with PIPE_REJECT_REMOTE_CLIENTS). The
//     relay checks that the pipe it reached belongs to the user.
//
// HOMEKEY is the first 12 hex digits of the SHA-256 of the home folder ([Home]): one user's
// Poppydesk instances with different home folders (tests, a second profile) do not meet.
package endpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"runtime"
)

// ErrNotRunning is wrapped by Dial's error when nothing serves at the endpoint: no socket or
// pipe of that name, or a socket left by a run that ended without removing it.
var ErrNotRunning = errors.New("nothing answers there")

// UntrustedError is Dial's and Listen's error when the endpoint or its folder fails the
// ownership and permission checks: another user could have made it to read what is sent.
type UntrustedError struct {
	Path string // the socket, pipe or folder that failed
	Why  string // what is wrong with it, in words
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("Poppydesk's model interface at %s cannot be trusted: %s. Another user may have made it to read what your assistant sends; remove it (ask your administrator if you cannot), then start Poppydesk again", e.Path, e.Why)
}

// Home is the home folder the default endpoint is keyed by: $HOME (%USERPROFILE% on Windows)
// when it is an absolute path, else the home folder the user database records for this user.
// getenv is os.Getenv in production.
func Home(getenv func(string) string) (string, error) {
	name := "HOME"
	if runtime.GOOS == "windows" {
		name = "USERPROFILE"
	}
	if h := getenv(name); h != "" && filepath.IsAbs(h) {
		return filepath.Clean(h), nil
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || !filepath.IsAbs(u.HomeDir) {
		return "", fmt.Errorf("$%s is not set to an absolute path and the user database has no home folder for this user", name)
	}
	return filepath.Clean(u.HomeDir), nil
}

// homeKey names home in the endpoint: the first 12 hex digits of its SHA-256.
func homeKey(home string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(home)))
	return hex.EncodeToString(sum[:6])
}
