package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"

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
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: securityDescriptor(sid)})
	if err == nil {
		return ln, nil
	}
	c, derr := Dial(ctx, path)
	if derr == nil {
		c.Close()
		return nil, fmt.Errorf("another Poppydesk is already serving the model interface at %s (for the same home folder); close it first", path)
	}
	var u *UntrustedError
	if errors.As(derr, &u) {
		return nil, derr
	}
	return nil, fmt.Errorf("creating the named pipe %s failed: %w", path, err)
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
