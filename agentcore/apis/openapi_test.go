package apis_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func TestSelectSkipsUnknownTypes(t *testing.T) {
	tests := []struct {
		name                  string
		in                    []discovery.API
		openapi, mcp, skipped int
	}{
		{"none", nil, 0, 0, 0},
		{"both", []discovery.API{{Type: "openapi", URL: "https://a/o.json"}, {Type: "mcp", URL: "https://a/mcp"}}, 1, 1, 0},
		{"unknown skipped", []discovery.API{{Type: "graphql", URL: "https://a/g"}, {Type: "OpenAPI", URL: "https://a/x"}}, 0, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := apis.Select(tc.in)
			if len(s.OpenAPI) != tc.openapi || len(s.MCP) != tc.mcp || len(s.Skipped) != tc.skipped {
				t.Fatalf("selection = %+v", s)
			}
			for _, sk := range s.Skipped {
				if !strings.Contains(sk.Reason, "spec 7") {
					t.Fatalf("reason %q does not name the spec", sk.Reason)
				}
			}
		})
	}
}

// TestOpenAPIOperations: the reference Company's OpenAPI 3.1 description is fetched without the
// Session header and lists operations with parameters, bodies and scopes (spec 7, 5.2).
func TestOpenAPIOperations(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.session(t, "alice", opsV2))
	d := f.openAPI(t, c)
	if d.OpenAPI != "3.1.0" || d.Title != "Shop API" {
		t.Fatalf("description %+v", d)
	}
	ex, ok := d.Operation("exchangeItem")
	if !ok {
		t.Fatalf("no exchangeItem in %+v", d.Operations)
	}
	if ex.Method != "POST" || ex.Path != "/orders/{id}/exchanges" || ex.ServerURL != f.s.Origin()+"/api" || ex.Unavailable != "" || !ex.Unsafe() {
		t.Fatalf("exchangeItem = %+v", ex)
	}
	if len(ex.Security) != 1 || ex.Security[0][0].Type != "oauth2" || ex.Security[0][0].Scopes[0] != (apis.Scope{Name: "orders:write", Description: "Exchange or return items"}) {
		t.Fatalf("security = %+v", ex.Security)
	}
	if ex.RequestBody == nil || !ex.RequestBody.Required || !strings.Contains(string(ex.RequestBody.Schema), "replacement_sku") {
		t.Fatalf("request body = %+v", ex.RequestBody)
	}
	if len(ex.Parameters) != 1 || ex.Parameters[0].Name != "id" || ex.Parameters[0].In != "path" || !ex.Parameters[0].Required {
		t.Fatalf("parameters = %+v", ex.Parameters)
	}
	if lp, _ := d.Operation("listProducts"); lp == nil || len(lp.Security) != 0 || lp.Scopes() != nil {
		t.Fatalf("listProducts = %+v", lp)
	}
	if lo, _ := d.Operation("listOrders"); lo == nil || strings.Join(lo.Scopes(), " ") != "orders:read" {
		t.Fatalf("listOrders = %+v", lo)
	}
	for _, r := range f.s.RequestsTo(refcompany.ShopHost, "/api/openapi.json") {
		for _, h := range []string{"Poppy-Session", "Poppy-Version", "Authorization"} {
			if r.Header.Get(h) != "" {
				t.Fatalf("the description request carried %s", h)
			}
		}
	}
}

// TestParseOpenAPI: versions, servers and $refs of Company descriptions (spec 3, 5.2, 7).
func TestParseOpenAPI(t *testing.T) {
	var b transport.DestinationsBuilder
	b.Prefix("https://api.example/v1")
	dest := b.Build()
	const descURL = "https://api.example/v1/openapi.json"
	doc := func(version, servers string) string {
		return `{"openapi":"` + version + `","info":{"title":"T","version":"1"},` + servers +
			`"paths":{"/things/{id}":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"get":{"operationId":"getThing","responses":{"200":{"description":"ok"}}}}}}`
	}
	tests := []struct {
		name, doc   string
		wantErr     string
		unavailable string
		server      string
	}{
		{"3.0 relative server", doc("3.0.3", `"servers":[{"url":"/v1"}],`), "", "", "https://api.example/v1"},
		{"3.1 server variables", doc("3.1.0", `"servers":[{"url":"https://api.example/{base}","variables":{"base":{"default":"v1"}}}],`), "", "", "https://api.example/v1"},
		{"no servers: relative to the description", doc("3.1.0", ""), "", "not one of the Company's Session destinations", "https://api.example"},
		{"http server refused", doc("3.0.3", `"servers":[{"url":"http://api.example/v1"}],`), "", "not an HTTPS URL", ""},
		{"other host is not a destination", doc("3.0.3", `"servers":[{"url":"https://evil.example/v1"}],`), "", "not one of the Company's Session destinations", "https://evil.example/v1"},
		{"swagger 2.0 refused", `{"swagger":"2.0","info":{"title":"T","version":"1"},"paths":{}}`, "OpenAPI", "", ""},
		{"external $ref refused", `{"openapi":"3.0.3","info":{"title":"T","version":"1"},"paths":{"/a":{"$ref":"https://evil.example/paths.json#/a"}}}`, "not a readable OpenAPI document", "", ""},
		{"not JSON", `<html>`, "not a readable OpenAPI document", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := apis.ParseOpenAPI(context.Background(), descURL, []byte(tc.doc), dest)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, apis.ErrDescription) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			op, ok := d.Operation("getThing")
			if !ok || op.ServerURL != tc.server || !strings.Contains(op.Unavailable, tc.unavailable) || (tc.unavailable == "") != (op.Unavailable == "") {
				t.Fatalf("op = %+v", op)
			}
			if _, err := d.NewRequest("getThing", apis.Input{}); err == nil {
				t.Fatal("a request without its path parameter was built")
			}
		})
	}
}

