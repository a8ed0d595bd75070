package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// Default is the app's model endpoint for home: the named pipe
// \\.\pipe\poppydesk-mcp-SID-HOMEKEY (see the package documentation).
func Default(home string) (string, error) {
	sid, err := userSID()
	if err != nil {
		return "", err
	}
	return `\\.\pipe\poppydesk-mcp-` + sid.String() + "-" + homeKey(home), nil
}

// userSID is the SID of the user this process runs as.
func userSID() (*windows.SID, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading this process's user (its SID) failed: %w", err)
	}
	return u.User.Sid, nil
}

// securityDescriptor is the pipe's security descriptor (SDDL): owned by sid, a protected DACL
// that denies network logons (NU) and allows sid, and no one else, everything.
func securityDescriptor(sid *windows.SID) string {
	s := sid.String()
	return "O:" + s + "D:P(D;;GA;;;NU)(A;;GA;;;" + s + ")"
}

// Listen creates the named pipe path for the model, which only this user can open and no
// remote client can reach. A pipe of that name that already exists is an error: another
// Poppydesk of this user serving it, or another user's program holding the name.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	sid, err := userSID()
	if err != nil {
		return nil, err
	}
	return listenWith(ctx, path, securityDescriptor(sid))
}

// listenWith creates the named pipe path with the security descriptor sd (SDDL). A pipe of
// that name that answers is refused first: Windows refuses to create a pipe whose name exists
// (go-winio asks for FILE_CREATE), but Wine creates another instance of it.
func listenWith(ctx context.Context, path, sd string) (net.Listener, error) {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := Dial(dctx, path)
	var u *UntrustedError
	switch {
	case err == nil:
		c.Close()
		return nil, fmt.Errorf("another Poppydesk is already serving the model interface at %s (for the same home folder); close it first", path)
	case errors.As(err, &u):
		return nil, err
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: sd})
	if err != nil {
		return nil, fmt.Errorf("creating the named pipe %s failed: %w (another program may hold the name; sign out and in again to end it)", path, err)
	}
	if underWine() {
		// go-winio keeps a first instance of the pipe that serves no one and that Windows
		// keeps clients away from; Wine 8 gives the first client to it, where it would wait
		// forever. The listener takes that first connection itself.
		if c, err := winio.DialPipeContext(dctx, path); err == nil {
			c.Close()
		}
	}
	return ln, nil
}

// underWine reports whether this runs under Wine (whose ntdll exports wine_get_version).
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// Dial connects to the app's named pipe at path and checks that the pipe belongs to this user.
// An error wraps ErrNotRunning when no pipe of that name exists, and is an *UntrustedError when
// the pipe belongs to someone else.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	c, err := winio.DialPipeContext(ctx, path)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotRunning)
	}
	if err != nil {
		return nil, err
	}
	if err := checkOwner(c); err != nil {
		c.Close()
		return nil, &UntrustedError{Path: path, Why: err.Error()}
	}
	return c, nil
}

// checkOwner refuses a pipe whose owner is not this process's user.
func checkOwner(c net.Conn) error {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return errors.New("its owner cannot be read")
	}
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("its owner cannot be read: %v", err)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return fmt.Errorf("its owner cannot be read: %v", err)
	}
	me, err := userSID()
	if err != nil {
		return err
	}
	if !owner.Equals(me) {
		return fmt.Errorf("it belongs to %s, not to you (%s)", owner, me)
	}
	return nil
}
