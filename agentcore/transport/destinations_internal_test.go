package transport

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// allowsLinear is the reference the index must agree with: every entry compared in turn, as the
// definition of Destinations reads (exact, prefix on segment boundaries, template by segments).
func (d *Destinations) allowsLinear(u *url.URL) bool {
	if d == nil || u == nil || CheckPath(u) != nil || u.Scheme != "https" || u.User != nil || u.Opaque != "" {
		return false
	}
	o, p := originOf(u), cleanPath(u.EscapedPath())
	if p == "/.well-known" || strings.HasPrefix(p, "/.well-known/") || d.excluded[placeKey{o, p}] {
		return false
	}
	for i := range d.entries {
		e := &d.entries[i]
		if e.origin != o {
			continue
		}
		switch {
		case e.tmpl != nil:
			if matchTemplate(e.tmpl, cleanPath(u.Path)) {
				return true
			}
		case p == e.path:
			return true
		case e.prefix && strings.HasPrefix(p, e.path+"/"):
			return true
		}
	}
	return false
}

// matchTemplate reports whether the decoded path p has the template's segments.
func matchTemplate(tmpl [][]globTok, p string) bool {
	rest := strings.TrimPrefix(p, "/")
	for i, pat := range tmpl {
		seg := rest
		if i < len(tmpl)-1 {
			k := strings.IndexByte(rest, '/')
			if k < 0 {
				return false
			}
			seg, rest = rest[:k], rest[k+1:]
		} else if strings.IndexByte(rest, '/') >= 0 {
			return false
		}
		if !globMatch(pat, seg) {
			return false
		}
	}
	return true
}

// TestDestinationsIndex: the indexed lookup gives the answer of comparing every entry in turn,
// for exact URLs, prefixes, templates sharing literal segments and expressions, several
// origins, exclusions and /.well-known/ paths, on URLs that match, nearly match, or match on
// another origin.
func TestDestinationsIndex(t *testing.T) {
	var b DestinationsBuilder
	for _, e := range []struct{ kind, url string }{
		{"exact", "https://mcp.example/mcp"},
		{"exact", "https://api.example/v1/login/authorize"},
		{"prefix", "https://api.example/agent"},
		{"prefix", "https://api.example/ext/x/"},
		{"prefix", "https://root.example/"},
		{"template", "https://api.example/v1/orders"},
		{"template", "https://api.example/v1/orders/{id}"},
		{"template", "https://api.example/v1/orders/{id}/exchanges"},
		{"template", "https://api.example/v1/orders/{id}.json"},
		{"template", "https://api.example/v1/orders/by-{field}/{value}"},
		{"template", "https://api.example/v1/{kind}/count"},
		{"template", "https://api.example/v1/users/{id}/messages/{mid}"},
		{"template", "https://api.example/v1/users/me/messages"},
		{"template", "https://api.example/v1/a%20b/{x}"},
		{"template", "https://api.example:8443/v2/{x}"},
		{"template", "https://h.example/{a}/{b}"},
		{"template", "https://h.example/"},
	} {
		var err error
		switch e.kind {
		case "exact":
			err = b.Exact(e.url)
		case "prefix":
			err = b.Prefix(e.url)
		default:
			err = b.Template(e.url)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", e.kind, e.url, err)
		}
	}
	if err := b.Exclude("https://api.example/agent/openapi.json"); err != nil {
		t.Fatal(err)
	}
	d := b.Build()
	tests := []struct {
		url  string
		want bool
	}{
		{"https://mcp.example/mcp", true},
		{"https://mcp.example/mcp/", true},
		{"https://MCP.example:443/mcp?x=1", true},
		{"https://mcp.example/mcp/x", false},
		{"https://mcp.example/mc", false},
		{"https://api.example/v1/login/authorize", true},
		{"https://api.example/agent", true},
		{"https://api.example/agent/a/b/c", true},
		{"https://api.example/agentx", false},
		{"https://api.example/agent/openapi.json", false},
		{"https://api.example/ext/x/y", true},
		{"https://root.example/", true},
		{"https://root.example/x", false},
		{"https://api.example/v1/orders", true},
		{"https://api.example/v1/orders/42", true},
		{"https://api.example/v1/orders/42/", true},
		{"https://api.example/v1/orders/42/exchanges", true},
		{"https://api.example/v1/orders/42/exchanges/1", false},
		{"https://api.example/v1/orders/42.json", true},
		{"https://api.example/v1/orders/.json", true}, // "{id}.json" also matches "{id}" with id ".json"
		{"https://api.example/v1/orders/by-name/x", true},
		{"https://api.example/v1/orders/by-/x", false},
		{"https://api.example/v1/orders/count", true},
		{"https://api.example/v1/orders/x/count", false},
		{"https://api.example/v1/users/me/messages", true},
		{"https://api.example/v1/users/me/messages/7", true},
		{"https://api.example/v1/users/7/messages", false},
		{"https://api.example/v1/a%20b/1", true},
		{"https://api.example/v1/a b/1", true},
		{"https://api.example/v2/x", false},
		{"https://api.example:8443/v2/x", true},
		{"https://api.example:8443/v2/x/y", false},
		{"https://h.example/1/2", true},
		{"https://h.example/1", false},
		{"https://h.example/", true},
		{"https://h.example/.well-known/x/y", false},
		{"https://h.example/1/%2e%2e", false},
		{"http://api.example/v1/orders", false},
		{"https://other.example/v1/orders", false},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got, ref := d.Allows(u), d.allowsLinear(u); got != tc.want || ref != tc.want {
			t.Errorf("Allows(%s) = %v (every entry in turn: %v), want %v", tc.url, got, ref, tc.want)
		}
	}
	var zero Destinations
	if zero.Allows(&url.URL{Scheme: "https", Host: "api.example", Path: "/v1/orders"}) {
		t.Error("the zero Destinations allows a URL")
	}
}