// TestGetOrders: GET orders signed in and signed out (spec 7 challenge), and a refused
// destination (spec 5.2).
func TestGetOrders(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.session(t, "alice", opsV2))
	d := f.openAPI(t, c)
	ctx := context.Background()
	tests := []struct {
		name, op, token string
		path            map[string]string
		status          int
		want            string
	}{
		{"list signed in", "listOrders", tokenRW, nil, 200, "ord_7Hk2"},
		{"one order signed in", "getOrder", tokenRead, map[string]string{"id": "ord_7Hk2"}, 200, "Stormline Jacket (M)"},
		{"signed out: 401 challenge", "listOrders", "", nil, 401, ""},
		{"unknown order", "getOrder", tokenRead, map[string]string{"id": "ord_nope"}, 404, "order_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := d.NewRequest(tc.op, apis.Input{Path: tc.path, AccessToken: tc.token})
			if err != nil {
				t.Fatal(err)
			}
			if req.Header.Get("Idempotency-Key") != "" {
				t.Fatal("a GET got an Idempotency-Key")
			}
			res, err := c.Send(ctx, req)
			if res == nil || res.Status != tc.status || !strings.Contains(string(res.Body), tc.want) {
				t.Fatalf("res %+v err %v", res, err)
			}
			var pe *transport.ProtocolError
			switch {
			case tc.status == 200 && err != nil:
				t.Fatal(err)
			case tc.status == 401 && (!errors.As(err, &pe) || !pe.NeedsScopes() || strings.Join(pe.Scopes, " ") != "orders:read"):
				t.Fatalf("err = %v", err)
			case tc.status == 404 && !errors.As(err, &pe):
				t.Fatalf("err = %v", err)
			}
		})
	}
	f.s.ResetRequests()
	_, err := c.Send(ctx, &apis.Request{Method: "GET", URL: f.s.URL(refcompany.ShopHost, "/api/openapi.json")})
	if !errors.Is(err, transport.ErrNotSessionDestination) || len(f.s.Requests()) != 0 {
		t.Fatalf("err = %v, requests %d", err, len(f.s.Requests()))
	}
}

// TestRetryAfter429: a rate-limited request is sent again after Retry-After with the same
// Idempotency-Key (spec 5.6).
func TestRetryAfter429(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.session(t, "alice", opsV2))
	d := f.openAPI(t, c)
	f.s.SetFault(refcompany.Fault429Burst, true)
	f.s.ResetRequests()
	res, err := c.Send(context.Background(), exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
	approvalRequired(t, res)
	var pe *transport.ProtocolError
	if !errors.As(err, &pe) || pe.Code != "approval_required" {
		t.Fatalf("err = %v", err)
	}
	sent := f.s.RequestsTo(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges")
	if len(sent) != 3 || len(f.sleeps) != 2 {
		t.Fatalf("sent %d, slept %v", len(sent), f.sleeps)
	}
	if k := sent[0].Header.Get("Idempotency-Key"); k == "" || sent[2].Header.Get("Idempotency-Key") != k {
		t.Fatal("the re-sent request changed its Idempotency-Key")
	}
}

// TestExtensionRequired: a Session that does not declare operations v2 gets extension_required
// in WWW-Authenticate (Operations 2, spec 3.3, 7).
func TestExtensionRequired(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.session(t, "alice", nil))
	d := f.openAPI(t, c)
	res, err := c.Send(context.Background(), exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
	var pe *transport.ProtocolError
	if !errors.As(err, &pe) || pe.Code != transport.CodeExtensionRequired || pe.Extension != "operations" || res.Status != http.StatusForbidden {
		t.Fatalf("res %+v err %v", res, err)
	}
	if strings.Contains(string(res.Body), "operation_id") || len(f.s.Ledger()) != 0 {
		t.Fatal("an operation was returned or performed without the extension")
	}
}

func FuzzParseOpenAPI(f *testing.F) {
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"/v1"}],"paths":{"/a/{id}":{"post":{"operationId":"x","parameters":[{"name":"id","in":"path","required":true}],"security":[{"s":["a"]}],"requestBody":{"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}}},"components":{"securitySchemes":{"s":{"type":"oauth2","flows":{"implicit":{"authorizationUrl":"https://a/x","scopes":{"a":"A"}}}}}}}`))
	f.Add([]byte(`openapi: 3.0.3
info: {title: T, version: "1"}
paths: {}`))
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"https://other.example/v1"}],"paths":{"/a":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}}`))
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"http://api.example/v1"}],"paths":{"/a":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}}`))
	var b transport.DestinationsBuilder
	b.Prefix("https://api.example/")
	dest := b.Build()
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := apis.ParseOpenAPI(context.Background(), "https://api.example/openapi.json", data, dest)
		if err != nil {
			return
		}
		for _, op := range d.Operations {
			if op.Unavailable == "" && !strings.HasPrefix(op.ServerURL, "https://") {
				t.Fatalf("non-HTTPS server accepted: %q", op.ServerURL)
			}
			// The only Session destination is https://api.example/ (spec 5.2).
			if op.Unavailable == "" && !strings.HasPrefix(op.ServerURL+"/", "https://api.example/") {
				t.Fatalf("an operation outside the Session destinations is available: %q", op.ServerURL)
			}
			_, _ = json.Marshal(op)
		}
	})
}

