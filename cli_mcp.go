//go:build unix

package main

// The mcp subcommand: what MCP clients launch (`{"command": "poppydesk", "args": ["mcp"]}`). It
// relays the client's stdio to the running app's Unix socket (agentcore/modelapi), starting the
// app first when no socket answers. The app, not this process, holds the engine: this process
// never sees a key, token or approval. Windows named pipes are not implemented, so the
// subcommand exists only on Unix systems.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
)

// mcpStdin is the relay's input (the MCP client's requests); tests replace it.
var mcpStdin io.Reader = os.Stdin

// appCommand is the command that starts the app (the window): this executable with no
// arguments. Tests replace it.
var appCommand = func() (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("this program cannot find its own executable: %w", err)
	}
	return exec.Command(exe), nil
}

// defaultStartWait is how long `poppydesk mcp` waits for a started app's socket.
const defaultStartWait = 15 * time.Second

func init() {
	var (
		socket    string
		noStart   bool
		startWait time.Duration
	)
	register(&command{
		name:    "mcp",
		summary: "Serve Poppydesk's model interface (MCP) on stdio for an MCP client, relaying to the running app (started if needed).",
		usage:   "[--socket PATH] [--no-start] [--start-wait 15s]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&socket, "socket", "", "the app's model socket (default: $XDG_RUNTIME_DIR/poppydesk/mcp.sock, else under the data directory)")
			fs.BoolVar(&noStart, "no-start", false, "fail instead of starting the app when no socket answers")
			fs.DurationVar(&startWait, "start-wait", defaultStartWait, "how long to wait for a started app to listen")
		},
		run: func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			if len(args) > 0 {
				return usageError{fmt.Sprintf("takes no arguments, got %q", args)}
			}
			if socket == "" {
				p, err := defaultModelSocket()
				if err != nil {
					return err
				}
				socket = p
			}
			conn, err := modelapi.Dial(ctx, socket)
			if err != nil {
				if noStart {
					return fmt.Errorf("no Poppydesk app answers at %s (%v); start Poppydesk, or drop --no-start", socket, err)
				}
				if conn, err = startAppAndDial(ctx, socket, startWait); err != nil {
					return err
				}
			}
			return modelapi.Relay(ctx, conn, mcpStdin, stdout)
		},
	})
}

// defaultModelSocket is modelapi.SocketPath for this user.
func defaultModelSocket() (string, error) {
	env, err := app.OSEnv(runtime.GOOS)
	if err != nil {
		return "", err
	}
	paths, err := app.ResolvePaths(env)
	if err != nil {
		return "", err
	}
	return modelapi.SocketPath(os.Getenv, paths.Data), nil
}

// startAppAndDial starts `poppydesk` (the window) detached from this process and waits up to
// wait for its socket. If the app exits first (no display, no desktop build), its own error is
// reported.
func startAppAndDial(ctx context.Context, socket string, wait time.Duration) (net.Conn, error) {
	cmd, err := appCommand()
	if err != nil {
		return nil, fmt.Errorf("no Poppydesk app answers at %s, and starting it failed: %w", socket, err)
	}
	errFile, err := os.CreateTemp("", "poppydesk-start-*.log")
	if err != nil {
		return nil, fmt.Errorf("no Poppydesk app answers at %s, and starting it failed: %w", socket, err)
	}
	defer os.Remove(errFile.Name())
	defer errFile.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devNull.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, errFile, errFile
	// A new session: the app outlives this relay (and the MCP client that launched it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("no Poppydesk app answers at %s, and starting %s failed: %w", socket, cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := modelapi.Dial(ctx, socket); err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			out, _ := os.ReadFile(errFile.Name())
			why := strings.TrimSpace(string(lastLines(out, 5)))
			if why == "" && err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("Poppydesk was not running, and starting it failed: %s. Start the Poppydesk window yourself (it needs a desktop session), then run the MCP client again", orDefault(why, "the app exited at once"))
		case <-deadline.C:
			return nil, fmt.Errorf("Poppydesk was started but did not open its model socket %s within %s; check its log, or start the window yourself", socket, wait)
		case <-tick.C:
		}
	}
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte(" "))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
