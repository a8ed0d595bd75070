package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// modelClient connects an MCP client (the official SDK) to the Host's model socket, as
// `poppydesk mcp` relays any MCP client there.
func modelClient(t *testing.T, h *app.Host) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	conn, err := modelapi.Dial(ctx, h.Socket())
	if err != nil {
		t.Fatalf("dialing the model socket: %v", err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); conn.(net.Conn).Close() })
	return cs
}

// callTool calls a model tool and returns its structured content.
func callTool(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if res.IsError {
		t.Fatalf("%s answered an error: %s", name, b)
	}
	return out
}

// TestModelCallRefreshesWithDPoPAndServiceTokens drives the shipped composition (app.New, as
// `poppydesk` builds it) through the model's MCP interface against the reference Company with
// DPoP required and the Orders API as a service with its own protected resource (spec 4.5): a
// signed-in call made after the access token expired succeeds after a refresh (spec 4.4),
// carries a DPoP proof bound to the request (RFC 9449), and uses the API's own token, not the
// default one. Both ways a token expires are covered: its lifetime passes on the clock (the
// engine refreshes before sending) and the Company revokes it early (invalid_token, refresh,
// the request sent again).
func TestModelCallRefreshesWithDPoPAndServiceTokens(t *testing.T) {
	tests := []struct {
		name   string
		expire func(f *apptest.Fixture)
	}{
		{"the lifetime passes", func(f *apptest.Fixture) { f.Clock.Advance(2 * time.Hour) }},
		{"the Company expires it early", func(f *apptest.Fixture) { f.Company.ExpireAccessTokens() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := apptest.Start(t, apptest.Options{DPoP: true, Socket: true})
			f.Company.SetAPIResource(true)
			f.SignIn(t, "personal", "orders:read", "orders:write")
			cs := modelClient(t, f.Host)
			list := func() {
				t.Helper()
				out := callTool(t, cs, modelapi.ToolCallAPIOperation, map[string]any{"company": f.Company.Domain, "account": "personal",
					"operation_id": "listOrders"})
				if out["status"] != "performed" {
					t.Fatalf("listOrders: %v", out)
				}
			}
			list()
			tokenRequests := len(f.Company.RequestsTo(refcompany.AuthHost, "/oauth/token"))
			tc.expire(f)
			f.Company.ResetRequests()
			list()

			// A refresh happened: a refresh_token grant for the API's own resource.
			var refreshed bool
			for _, r := range f.Company.RequestsTo(refcompany.AuthHost, "/oauth/token") {
				body := string(r.Body)
				if strings.Contains(body, "grant_type=refresh_token") && r.Header.Get("DPoP") != "" {
					refreshed = true
				}
			}
			if !refreshed {
				t.Fatalf("no DPoP-bound refresh_token grant reached the token endpoint (%d token requests before)", tokenRequests)
			}
			// The successful call: DPoP scheme, a proof for this request, the API's own token.
			sent := f.Company.RequestsTo(refcompany.ShopHost, "/api/orders")
			if len(sent) == 0 {
				t.Fatal("no request reached the Orders API")
			}
			last := sent[len(sent)-1]
			scheme, token, _ := strings.Cut(last.Header.Get("Authorization"), " ")
			if scheme != "DPoP" || token == "" {
				t.Fatalf("Authorization scheme %q, want DPoP", scheme)
			}
			proof := last.Header.Get("DPoP")
			if proof == "" {
				t.Fatal("no DPoP proof on the API request")
			}
			claims := jwtClaims(t, proof)
			if claims["htm"] != "GET" || !strings.HasSuffix(claims["htu"].(string), "/api/orders") || claims["ath"] == nil {
				t.Fatalf("the DPoP proof is not bound to the request: %v", claims)
			}
			if res, ok := f.Company.TokenResource(token); !ok || res != f.Company.APIResource() {
				t.Fatalf("the API got a token for %q, want its own resource %q", res, f.Company.APIResource())
			}
		})
	}
}

// jwtClaims decodes a JWT's claims without verifying it (the reference Company verified it).
func jwtClaims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
