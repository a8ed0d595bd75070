package cli

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestMCPFindsTheAppFromAnyEnvironment: `poppydesk mcp` without --socket, started with nothing
// but the home folder in its environment (what the official MCP SDKs pass on of it), reaches the
// app that serves the default endpoint for a desktop session's environment: a Unix socket, or on
// Windows the named pipe that only this user may open. An SDK client then calls a tool at the
// reference Company through it.
func TestMCPFindsTheAppFromAnyEnvironment(t *testing.T) {
	home := t.TempDir()
	session := testEnv(home) // the desktop session the app was started in
	endpoint, err := session.modelEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Socket = endpoint }})
	if runtime.GOOS == "windows" && !strings.HasPrefix(f.Host.Socket(), `\\.\pipe\poppydesk-mcp-S-1-5-`) {
		t.Fatalf("the app serves %q, not a named pipe of this user", f.Host.Socket())
	}
	homeVar := "HOME"
	if runtime.GOOS == "windows" {
		homeVar = "USERPROFILE"
	}
	scrubbed := Env{Version: "test", Getenv: func(k string) string {
		if k == homeVar {
			return home
		}
		return ""
	}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	scrubbed.Stdin, scrubbed.Stdout, scrubbed.Stderr = inR, outW, stderr
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), []string{"mcp", "--no-start"}, scrubbed)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "scrubbed-environment", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("%v; poppydesk mcp said: %s", err, stderr)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 21 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: modelapi.ToolDiscoverCompany, Arguments: map[string]any{"domain": f.Company.Domain}})
	if err != nil || res.IsError {
		t.Fatalf("discover_company: %v %+v", err, res)
	}
	cs.Close()
	if code := <-done; code != 0 {
		t.Fatalf("poppydesk mcp exited %d: %s", code, stderr)
	}
	t.Logf("poppydesk mcp reached %s with only $%s=%s", f.Host.Socket(), homeVar, home)
}
