package refcompany_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestFaultsListedOnce: Faults lists every fault of the reference Company once (discovery,
// Session destinations, authorization server, Operations extension, resource DPoP), and each
// can be switched on by name.
func TestFaultsListedOnce(t *testing.T) {
	s, err := refcompany.New(refcompany.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range refcompany.Faults {
		if seen[f] {
			t.Fatalf("fault %q listed twice", f)
		}
		seen[f] = true
		if err := s.SetFault(f, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{refcompany.FaultSessionEnded, refcompany.FaultRefreshRotation, refcompany.FaultDPoPNonce,
		refcompany.FaultLoseResponse, refcompany.FaultResourceDPoPNonce} {
		if !seen[f] {
			t.Fatalf("fault %q missing from Faults", f)
		}
	}
	if got := s.ActiveFaults(); len(got) != len(refcompany.Faults) {
		t.Fatalf("%d active faults, want %d", len(got), len(refcompany.Faults))
	}
	if err := s.SetFault("no-such-fault", true); err == nil {
		t.Fatal("an unknown fault was accepted")
	}
}

// TestStatePerServer: each Server has its own tokens, authorization server and ledger: a token
// one accepts is unknown to another, and a token added by a test is not an issued one (no
// resource, no expiry).
func TestStatePerServer(t *testing.T) {
	a, ha := start(t, refcompany.Options{})
	b, hb := start(t, refcompany.Options{})
	a.AddAccessToken("tok", "https://agent.example/agent.json", "orders:read")
	if _, issued := a.TokenResource("tok"); issued {
		t.Fatal("a test token counts as issued by the authorization server")
	}
	for _, tc := range []struct {
		s        *refcompany.Server
		hc       *http.Client
		wantCode string
	}{{a, ha, "invalid_session"}, {b, hb, "invalid_token"}} {
		req, _ := http.NewRequest(http.MethodGet, tc.s.URL(refcompany.ShopHost, "/api/products"), nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := tc.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error string `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		// Server a knows the token and goes on to the (missing) Session header; b doesn't.
		if body.Error != tc.wantCode {
			t.Fatalf("%s answered %q, want %q", tc.s.Domain, body.Error, tc.wantCode)
		}
	}
	if len(a.Ledger()) != 0 || len(b.Ledger()) != 0 || a.ActiveRefreshTokens("") != 0 || b.ActiveRefreshTokens("") != 0 {
		t.Fatal("a new Server has ledger entries or refresh tokens")
	}
}

// TestAccessTokenChecks: the protected endpoints check the access token before anything else
// (spec 7, RFC 6750 §3.1, RFC 9449 §7): the Authorization scheme, unknown and expired tokens.
// Tokens the authorization server issued are also checked for their resource and DPoP binding
// (the engine's sign-in tests cover those with real sign-ins).
func TestAccessTokenChecks(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	s.AddAccessToken("good", "https://agent.example/agent.json", "orders:read")
	s.AddAccessToken("old", "https://agent.example/agent.json", "orders:read")
	tests := []struct {
		name, path, auth string
		expireAll        bool
		wantStatus       int
		wantScheme       string
		wantError        string
		wantRM           bool
	}{
		{name: "unknown token", path: "/api/orders", auth: "Bearer nope", wantStatus: 401, wantScheme: "Bearer", wantError: "invalid_token"},
		{name: "unknown token at the MCP server", path: refcompany.MCPPath, auth: "Bearer nope", wantStatus: 401, wantScheme: "Bearer", wantError: "invalid_token", wantRM: true},
		{name: "malformed scheme", path: "/api/products", auth: "Basic Zm9vOmJhcg==", wantStatus: 400, wantScheme: "Bearer", wantError: "invalid_request"},
		{name: "DPoP scheme for a Bearer token", path: "/api/products", auth: "DPoP good", wantStatus: 401, wantScheme: "Bearer", wantError: "invalid_token"},
		{name: "expired", path: "/api/products", auth: "Bearer old", expireAll: true, wantStatus: 401, wantScheme: "Bearer", wantError: "invalid_token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.expireAll {
				s.ExpireAccessTokens()
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL(refcompany.ShopHost, tc.path), strings.NewReader("{}"))
			req.Header.Set("Authorization", tc.auth)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			ch, _ := transport.ParseChallenges(resp.Header.Values("WWW-Authenticate"))
			if resp.StatusCode != tc.wantStatus || len(ch) != 1 || !strings.EqualFold(ch[0].Scheme, tc.wantScheme) || ch[0].Param("error") != tc.wantError {
				t.Fatalf("HTTP %d, challenges %+v", resp.StatusCode, ch)
			}
			if got := ch[0].Param("resource_metadata") != ""; got != tc.wantRM {
				t.Fatalf("resource_metadata present: %v, want %v", got, tc.wantRM)
			}
		})
	}
	if !slices.Contains(refcompany.Faults, refcompany.FaultResourceDPoPNonce) {
		t.Fatal("the resource nonce fault is not listed")
	}
}
