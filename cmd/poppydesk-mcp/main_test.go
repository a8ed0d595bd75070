package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// build builds the package pkg (relative to this folder) into dir/name: as the Makefile builds
// poppydesk-mcp (without cgo, so that the program loads no shared library, and stripped) when
// release is set, else as a plain `go build`.
func build(b testing.TB, dir, name, pkg string, release bool) string {
	b.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	if release {
		cmd = exec.Command(goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// session spawns command as a stdio MCP server, initializes a session with it (the client's
// initialize, the server's answer, notifications/initialized) and closes it: what every MCP
// client does when it starts.
func session(b *testing.B, command ...string) func(*testing.B) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	return func(b *testing.B) {
		cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(command[0], command[1:]...)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs.Close()
	}
}

// BenchmarkClientStart: an MCP client's start of Poppydesk's server with the app running (spawn,
// initialize through the relay to the app, close) against the same for a bare stdio server on
// the same MCP library. Rows: poppydesk-mcp, the program `poppydesk mcp setup` writes into
// clients' configurations; `poppydesk mcp` of this module built without the window; and, when
// POPPYDESK_BENCH_BINARY names one (e.g. the release build build/bin/poppydesk, which loads GTK
// and WebKit), `BINARY mcp`.
func BenchmarkClientStart(b *testing.B) {
	f := apptest.Start(b, apptest.Options{Socket: true})
	dir := b.TempDir()
	relay := build(b, dir, "poppydesk-mcp", ".", true)
	bare := build(b, dir, "bareserver", "./testdata/bareserver", true)
	socket := f.Host.Socket()
	benchratio.Run(b, "poppydesk-mcp", "bare go-sdk stdio server", session(b, relay, "--socket", socket, "--no-start"), session(b, bare))
	poppydesk := build(b, dir, "poppydesk", "../..", false)
	benchratio.Run(b, "poppydesk mcp (no window)", "bare go-sdk stdio server", session(b, poppydesk, "mcp", "--socket", socket, "--no-start"), session(b, bare))
	if bin := os.Getenv("POPPYDESK_BENCH_BINARY"); bin != "" {
		name := strings.ReplaceAll(filepath.Base(bin), " ", "_") + " mcp"
		benchratio.Run(b, name, "bare go-sdk stdio server", session(b, bin, "mcp", "--socket", socket, "--no-start"), session(b, bare))
	}
}
