//go:build unix

package cli

// `poppydesk mcp` is what MCP clients launch (`{"command": "/usr/bin/poppydesk", "args": ["mcp"]}`).
// It relays the client's stdio to the running app's Unix socket (agentcore/modelapi), starting the
// app first when no socket answers. The app, not this process, holds the engine: this process
// never sees a key, token or approval. Windows named pipes are not implemented, so on other
// systems the command says so (mcp_other.go). `poppydesk mcp setup CLIENT` writes that entry
// into an MCP client's configuration (mcp_setup.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// defaultStartWait is how long `poppydesk mcp` waits for a started app's socket.
const defaultStartWait = 15 * time.Second

func mcpCommand() command {
	return command{name: "mcp", summary: "Serve Poppydesk's model interface (MCP) on stdio for an MCP client, relaying to the running app (started if needed); `mcp setup CLIENT` adds Poppydesk to a client's configuration.",
		usage: "[--socket PATH] [--no-start] [--start-wait DURATION]\n" +
			"       poppydesk mcp setup CLIENT [--yes] [--command PATH] [--config FILE]   (CLIENT: " + mcpClientNames() + ")\n" +
			"       poppydesk mcp setup --list",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			socket := fs.String("socket", "", "the app's model socket `path` (default: $XDG_RUNTIME_DIR/poppydesk/mcp.sock, else under the data folder)")
			noStart := fs.Bool("no-start", false, "fail instead of starting the app when no socket answers")
			startWait := fs.Duration("start-wait", defaultStartWait, "how long to wait for a started app to listen, a `time` such as 15s")
			var setup mcpSetupOptions
			fs.BoolVar(&setup.yes, "yes", false, "setup: write the change without asking")
			fs.BoolVar(&setup.list, "list", false, "setup: list the clients and their configuration files on each system")
			fs.StringVar(&setup.command, "command", "", "setup: the absolute `path` of the poppydesk program the client starts (default: this program)")
			fs.StringVar(&setup.config, "config", "", "setup: change this `file` instead of the client's default one (same format)")
			return func(ctx context.Context, args []string) error {
				relayFlags := map[string]bool{"socket": true, "no-start": true, "start-wait": true}
				isSetup := len(args) > 0 && args[0] == "setup"
				var misplaced error
				fs.Visit(func(f *flag.Flag) {
					if misplaced == nil && relayFlags[f.Name] == isSetup {
						if isSetup {
							misplaced = usageError{fmt.Sprintf("--%s is not a flag of `poppydesk mcp setup`", f.Name)}
						} else {
							misplaced = usageError{fmt.Sprintf("--%s goes with `poppydesk mcp setup`", f.Name)}
						}
					}
				})
				if misplaced != nil {
					return misplaced
				}
				if isSetup {
					return runMCPSetup(ctx, env, setup, args[1:])
				}
				if len(args) > 0 {
					return usageError{fmt.Sprintf("unexpected argument %q; the only mcp subcommand is `setup`", args[0])}
				}
				path := *socket
				if path == "" {
					paths, err := env.Paths()
					if err != nil {
						return err
					}
					path = modelapi.SocketPath(env.Getenv, paths.Data)
				}
				conn, err := modelapi.Dial(ctx, path)
				if err != nil {
					if *noStart {
						err = fmt.Errorf("no Poppydesk app answers at %s (%v); start Poppydesk, or drop --no-start", path, err)
					} else {
						conn, err = startAppAndDial(ctx, env, path, *startWait)
					}
					if err != nil {
						// The MCP client shows this answer to its initialize instead of a bare
						// "connection closed".
						answerFirstRequest(env.Stdin, env.Stdout, err)
						return err
					}
				}
				return modelapi.Relay(ctx, conn, env.Stdin, env.Stdout)
			}
		}}
}

// startAppAndDial starts `poppydesk` (the window) detached from this process and waits up to
// wait for its socket. If the app exits first (no display, no desktop build), its own error is
// reported.
func startAppAndDial(ctx context.Context, env *Env, socket string, wait time.Duration) (net.Conn, error) {
	exe, err := env.executable()
	if err != nil {
		return nil, fmt.Errorf("no Poppydesk app answers at %s, and starting it failed: %w", socket, err)
	}
	cmd := exec.Command(exe)
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
			if why == "" {
				why = "the app exited at once"
			}
			return nil, fmt.Errorf("Poppydesk was not running, and starting it failed: %s. Start the Poppydesk window yourself (it needs a desktop session), then run the MCP client again", why)
		case <-deadline.C:
			return nil, fmt.Errorf("Poppydesk was started but did not open its model socket %s within %s; check its log, or start the window yourself", socket, wait)
		case <-tick.C:
		}
	}
}

// CodeNotRunning is the JSON-RPC error code of `poppydesk mcp`'s answer when no app can serve
// the client: -32000, the first of the implementation-defined server errors (JSON-RPC 2.0 §5.1).
const CodeNotRunning = -32000

// answerFirstRequest reads the client's first message (its initialize) from in and answers it on
// out with a JSON-RPC error that says why and what to do. A first message that is not a request
// (no id) gets no answer; the process exits non-zero either way.
func answerFirstRequest(in io.Reader, out io.Writer, why error) {
	line, err := bufio.NewReader(io.LimitReader(in, modelapi.MaxArgumentBytes+64<<10)).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 || string(req.ID) == "null" {
		return
	}
	msg := "Poppydesk's model interface is not available: " + why.Error()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
		"error": map[string]any{"code": CodeNotRunning, "message": msg}})
	out.Write(append(b, '\n'))
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte(" "))
}
