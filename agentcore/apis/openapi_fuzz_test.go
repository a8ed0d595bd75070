package apis_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// FuzzOpenAPIDestinations: a Company's OpenAPI description (spec 7) defines where the Session
// JWT may go (spec 5.2). The destinations are built as discovery builds them (the request URLs
// the description describes, as templates; the description itself excluded), and every
// operation the engine offers must stay inside them. Oracles, each one a wrong implementation
// would break:
//   - an available operation's server is HTTPS and its URL is a destination;
//   - a request NewRequest builds for it, with any path parameter value, passes the transport's
//     URL check, is a destination, is not the description or a /.well-known/ document, has the
//     template's number of path segments (an expression never spans a "/"), and carries its
//     query only after the path;
//   - a destination is never under /.well-known/, nor the description document.
func FuzzOpenAPIDestinations(f *testing.F) {
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"/v1"}],"paths":{"/orders/{id}":{"get":{"operationId":"getOrder","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},"/files/{name}.json":{"get":{"operationId":"file","parameters":[{"name":"name","in":"path","required":true}],"responses":{"200":{"description":"ok"}}}}}}`), "ord_7Hk2")
	f.Add([]byte(`{"openapi":"3.0.3","info":{"title":"T","version":"1"},"paths":{"/.well-known/poppy.json":{"get":{"operationId":"w","responses":{"200":{"description":"ok"}}}},"/openapi.json":{"get":{"operationId":"d","responses":{"200":{"description":"ok"}}}},"/{a}/{b}":{"get":{"operationId":"ab","parameters":[{"name":"a","in":"path","required":true},{"name":"b","in":"path","required":true}],"responses":{"200":{"description":"ok"}}}}}}`), "..")
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"https://other.example/{base}","variables":{"base":{"default":"v2"}}}],"paths":{"/x":{"post":{"operationId":"x","servers":[{"url":"https://auth.example"}],"responses":{"200":{"description":"ok"}}}}}}`), "a/b")
	f.Add([]byte(`openapi: 3.0.3
info: {title: T, version: "1"}
paths:
  /things/{id}:
    get:
      operationId: t
      parameters: [{name: id, in: path, required: true}]
      responses: {"200": {description: ok}}`), "%2e%2e")
	// A field of the wrong type outside the servers: discovery and apis read descriptions with
	// the same decoder, so both refuse it.
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":5,"version":"1"},"paths":{"/a":{"get":{"operationId":"a","summary":7,"responses":{"200":{"description":"ok"}}}}}}`), "a")
	const descURL = "https://api.example/openapi.json"
	base, _ := url.Parse(descURL)
	f.Fuzz(func(t *testing.T, data []byte, value string) {
		ctx := context.Background()
		doc, err := discovery.LoadOpenAPI(ctx, data)
		if err != nil {
			return
		}
		var b transport.DestinationsBuilder
		templates := map[string]bool{}
		for _, u := range discovery.OpenAPIRequestURLs(base, doc) {
			if b.Template(u) == nil {
				templates[u] = true
			}
		}
		b.Exclude(descURL)
		dest := b.Build()
		d, err := apis.ParseOpenAPI(ctx, descURL, data, dest)
		if err != nil {
			t.Fatalf("discovery read the description but apis did not: %v", err)
		}
		for _, op := range d.Operations {
			if op.Unavailable != "" {
				continue
			}
			if !strings.HasPrefix(op.ServerURL, "https://") {
				t.Fatalf("available operation %s on a non-HTTPS server %q", op.ID, op.ServerURL)
			}
			if !templates[op.ServerURL+op.Path] {
				t.Fatalf("available operation %s at %s%s, which the description's destinations don't list", op.ID, op.ServerURL, op.Path)
			}
			in := apis.Input{Path: map[string]string{}, Body: []byte(`{}`)}
			for _, p := range op.Parameters {
				if p.In == "path" {
					in.Path[p.Name] = value
				}
			}
			req, err := d.NewRequest(op.ID, in)
			if err != nil {
				continue // refused before anything is sent: fine
			}
			u, err := transport.CheckURL(req.URL)
			if err != nil {
				t.Fatalf("NewRequest built %s for %s, which the transport refuses: %v", req.URL, op.ID, err)
			}
			if !dest.Allows(u) {
				t.Fatalf("NewRequest built %s for %s (template %s%s), outside the description's destinations", req.URL, op.ID, op.ServerURL, op.Path)
			}
			if u.String() == descURL || strings.HasPrefix(u.EscapedPath(), "/.well-known/") {
				t.Fatalf("NewRequest built %s, a document that never gets the Session JWT", req.URL)
			}
			tu, _ := url.Parse(op.ServerURL)
			want := segments(tu.Path + op.Path)
			if got := segments(u.Path); got != want {
				t.Fatalf("NewRequest built %s with %d path segments for the template %s%s (%d): an expression spanned a \"/\"", req.URL, got, op.ServerURL, op.Path, want)
			}
		}
		// An expression stands for part of one segment: filling one with "x/y" makes a URL only
		// a template with one segment more could describe.
		counts := map[string]bool{}
		for tpl := range templates {
			tu, _ := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(tpl))
			if tu != nil {
				counts[tu.Host+"|"+itoa(segments(tu.Path))] = true
			}
		}
		for tpl := range templates {
			if i := strings.IndexByte(tpl, '{'); i >= 0 {
				if j := strings.IndexByte(tpl[i:], '}'); j > 0 {
					raw := tpl[:i] + "x/y" + tpl[i+j+1:]
					u, err := url.Parse(strings.NewReplacer("{", "v", "}", "v").Replace(raw))
					if err == nil && dest.Allows(u) && !counts[u.Host+"|"+itoa(segments(u.Path))] {
						t.Fatalf("%s is a destination: the template %s matched a \"/\" in an expression", u, tpl)
					}
				}
			}
		}
		for _, raw := range []string{descURL, "https://api.example/.well-known/poppy.json", "https://api.example/.well-known/oauth-protected-resource"} {
			u, _ := url.Parse(raw)
			if dest.Allows(u) {
				t.Fatalf("%s is a destination", raw)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func segments(p string) int {
	return len(strings.Split(strings.Trim(p, "/"), "/"))
}
