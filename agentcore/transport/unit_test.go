package transport_test

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func TestParseChallenges(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []transport.Challenge
		wantErr bool
	}{
		{"spec 7 example", []string{`Bearer error="insufficient_scope", scope="orders:read orders:write"`},
			[]transport.Challenge{{Scheme: "Bearer", Params: map[string]string{"error": "insufficient_scope", "scope": "orders:read orders:write"}}}, false},
		{"extension attribute", []string{`Bearer error="extension_required", extension="operations"`},
			[]transport.Challenge{{Scheme: "Bearer", Params: map[string]string{"error": "extension_required", "extension": "operations"}}}, false},
		{"two challenges, token values, BWS", []string{`DPoP algs="ES256", error = invalid_token ,Bearer realm="a,b", scope=x`},
			[]transport.Challenge{{Scheme: "DPoP", Params: map[string]string{"algs": "ES256", "error": "invalid_token"}}, {Scheme: "Bearer", Params: map[string]string{"realm": "a,b", "scope": "x"}}}, false},
		{"scheme only, then another", []string{`Negotiate, Bearer`},
			[]transport.Challenge{{Scheme: "Negotiate", Params: map[string]string{}}, {Scheme: "Bearer", Params: map[string]string{}}}, false},
		{"token68", []string{`Basic dXNlcjpwYXNz==, Bearer scope="a"`},
			[]transport.Challenge{{Scheme: "Basic", Token68: "dXNlcjpwYXNz==", Params: map[string]string{}}, {Scheme: "Bearer", Params: map[string]string{"scope": "a"}}}, false},
		{"escaped quote and case-insensitive names", []string{`Bearer ERROR_Description="say \"hi\"", Error="invalid_token"`},
			[]transport.Challenge{{Scheme: "Bearer", Params: map[string]string{"error_description": `say "hi"`, "error": "invalid_token"}}}, false},
		{"several header lines", []string{`Bearer scope="a"`, `DPoP algs="ES256"`},
			[]transport.Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "a"}}, {Scheme: "DPoP", Params: map[string]string{"algs": "ES256"}}}, false},
		{"empty list elements", []string{`, Bearer ,, scope="a",`},
			[]transport.Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "a"}}}, false},
		{"unterminated quote", []string{`Bearer error="x`}, []transport.Challenge{{Scheme: "Bearer", Params: map[string]string{}}}, true},
		{"repeated parameter", []string{`Bearer a=1, a=2`}, []transport.Challenge{{Scheme: "Bearer", Params: map[string]string{"a": "1"}}}, true},
		{"garbage", []string{`"quoted"`}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := transport.ParseChallenges(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{`Bearer error="insufficient_scope", scope="a b"`, `Basic abc==, Bearer`, `DPoP algs="ES256 PS256", error=invalid_token`, `Bearer x="\"", y=z`, `,`, `a b=`, `a b="\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, _ := transport.ParseChallenges([]string{s})
		for _, c := range cs {
			if c.Scheme == "" {
				t.Fatalf("empty scheme from %q", s)
			}
			for k := range c.Params {
				if k == "" {
					t.Fatalf("empty parameter name from %q", s)
				}
			}
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{"0", 0, true},
		{"Sun, 29 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sun, 29 Nov 2026 11:00:00 GMT", 0, true},
		{"-5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		d, ok := transport.ParseRetryAfter(tc.in, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

// TestCheckURLPathSegments: CheckURL (used for every Session request and Company URL) refuses
// dot-segments and encoded slashes with a *PathError naming the segment (invariant 6).
func TestCheckURLPathSegments(t *testing.T) {
	tests := []struct {
		url    string
		badSeg string // "" when the URL is accepted
	}{
		{"https://shop.example/api/orders", ""},
		{"https://shop.example/api/orders/", ""},
		{"https://shop.example/", ""},
		{"https://shop.example", ""},
		{"https://shop.example/api/a.b/..c/...", ""},
		{"https://shop.example/api/a%20b?x=../y", ""},
		{"https://shop.example/api/../oauth/token", ".."},
		{"https://shop.example/api/./oauth", "."},
		{"https://shop.example/api/%2e%2e/account", "%2e%2e"},
		{"https://shop.example/api/%2E%2e/account", "%2E%2e"},
		{"https://shop.example/api/.%2e", ".%2e"},
		{"https://shop.example/api/%2E/x", "%2E"},
		{"https://shop.example/api/..%2Faccount", "..%2Faccount"},
		{"https://shop.example/api/a%2fb", "a%2fb"},
		{"https://shop.example/api/a%5Cb", "a%5Cb"},
		{"https://shop.example/api/a%5cb", "a%5cb"},
	}
	for _, tc := range tests {
		u, err := transport.CheckURL(tc.url)
		if tc.badSeg == "" {
			if err != nil || u == nil {
				t.Errorf("CheckURL(%s) = %v, want accepted", tc.url, err)
			}
			continue
		}
		var pe *transport.PathError
		if !errors.As(err, &pe) || !errors.Is(err, transport.ErrAmbiguousPath) {
			t.Errorf("CheckURL(%s) = %v, want a *PathError", tc.url, err)
			continue
		}
		if pe.Segment != tc.badSeg || !strings.Contains(err.Error(), "dot-segment") {
			t.Errorf("CheckURL(%s): segment %q, error %q; want segment %q and a clear message", tc.url, pe.Segment, err, tc.badSeg)
		}
	}
}

func TestDestinations(t *testing.T) {
	var b transport.DestinationsBuilder
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Prefix("https://API.example.com/v1/"))
	must(b.Exclude("https://api.example.com/v1/openapi.json"))
	must(b.Exact("https://example.com/poppy/browser-session/authorize"))
	must(b.Exact("https://mcp.example.com:443/mcp"))
	if err := b.Prefix("http://example.com/"); err == nil {
		t.Fatal("http destination accepted")
	}
	d := b.Build()
	tests := []struct {
		url  string
		want bool
	}{
		{"https://api.example.com/v1", true},
		{"https://api.example.com/v1/orders?x=1", true},
		{"https://api.example.com/v1/openapi.json", false},
		{"https://api.example.com/v10", false},
		{"https://api.example.com/", false},
		{"http://api.example.com/v1/orders", false},
		{"https://user@api.example.com/v1/orders", false},
		{"https://api.example.com:8443/v1/orders", false},
		{"https://example.com/poppy/browser-session/authorize", true},
		{"https://example.com/poppy/browser-session", false},
		{"https://example.com/poppy/browser-session/authorize/x", false},
		{"https://mcp.example.com/mcp", true},
		{"https://mcp.example.com/mcp/", true},
		{"https://evil.example/v1/orders", false},
		// Dot-segments and encoded slashes (invariant 6): servers normalise them, so they
		// could reach a non-destination path; they are never destinations.
		{"https://api.example.com/v1/../oauth/token", false},
		{"https://api.example.com/v1/%2e%2e/account", false},
		{"https://api.example.com/v1/%2E%2e/account", false},
		{"https://api.example.com/v1/.%2E/account", false},
		{"https://api.example.com/v1/./orders", false},
		{"https://api.example.com/v1/%2e/orders", false},
		{"https://api.example.com/v1/orders/..", false},
		{"https://api.example.com/v1/..%2Faccount", false},
		{"https://api.example.com/v1/..%2faccount", false},
		{"https://api.example.com/v1/..%5Caccount", false},
		{"https://api.example.com/v1/x%5c..%5caccount", false},
		{"https://api.example.com/v1/orders/%zz", false},
		{"https://api.example.com/v1/orders/a.b", true},
		{"https://api.example.com/v1/orders/...", true},
		{"https://api.example.com/v1/orders/%2e%2e%2e", true},
	}
	for _, tc := range tests {
		u, _ := url.Parse(tc.url)
		if got := d.Allows(u); got != tc.want {
			t.Errorf("Allows(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}
}
