// Package poppytest holds the test helpers around the reference Company (agentcore/refcompany):
// Start serves one for a test and stops it at the test's end, Transport builds a client transport
// that trusts it, NewEngine builds an engine over it as the Host does (state database on disk,
// its identity published, Direct Sign-In approved at the Company), Claims reads a recorded JWS,
// AnswerConsent answers its consent page as a user's browser, NewServerTLS writes a loopback
// server's certificate from a CA of the test's own, BlockedIn waits for a goroutine to
// block, NeedGitHubDescription gives a test the large real API
// description or skips it (and NeedGraphSizedDescription one of Microsoft Graph v1.0's size made
// from it), and StartPostgres runs a throwaway PostgreSQL cluster. Only tests import it; the
// product links refcompany alone (the demo and `poppydesk company serve`).
package poppytest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TB is the part of testing.TB that the helpers use. *testing.T, *testing.B and *testing.F
// satisfy it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Start builds the reference Company with opts, serves it on loopback and stops it at the end of
// the test (t.Cleanup); a Company that cannot start fails the test. It is New and Start in one
// call, for tests.
func Start(t TB, opts refcompany.Options) *refcompany.Server {
	t.Helper()
	s, err := refcompany.New(opts)
	if err != nil {
		t.Fatalf("building the reference Company: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting the reference Company: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Claims decodes the claims of a compact JWS without verifying it, for tests that read what the
// Company recorded (a Poppy-Session header, a DPoP proof); a value that is not a compact JWS with
// a JSON payload fails the test.
func Claims(t TB, jws string) map[string]any {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", jws)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("the JWS payload is not base64url: %v", err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("the JWS payload is not a JSON object: %v", err)
	}
	return c
}

// BlockedIn polls, with a deadline, until a goroutine of this process waits in a select inside
// fn (as runtime stacks name it, e.g. "approvals.(*Queue).Wait"): the test then acts while the
// waiter is blocked, not before it started.
func BlockedIn(t TB, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, " [select") && strings.Contains(g, fn+"(") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine is blocked in %s", fn)
		}
	}
}

// Transport is a transport over s.ClientConfig, changed by edit when it is not nil, closed when
// the test ends; a transport that cannot be built fails the test.
func Transport(t TB, s *refcompany.Server, edit func(*transport.Config)) *transport.Transport {
	t.Helper()
	cfg := s.ClientConfig()
	if edit != nil {
		edit(&cfg)
	}
	tr, err := transport.New(cfg)
	if err != nil {
		t.Fatalf("building a transport to the reference Company: %v", err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// NeedGitHubDescription returns GitHubDescription for a test that needs it: when it is not
// installed the test is skipped, or fails under POPPYDESK_REQUIRE_E2E=1 (as CI runs).
func NeedGitHubDescription(tb interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}) []byte {
	tb.Helper()
	data, err := refcompany.GitHubDescription()
	if err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			tb.Fatal(err)
		}
		tb.Skip(err)
	}
	return data
}

// Buffer is a goroutine-safe buffer for logs a test reads while they are written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
