package poppytest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
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
