package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// envCLIMain makes the test binary run as `poppydesk` itself: the command line is its
// arguments, so tests start real child processes (the MCP relay for real MCP clients, the
// operator, the reference Company) without building a binary first.
const envCLIMain = "POPPYDESK_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envCLIMain) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Run(ctx, os.Args[1:], Env{Version: "test", Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
