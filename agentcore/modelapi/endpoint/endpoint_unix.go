//go:build unix

package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// Roots of the default endpoint's folder: the per-user runtime folders systemd-logind makes
// (RunRoot/UID), and the shared temporary folder.
const (
	RunRoot = "/run/user"
	TmpRoot = "/tmp"
)

// Default is the app's model endpoint for home: see the package documentation.
func Default(home string) (string, error) {
	return defaultIn(RunRoot, TmpRoot, os.Getuid(), home), nil
}

func defaultIn(runRoot, tmpRoot string, uid int, home string) string {
	name := "mcp-" + homeKey(home) + ".sock"
	if runtime.GOOS == "linux" {
		rt := filepath.Join(runRoot, strconv.Itoa(uid))
		if fi, err := os.Lstat(rt); err == nil && fi.IsDir() && ownedBy(fi, uid) && fi.Mode().Perm()&0o077 == 0 {
			return filepath.Join(rt, "poppydesk", name)
		}
	}
	return filepath.Join(tmpRoot, "poppydesk-"+strconv.Itoa(uid), name)
}

func ownedBy(fi fs.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// Listen listens on the Unix socket path for the model. Its folder is created 0700 (an
// existing one must be a real folder of this user; its mode is set to 0700), the socket is
// 0600, and the folder is locked (shared) while the listener is open. A stale socket left by a
// run that crashed is removed; a live one (another Poppydesk answering) is an error.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the folder %s of the model's socket failed: %w; check its parent's permissions", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("the folder %s of the model's socket: %w", dir, err)
	}
	uid := os.Getuid()
	switch {
	case !fi.IsDir():
		return nil, &UntrustedError{Path: dir, Why: "it is not a folder (a symbolic link or a file)"}
	case !ownedBy(fi, uid):
		return nil, &UntrustedError{Path: dir, Why: fmt.Sprintf("it belongs to the user with uid %d, not to you (uid %d)", owner(fi), uid)}
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("making the folder %s of the model's socket private (0700) failed: %w", dir, err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if err := removeStale(ctx, path); err != nil {
		lock.Close()
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("listening on %s failed: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		lock.Close()
		return nil, fmt.Errorf("making the socket %s private (0600) failed: %w", path, err)
	}
	return &listener{UnixListener: ln.(*net.UnixListener), lock: lock}, nil
}

// removeStale removes a socket at path that nobody answers on, and refuses a live one.
func removeStale(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s failed: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; remove it and start Poppydesk again", path)
	}
	d := net.Dialer{Timeout: time.Second}
	if c, err := d.DialContext(ctx, "unix", path); err == nil {
		c.Close()
		return fmt.Errorf("another Poppydesk is already serving the model interface at %s (for the same home folder); close it first", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing the stale socket %s failed: %w", path, err)
	}
	return nil
}

// listener is the socket's listener with the folder's lock, released when it closes.
type listener struct {
	*net.UnixListener
	lock interface{ Close() error }
}

func (l *listener) Close() error {
	err := l.UnixListener.Close()
	l.lock.Close()
	return err
}

// Dial connects to the app's socket at path after checking that the socket and its folder
// belong to this user and that nobody else can replace the socket (the folder is not writable by
// group or others), and, on Linux, that the process serving it runs as this user. An error wraps
// ErrNotRunning when nothing serves there, and is an *UntrustedError when a check fails.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	uid := os.Getuid()
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotRunning)
	}
	if err != nil {
		return nil, fmt.Errorf("checking %s failed: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return nil, &UntrustedError{Path: path, Why: "it is not a socket"}
	}
	if !ownedBy(fi, uid) {
		return nil, &UntrustedError{Path: path, Why: fmt.Sprintf("it belongs to the user with uid %d, not to you (uid %d)", owner(fi), uid)}
	}
	dir := filepath.Dir(path)
	di, err := os.Lstat(dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("checking %s failed: %w", dir, err)
	case !di.IsDir():
		return nil, &UntrustedError{Path: dir, Why: "it is not a folder (a symbolic link or a file)"}
	case !ownedBy(di, uid):
		return nil, &UntrustedError{Path: dir, Why: fmt.Sprintf("it belongs to the user with uid %d, not to you (uid %d)", owner(di), uid)}
	case di.Mode().Perm()&0o022 != 0:
		return nil, &UntrustedError{Path: dir, Why: fmt.Sprintf("others may write in it (mode %04o)", di.Mode().Perm())}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("%s (a socket left by a run that ended): %w", path, ErrNotRunning)
	}
	if err != nil {
		return nil, err
	}
	if err := CheckPeer(c); err != nil {
		c.Close()
		return nil, &UntrustedError{Path: path, Why: err.Error()}
	}
	return c, nil
}