// graphSized builds a Destinations the size of a big description's (Microsoft Graph v1.0 lists
// about 8,000 path templates on one origin), by resource, with expressions and literal segments
// mixed, and URLs to check against it: the last template's, one matching no template, and one
// below an exact entry.
func graphSized(tb testing.TB) (*Destinations, []*url.URL) {
	var b DestinationsBuilder
	n := 0
	for r := 0; n < 8000; r++ {
		res := fmt.Sprintf("resource%d", r)
		for _, tpl := range []string{"/%s", "/%s/{id}", "/%s/{id}/members", "/%s/{id}/members/{member-id}", "/%s/{id}/owners/{owner-id}/$ref",
			"/%s/delta()", "/%s/{id}/microsoft.graph.checkMemberGroups", "/%s(userPrincipalName='{upn}')", "/%s/{id}/photos/{size}/$value", "/%s/count"} {
			if err := b.Template("https://graph.example/v1.0" + fmt.Sprintf(tpl, res)); err != nil {
				tb.Fatal(err)
			}
			n++
		}
	}
	if err := b.Exact("https://graph.example/mcp"); err != nil {
		tb.Fatal(err)
	}
	d := b.Build()
	var us []*url.URL
	for _, raw := range []string{"https://graph.example/v1.0/resource799/42/photos/48x48/$value", "https://graph.example/v1.0/nothing/42", "https://graph.example/mcp"} {
		u, err := url.Parse(raw)
		if err != nil {
			tb.Fatal(err)
		}
		us = append(us, u)
	}
	return d, us
}

// TestDestinationsIndexGraphSized: on a Graph-sized set, the index answers as every entry in
// turn does.
func TestDestinationsIndexGraphSized(t *testing.T) {
	d, us := graphSized(t)
	for i, u := range us {
		if got, ref := d.Allows(u), d.allowsLinear(u); got != ref || got != (i != 1) {
			t.Errorf("Allows(%s) = %v, every entry in turn: %v", u, got, ref)
		}
	}
}

// BenchmarkDestinationsAllows measures the Session destinations check of a Graph-sized API
// (8,000 templates on one origin; a URL matching the last, one matching none, an exact one)
// against the baseline of comparing every entry in turn, in the same run.
func BenchmarkDestinationsAllows(b *testing.B) {
	d, us := graphSized(b)
	benchratio.RunCPU(b, "index", "every-entry", func(b *testing.B) {
		for _, u := range us {
			d.Allows(u)
		}
	}, func(b *testing.B) {
		for _, u := range us {
			d.allowsLinear(u)
		}
	})
}
