package poppytest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"runtime"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TB is the part of testing.TB that Start uses. *testing.T, *testing.B and *testing.F satisfy
// it. poppytest takes this interface rather than testing.TB because the product links poppytest
// for its demo (app/demo.go), and the testing package has no place in the product's binary; it
// is net/http/httptest's reason for taking no testing.TB, kept with a one-call fixture.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start builds the reference Company with opts, serves it on loopback and stops it at the end of
// the test (t.Cleanup); a Company that cannot start fails the test. It is New and Start in one
// call, for tests.
func Start(t TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
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
func (s *Server) Transport(t TB, edit func(*transport.Config)) *transport.Transport {
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
