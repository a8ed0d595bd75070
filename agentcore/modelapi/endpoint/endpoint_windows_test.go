package endpoint

// The named pipe on Windows. These tests also run under Wine 8 (the CI's Windows test run):
// Wine stores and returns a pipe's security descriptor and its owner, so the descriptor and
// the relay's owner check are tested there; it does not enforce a pipe's DACL when the pipe is
// opened, so TestPipeDACLIsEnforced runs only on Windows itself and says so under Wine.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

var pipeSeq atomic.Int64

func testPipe() string {
	return fmt.Sprintf(`\\.\pipe\poppydesk-endpoint-test-%d-%d`, os.Getpid(), pipeSeq.Add(1))
}

// serve accepts and closes connections until ln closes.
func serve(ln net.Listener) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// securityInfo reads the owner and DACL of the pipe at path through a client handle.
func securityInfo(t *testing.T, path string) *windows.SECURITY_DESCRIPTOR {
	t.Helper()
	c, err := winio.DialPipeContext(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sd, err := windows.GetSecurityInfo(windows.Handle(c.(interface{ Fd() uintptr }).Fd()), windows.SE_KERNEL_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

// TestDefaultPipe: the default endpoint is a pipe named after the user's SID and the home
// folder, whatever the environment.
func TestDefaultPipe(t *testing.T) {
	sid, err := userSID()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", `C:\elsewhere`)
	got, err := Default(`C:\Users\ann`)
	want := `\\.\pipe\poppydesk-mcp-` + sid.String() + "-" + homeKey(`C:\Users\ann`)
	if err != nil || got != want {
		t.Fatalf("Default: %q %v, want %q", got, err, want)
	}
	if h, err := Home(func(k string) string { return map[string]string{"USERPROFILE": `C:\Users\ann\`}[k] }); err != nil || h != `C:\Users\ann` {
		t.Fatalf("Home: %q %v", h, err)
	}
}

// TestPipeSecurityDescriptor: the pipe is owned by the user and its protected DACL denies
// network logons and allows the user, and no one else; Dial reaches it.
func TestPipeSecurityDescriptor(t *testing.T) {
	path := testPipe()
	ln, err := Listen(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serve(ln)
	sid, _ := userSID()
	sd := securityInfo(t, path)
	want := "O:" + sid.String() + "D:P(D;;GA;;;NU)(A;;GA;;;" + sid.String() + ")"
	if sd.String() != want {
		t.Fatalf("the pipe's security descriptor is %s, want %s", sd, want)
	}
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Listen(context.Background(), path); err == nil || !strings.Contains(err.Error(), "another Poppydesk is already serving") {
		t.Fatalf("a second Listen: %v", err)
	}
	ln.Close()
	if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestDialRefusesAPipeOfAnotherOwner: a pipe owned by someone else (here SYSTEM) is refused
// before anything is sent, and Listen refuses to serve beside it.
func TestDialRefusesAPipeOfAnotherOwner(t *testing.T) {
	path := testPipe()
	ln, err := listenWith(context.Background(), path, "O:SYD:P(A;;GA;;;WD)")
	if err != nil {
		t.Skipf("this user may not make a pipe owned by SYSTEM (%v); the owner check needs an administrator's token to be tested", err)
	}
	defer ln.Close()
	serve(ln)
	_, err = Dial(context.Background(), path)
	var u *UntrustedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "it belongs to S-1-5-18, not to you") {
		t.Fatalf("Dial of a pipe owned by SYSTEM: %v", err)
	}
	if _, err := Listen(context.Background(), path); !errors.As(err, &u) {
		t.Fatalf("Listen beside a pipe owned by SYSTEM: %v", err)
	}
}

// TestPipeDACLIsEnforced: a client the DACL does not allow cannot open the pipe. A pipe that
// denies this very user stands in for "another user" (one process cannot be two users here).
func TestPipeDACLIsEnforced(t *testing.T) {
	path := testPipe()
	sid, _ := userSID()
	ln, err := listenWith(context.Background(), path, "O:"+sid.String()+"D:P(D;;GA;;;"+sid.String()+")")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serve(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := winio.DialPipeContext(ctx, path)
	if err == nil {
		c.Close()
		if underWine() {
			t.Skip("Wine 8 stores a pipe's DACL but does not check it when the pipe is opened (measured: a pipe whose DACL denies this user opened); this runs on Windows itself")
		}
		t.Fatal("a pipe whose DACL denies this user opened")
	}
	if !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		t.Fatalf("opening a pipe whose DACL denies this user: %v, want access denied", err)
	}
}

// TestRemoteClientsAreRejected: the pipe reached over the network (SMB, as another machine
// would) refuses the client: go-winio creates it with PIPE_REJECT_REMOTE_CLIENTS, and its DACL
// denies network logons.
func TestRemoteClientsAreRejected(t *testing.T) {
	path := testPipe()
	ln, err := Listen(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serve(ln)
	remote := `\\127.0.0.1\pipe\` + strings.TrimPrefix(path, `\\.\pipe\`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := winio.DialPipeContext(ctx, remote)
	switch {
	case err == nil:
		c.Close()
		t.Fatalf("%s opened over the network", remote)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED), errors.Is(err, windows.ERROR_PIPE_NOT_CONNECTED):
	case underWine():
		t.Skipf("Wine 8 has no network redirector for named pipes (opening %s says %v), so remote clients cannot be tried", remote, err)
	default:
		t.Skipf("opening %s over the network says %v: this machine's SMB server does not serve it, so remote clients cannot be tried", remote, err)
	}
}