// TestNewRequestPathParameterDotSegments: path parameter values a server would resolve as a
// dot-segment or path separator are refused, naming the parameter (invariant 6, spec 5.2);
// url.PathEscape alone leaves "." and ".." as they are.
func TestNewRequestPathParameterDotSegments(t *testing.T) {
	var b transport.DestinationsBuilder
	if err := b.Prefix("https://api.example/v1"); err != nil {
		t.Fatal(err)
	}
	const doc = `{"openapi":"3.0.3","info":{"title":"T","version":"1"},"servers":[{"url":"https://api.example/v1"}],` +
		`"paths":{"/things/{id}":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"get":{"operationId":"getThing","responses":{"200":{"description":"ok"}}}}}}`
	d, err := apis.ParseOpenAPI(context.Background(), "https://api.example/v1/openapi.json", []byte(doc), b.Build())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value   string
		wantURL string // "" when refused
		wantErr string
	}{
		{"ord_7Hk2", "https://api.example/v1/things/ord_7Hk2", ""},
		{"a.b", "https://api.example/v1/things/a.b", ""},
		{"...", "https://api.example/v1/things/...", ""},
		{"a b", "https://api.example/v1/things/a%20b", ""},
		{"50%off", "https://api.example/v1/things/50%25off", ""},
		{".", "", `path parameter "id" is "." or ".."`},
		{"..", "", `path parameter "id" is "." or ".."`},
		{"%2e%2e", "", `path parameter "id" is "." or ".."`},
		{"%2E", "", `path parameter "id" is "." or ".."`},
		{".%2E", "", `path parameter "id" is "." or ".."`},
		{"%252e%252e", "", `path parameter "id" is "." or ".."`},
		{"../oauth/token", "", `path parameter "id" holds a slash`},
		{`..\account`, "", `path parameter "id" holds a slash`},
		{"..%2Faccount", "", `path parameter "id" percent-encodes a slash`},
		{"x%5Cy", "", `path parameter "id" percent-encodes a slash`},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			req, err := d.NewRequest("getThing", apis.Input{Path: map[string]string{"id": tc.value}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewRequest(id=%q) = %v, %v; want an error containing %q", tc.value, req, err, tc.wantErr)
				}
				return
			}
			if err != nil || req.URL != tc.wantURL {
				t.Fatalf("NewRequest(id=%q) = %+v, %v; want URL %s", tc.value, req, err, tc.wantURL)
			}
			if _, err := transport.CheckURL(req.URL); err != nil {
				t.Fatalf("the built URL %s is refused: %v", req.URL, err)
			}
		})
	}
}

// TestSendRefusesDotSegmentURLs: a request whose path escapes an API prefix through a
// dot-segment or an encoded slash is refused before anything is sent (invariant 6, spec 5.2).
func TestSendRefusesDotSegmentURLs(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.session(t, "alice", opsV2))
	for _, p := range []string{"/api/../oauth/token", "/api/%2e%2e/account", "/api/%2E%2e/account", "/api/..%2Foauth/token", "/api/..%5Coauth/token"} {
		t.Run(p, func(t *testing.T) {
			f.s.ResetRequests()
			_, err := c.Send(context.Background(), &apis.Request{Method: "GET", URL: f.s.URL(refcompany.ShopHost, p), AccessToken: tokenRead})
			if !errors.Is(err, transport.ErrAmbiguousPath) || len(f.s.Requests()) != 0 {
				t.Fatalf("err = %v, requests %d; want a refused dot-segment path and nothing sent", err, len(f.s.Requests()))
			}
		})
	}
}
