package discovery_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

const minimal = `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"},"web":{}}`

func TestParseDocument(t *testing.T) {
	tests := []struct {
		name, body string
		check      string // "" = valid
	}{
		{"minimal", minimal, ""},
		{"unknown fields ignored", `{"protocol_version":"0.4","future":{"x":1},"organization":{"name":"Ex","domain":"example.com","x":2},"web":{"y":3}}`, ""},
		{"not JSON", `{`, discovery.CheckParse},
		{"trailing data", minimal + `{}`, discovery.CheckParse},
		{"no protocol_version", `{"organization":{"name":"Ex","domain":"example.com"},"web":{}}`, discovery.CheckParse},
		{"bad protocol_version", `{"protocol_version":"v4","organization":{"name":"Ex","domain":"example.com"},"web":{}}`, discovery.CheckParse},
		{"no organization.domain", `{"protocol_version":"0.4","organization":{"name":"Ex"},"web":{}}`, discovery.CheckParse},
		{"no channel", `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"}}`, discovery.CheckParse},
		{"http API", `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"},"apis":[{"type":"mcp","url":"http://mcp.example.com/mcp"}]}`, discovery.CheckHTTPS},
		{"http logo", `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com","logo_uri":"http://example.com/l.png"},"web":{}}`, discovery.CheckHTTPS},
		{"http extension endpoint", `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"},"web":{},"extensions":{"x.example/y":[{"version":"1","endpoint":"http://x.example/y"}]}}`, discovery.CheckHTTPS},
		{"http supported version", `{"protocol_version":"0.4","supported_versions":{"0.3":"http://example.com/0.3.json"},"organization":{"name":"Ex","domain":"example.com"},"web":{}}`, discovery.CheckHTTPS},
		{"javascript browser endpoint", `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"},"web":{"browser_session_endpoint":"javascript:alert(1)"}}`, discovery.CheckHTTPS},
		{"malformed extension entries ignored", `{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"},"web":{},"extensions":{"a":"x","b":[1,{"version":2},{"version":"1"}]}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := discovery.ParseDocument([]byte(tc.body))
			if tc.check == "" {
				if err != nil {
					t.Fatal(err)
				}
				if d.Organization.Domain != "example.com" {
					t.Fatalf("doc = %+v", d)
				}
				return
			}
			ce, ok := discovery.AsCheckError(err)
			if !ok || ce.Check != tc.check || !strings.Contains(err.Error(), "spec") {
				t.Fatalf("err = %v, want check %q", err, tc.check)
			}
		})
	}
	d, _ := discovery.ParseDocument([]byte(`{"protocol_version":"0.4","organization":{"name":"Ex","domain":"example.com"},"web":{},"extensions":{"a":"x","b":[1,{"version":2},{"version":"1","n":5}]}}`))
	if len(d.Extensions) != 1 || len(d.Extensions["b"]) != 1 || string(d.Extensions["b"][0].Fields["n"]) != "5" {
		t.Fatalf("extensions = %+v", d.Extensions)
	}
}

func TestCompatible(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"0.4", "0.4", true}, {"0.4", "0.3", false}, {"0.5", "0.4", false},
		{"1.0", "1.3", true}, {"2.0", "1.0", false}, {"0.4", "x", false}, {"0.04", "0.4", true},
	}
	for _, tc := range tests {
		if got := discovery.Compatible(tc.a, tc.b); got != tc.want {
			t.Errorf("Compatible(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

func TestASMetadataURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://auth.example.com", "https://auth.example.com/.well-known/oauth-authorization-server"},
		{"https://auth.example.com/", "https://auth.example.com/.well-known/oauth-authorization-server"},
		{"https://auth.provider.example/shop-a", "https://auth.provider.example/.well-known/oauth-authorization-server/shop-a"},
		{"https://auth.shop.localhost:8443", "https://auth.shop.localhost:8443/.well-known/oauth-authorization-server"},
	}
	for _, tc := range tests {
		got, err := discovery.ASMetadataURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ASMetadataURL(%s) = %s, %v", tc.in, got, err)
		}
	}
	for _, bad := range []string{"http://a.example", "https://a.example?x=1", "https://a.example#f"} {
		if _, err := discovery.ASMetadataURL(bad); err == nil {
			t.Errorf("ASMetadataURL(%s) accepted", bad)
		}
	}
}

func FuzzParseDocument(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(`{"protocol_version":"0.4","supported_versions":{"0.3":"https://e.com/a"},"organization":{"name":"E","domain":"e.com"},"apis":[{"type":"mcp","url":"https://e.com/mcp"}],"extensions":{"operations":[{"version":"2"}]},"auth":{"scope_hints":{"a":{"changes":"weird"}}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"protocol_version":"0.4","organization":{"name":"E","domain":"e.com"},"apis":[{"type":"mcp","url":"http://e.com/mcp"}]}`))
	f.Add([]byte(`{"protocol_version":"0.4","organization":{"name":"E","domain":"e.com"},"apis":[{"type":"mcp","url":"HTTPS://e.com/mcp"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := discovery.ParseDocument(body)
		if err != nil {
			if _, ok := discovery.AsCheckError(err); !ok {
				t.Fatalf("error is not a *CheckError: %v", err)
			}
			return
		}
		if d.Organization.Domain == "" || d.ProtocolVersion == "" {
			t.Fatalf("accepted a document without required fields: %s", body)
		}
		for _, a := range d.APIs {
			// A scheme is case-insensitive (RFC 3986 3.1): "HTTPS://" is HTTPS.
			if u, err := url.Parse(a.URL); err != nil || u.Scheme != "https" || u.Host == "" {
				t.Fatalf("accepted a non-HTTPS API URL %q", a.URL)
			}
		}
	})
}
