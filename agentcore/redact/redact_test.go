package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const jwt = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"

func TestJSON(t *testing.T) {
	tests := []struct {
		name, in string
		secret   string
		keep     string
	}{
		{"token field", `{"access_token":"AT-123","token_type":"Bearer"}`, "AT-123", "Bearer"},
		{"nested", `{"a":{"refresh_token":"RT-9"},"b":[{"code":"C-1"}]}`, "RT-9", `"a"`},
		{"jwt anywhere", `{"note":"` + jwt + `"}`, jwt, "note"},
		{"private jwk", `{"kty":"EC","d":"PRIV","x":"PUBX"}`, "PRIV", "PUBX"},
		{"form body", "grant_type=refresh_token&refresh_token=RT-7&client_assertion=" + jwt, "RT-7", "grant_type"},
		{"plain text", "error " + jwt, jwt, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := string(JSON([]byte(tc.in)))
			if strings.Contains(out, tc.secret) {
				t.Fatalf("secret %q survived: %s", tc.secret, out)
			}
			if !strings.Contains(out, tc.keep) {
				t.Fatalf("non-secret %q lost: %s", tc.keep, out)
			}
		})
	}
}

func TestHeaderAndURL(t *testing.T) {
	h := http.Header{"Poppy-Session": {jwt}, "Authorization": {"Bearer AT"}, "Accept": {"application/json"}}
	out := Header(h)
	if out.Get("Poppy-Session") != Mask || out.Get("Authorization") != Mask || out.Get("Accept") != "application/json" {
		t.Fatalf("Header = %v", out)
	}
	if h.Get("Authorization") != "Bearer AT" {
		t.Fatal("Header modified its input")
	}
	u, _ := url.Parse("http://127.0.0.1:5555/callback?code=SECRETCODE&state=S1&iss=https%3A%2F%2Fauth.example")
	s := URL(u)
	if strings.Contains(s, "SECRETCODE") || strings.Contains(s, "S1") || !strings.Contains(s, "iss=") {
		t.Fatalf("URL = %s", s)
	}
}

func TestReplaceAttr(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: ReplaceAttr}))
	log.Debug("x", "refresh_token", "RT-LEAK", "note", "got "+jwt, "err", errors.New("bad "+jwt),
		"hdr", http.Header{"Cookie": {"sid=COOKIE"}}, "val", Secret("S-LEAK"))
	out := buf.String()
	for _, s := range []string{"RT-LEAK", jwt, "COOKIE", "S-LEAK"} {
		if strings.Contains(out, s) {
			t.Errorf("log contains %q: %s", s, out)
		}
	}
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"access_token":"x"}`))
	f.Add([]byte("a=b&code=c"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := JSON(b)
		if bytes.Contains(b, []byte(`"access_token":"SECRETX"`)) && bytes.Contains(out, []byte("SECRETX")) {
			t.Fatalf("leak: %s", out)
		}
	})
}

// TestTextAndReplaceAttrPairs: Text masks secret name=value and "name": "value" pairs and JWT
// shapes in free text, and ReplaceAttr applies it to string and error attributes (invariant 5).
func TestTextAndReplaceAttrPairs(t *testing.T) {
	tests := []struct {
		name, in string
		leak     string // must not appear in the output
		keep     string // must still appear
	}{
		{"query code", "https://shop.example/cb?code=AUTHCODE1&x=1", "AUTHCODE1", "x=1"},
		{"query state", "the page's address changed to https://shop.example/cb?state=ST4TE&code=C0DE9", "ST4TE", "the page's address changed to https://shop.example/cb?"},
		{"json pair", `token endpoint said {"access_token": "AT-LEAK", "token_type": "Bearer"}`, "AT-LEAK", "Bearer"},
		{"form pair", "refresh_token=RT-LEAK2 refused", "RT-LEAK2", "refused"},
		{"join code", "https://shop.example/poppy/browser-session?join_code=JC-LEAK", "JC-LEAK", "browser-session"},
		{"jwt", "bad " + jwt, jwt, "bad "},
		{"plain", "nothing secret here: orders=3", "", "nothing secret here: orders=3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.in)
			if (tc.leak != "" && strings.Contains(got, tc.leak)) || !strings.Contains(got, tc.keep) {
				t.Fatalf("Text(%q) = %q", tc.in, got)
			}
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
			log.Info("x", "s", tc.in, "err", errors.New(tc.in), "wrapped", fmt.Errorf("calling: %w", errors.New(tc.in)))
			if out := buf.String(); tc.leak != "" && strings.Contains(out, tc.leak) {
				t.Fatalf("log leaks %q: %s", tc.leak, out)
			}
		})
	}
}
