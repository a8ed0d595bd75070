package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
)

// TestSignInOutcome: every way a sign-in ends is said in plain words, with the state the
// window shows (the end-to-end test in e2e/signin_test.go drives the real flows).
func TestSignInOutcome(t *testing.T) {
	for _, tc := range []struct {
		err   error
		state string
		words string
	}{
		{fmt.Errorf("x: %w", oauth.ErrDeclined), FlowDeclined, "declined at Shop"},
		{oauth.ErrCancelled, FlowCancelled, "You cancelled"},
		{fmt.Errorf("%w: no answer", oauth.ErrTimedOut), FlowExpired, "did not finish in time"},
		{&oauth.Error{Step: "code exchange", Code: "invalid_client", Problem: "the Company did not accept Poppydesk's client assertion (spec 4.1)"}, FlowFailed, "client assertion"},
		{errors.New("boom"), FlowFailed, "existing sign-in, if any, is unchanged"},
		{nil, FlowFailed, "without an answer"},
	} {
		state, msg, _ := outcome("Shop", tc.err)
		if state != tc.state || !strings.Contains(msg, tc.words) {
			t.Errorf("outcome(%v) = %s %q, want %s containing %q", tc.err, state, msg, tc.state, tc.words)
		}
	}
}

// TestZeroServicesAnswer: the zero-value services (bound while Wails generates bindings, or
// when no engine is wired) answer with an error instead of panicking, and start nothing.
func TestZeroServicesAnswer(t *testing.T) {
	s, c := &SignIn{}, &Companies{}
	if _, err := s.StartDirect("https://auth.example", "", []string{"a"}, ""); !errors.Is(err, errNotConnected) {
		t.Errorf("StartDirect: %v", err)
	}
	if _, err := s.StartDevice("https://auth.example", "", []string{"a"}, ""); !errors.Is(err, errNotConnected) {
		t.Errorf("StartDevice: %v", err)
	}
	if _, err := s.Plan("x", "", ""); !errors.Is(err, errNotConnected) {
		t.Errorf("Plan: %v", err)
	}
	if r, err := s.Requests(); err != nil || len(r) != 0 {
		t.Errorf("Requests: %v %v", r, err)
	}
	if f := s.Current(); f.ID != "" {
		t.Errorf("Current: %+v", f)
	}
	if _, err := c.List(); !errors.Is(err, errNotConnected) {
		t.Errorf("List: %v", err)
	}
	if err := c.Forget("x"); !errors.Is(err, errNotConnected) {
		t.Errorf("Forget: %v", err)
	}
}

func TestQRDataURL(t *testing.T) {
	u, err := QRDataURL("https://auth.shop.localhost:8443/device?user_code=BCDF-GHJK")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, "data:image/png;base64,"))
	if err != nil || http.DetectContentType(raw) != "image/png" {
		t.Fatalf("not a PNG data URL: %.60s (%v)", u, err)
	}
	if _, err := QRDataURL(""); err == nil {
		t.Error("an empty link was encoded")
	}
}

// pngBytes is a 1×1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// TestLogoFetcher: only an HTTPS raster image whose bytes match its Content-Type becomes a
// data: URL; anything else leaves the placeholder.
func TestLogoFetcher(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/logo.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngBytes)
		case "/html.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("<!doctype html><title>x</title>"))
		case "/logo.svg":
			w.Header().Set("Content-Type", "image/svg+xml")
			w.Write([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><image href="https://evil.example/x.png"/></svg>`))
		case "/big.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(append(pngBytes, make([]byte, MaxLogoBytes)...))
		case "/redirect.png":
			http.Redirect(w, r, "/logo.png", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	l := NewLogoFetcher(client)
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/logo.png", true}, {"/html.png", false}, {"/logo.svg", false}, {"/big.png", false}, {"/redirect.png", false}, {"/missing.png", false},
	} {
		u, err := l.Fetch(context.Background(), srv.URL+tc.path)
		if tc.ok != (err == nil) || tc.ok != strings.HasPrefix(u, "data:image/png;base64,") {
			t.Errorf("%s: %.40q, %v", tc.path, u, err)
		}
	}
	if _, err := l.Fetch(context.Background(), strings.Replace(srv.URL, "https", "http", 1)+"/logo.png"); err == nil {
		t.Error("an http:// logo was fetched")
	}
}
