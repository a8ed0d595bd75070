package app

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
			w.Write(append(pngBytes, make([]byte, maxLogoBytes)...))
		case "/redirect.png":
			http.Redirect(w, r, "/logo.png", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	l := newLogoFetcher(client)
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
