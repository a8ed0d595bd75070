package csp

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The meta tag in frontend/index.html must carry the same policy as the headers, minus
// frame-ancestors, which browsers ignore in a meta tag.
func TestMetaTagMatchesPolicy(t *testing.T) {
	b, err := os.ReadFile("../../frontend/index.html")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)http-equiv="Content-Security-Policy"\s+content="([^"]*)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("frontend/index.html has no Content-Security-Policy meta tag")
	}
	want := strings.Replace(Policy, "; frame-ancestors 'none'", "", 1)
	if string(m[1]) != want {
		t.Fatalf("meta CSP = %q\nwant       %q", m[1], want)
	}
}

func TestMiddlewareSetsHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html></html>"))
	})).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	h := rec.Result().Header
	for k, want := range map[string]string{
		"Content-Security-Policy": Policy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for _, banned := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:"} {
		if strings.Contains(Policy, banned) {
			t.Errorf("the policy allows %s", banned)
		}
	}
}
