package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
)

// locate is the app's endpoint: Options.Endpoint, or the default one for the home folder.
func (r *relay) locate() (string, error) {
	if r.o.Endpoint != "" {
		return r.o.Endpoint, nil
	}
	home := r.o.Home
	if home == "" {
		h, err := endpoint.Home(r.o.Getenv)
		if err != nil {
			return "", fmt.Errorf("Poppydesk's model interface cannot be found: %v. Set HOME in the \"env\" of this server's entry in the MCP client's configuration, or pass --socket", err)
		}
		home = h
	}
	p, err := endpoint.Default(home)
	if err != nil {
		return "", fmt.Errorf("Poppydesk's model interface cannot be found: %v", err)
	}
	return p, nil
}

// dialWait bounds one attempt to connect.
const dialWait = 5 * time.Second

func dial(ctx context.Context, path string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialWait)
	defer cancel()
	return endpoint.Dial(ctx, path)
}

// reach connects to the app at path, starting it when nothing answers there.
func (r *relay) reach(ctx context.Context, path string) (net.Conn, error) {
	c, err := dial(ctx, path)
	switch {
	case err == nil:
		return c, nil
	case !errors.Is(err, endpoint.ErrNotRunning):
		return nil, err
	case r.o.NoStart || r.o.App == "":
		return nil, fmt.Errorf("Poppydesk is not running: nothing answers at %s. Start Poppydesk from your desktop's menu, then try again (this relay does not start it: --no-start)", path)
	}
	return r.start(ctx, path)
}

// start starts the app (its window) detached from the relay, so that it outlives the relay and
// the client, and waits up to StartWait for its model interface at path.
func (r *relay) start(ctx context.Context, path string) (net.Conn, error) {
	if err := canShowWindow(r.o.Getenv); err != nil {
		return nil, err
	}
	out, err := os.CreateTemp("", "poppydesk-start-*.log")
	if err != nil {
		return nil, fmt.Errorf("Poppydesk is not running, and starting it failed: a file for its output could not be made (%v). Start Poppydesk from your desktop's menu, then try again", err)
	}
	defer out.Close()
	cmd := exec.Command(r.o.App)
	cmd.Stdout, cmd.Stderr = out, out
	detach(cmd)
	if err := cmd.Start(); err != nil {
		os.Remove(out.Name())
		return nil, fmt.Errorf("Poppydesk is not running, and starting %s failed: %v. Start Poppydesk from your desktop's menu (reinstall it if it is missing), then try again", r.o.App, err)
	}
	r.say("nothing answers at %s; started %s (process %d) and waiting for it", path, r.o.App, cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(r.o.StartWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := dial(ctx, path); err == nil {
			os.Remove(out.Name()) // the app logs to its own file from here on
			return c, nil
		} else if !errors.Is(err, endpoint.ErrNotRunning) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			return nil, startFailed(r.o.App, path, out.Name(), err)
		case <-deadline.C:
			return nil, fmt.Errorf("Poppydesk was started (%s, process %d) but did not open its model interface at %s within %s; it may still be starting, or be waiting for you (a locked keyring asks for its password). Look at Poppydesk's window, then try again", r.o.App, cmd.Process.Pid, path, r.o.StartWait)
		case <-tick.C:
		}
	}
}

// startFailed words the end of an app that exited before it served path.
func startFailed(app, path, outFile string, exitErr error) error {
	var ee *exec.ExitError
	if exitErr == nil || errors.As(exitErr, &ee) && ee.ExitCode() == 0 {
		os.Remove(outFile)
		// A window already running in the session took the launch over (and came to the
		// front), but it does not serve the endpoint this relay looks at.
		return fmt.Errorf("A Poppydesk window is already running, but its model interface does not answer at %s: that window was started with another home folder, or its model interface could not start (its Inspector says why). Close Poppydesk, start it again from your desktop's menu, then try again", path)
	}
	b, _ := os.ReadFile(outFile)
	return fmt.Errorf("Poppydesk is not running, and the copy started here (%s) stopped at once (%v) before it opened its model interface: %s. Its output is in %s. Start Poppydesk from your desktop's menu to see what is wrong", app, exitErr, summary(b), outFile)
}

// summary is the line of a failed start's output that says why: the command line's own error
// ("poppydesk window: …"), else a Go panic's or fatal error's first line (never the stack
// trace below it), else the last line.
func summary(out []byte) string {
	lines := strings.Split(string(bytes.TrimSpace(out[:min(len(out), 64<<10)])), "\n")
	pick := func(ok func(string) bool) string {
		for _, l := range lines {
			if l = strings.TrimSpace(l); ok(l) {
				return l
			}
		}
		return ""
	}
	s := pick(func(l string) bool { return strings.HasPrefix(l, "poppydesk") && strings.Contains(l, ": ") })
	if s == "" {
		s = pick(func(l string) bool { return strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") })
	}
	if s == "" {
		s = strings.TrimSpace(lines[len(lines)-1])
	}
	if s == "" {
		return "it printed nothing"
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return "it said " + fmt.Sprintf("%q", s)
}
