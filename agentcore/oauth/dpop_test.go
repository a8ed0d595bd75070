package oauth_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

func TestDPoP(t *testing.T) {
	tests := []struct {
		name       string
		faults     []string
		wantNonce  bool
		wantTokens int // token endpoint requests for one sign-in
	}{
		{name: "bound tokens", wantTokens: 1},
		{name: "nonce required: retried once with it", faults: []string{refcompany.FaultDPoPNonce}, wantNonce: true, wantTokens: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{dpop: true, faults: tc.faults})
			ctx := context.Background()
			res := f.signIn(t, "personal", []string{"orders:read"})
			if res.TokenType != "DPoP" {
				t.Fatalf("token_type %q, want DPoP", res.TokenType)
			}
			reqs := f.s.RequestsTo(refcompany.AuthHost, "/oauth/token")
			if len(reqs) != tc.wantTokens {
				t.Fatalf("%d token requests, want %d", len(reqs), tc.wantTokens)
			}
			for i, r := range reqs {
				if r.Header.Get("DPoP") == "" {
					t.Errorf("token request %d carried no DPoP proof", i)
				}
			}
			if tc.wantNonce && poppytest.Claims(t, reqs[len(reqs)-1].Header.Get("DPoP"))["nonce"] == nil {
				t.Error("the retried request's proof has no nonce")
			}
			b := f.bundle(t, "personal")
			if len(b.DPoPKey) == 0 || defaultToken(b).TokenType != "DPoP" {
				t.Fatal("the DPoP key or token type was not stored")
			}
			// The key is reused: a refresh is bound to the same key, and a resource request
			// carries "DPoP" plus a proof with ath that the Company verifies.
			cred, err := f.c.Refresh(ctx, f.co, "personal", "")
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, f.s.Origin()+"/api/orders", nil)
			req.Host = req.URL.Host
			if err := f.c.Authorize(ctx, f.co, "personal", req, cred); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(req.Header.Get("Authorization"), "DPoP ") {
				t.Fatalf("Authorization %q", req.Header.Get("Authorization"))
			}
			if err := f.s.VerifyDPoPAccess(req, cred.Token()); err != nil {
				t.Fatalf("the Company rejects the resource request's proof: %v", err)
			}
			// A proof is for one request: replaying it fails.
			if err := f.s.VerifyDPoPAccess(req, cred.Token()); err == nil {
				t.Error("a replayed proof was accepted")
			}
		})
	}
}

func TestBearerWithoutDPoP(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read"})
	if reqs := f.s.RequestsTo(refcompany.AuthHost, "/oauth/token"); reqs[0].Header.Get("DPoP") != "" {
		t.Error("a DPoP proof was sent to an issuer that does not list dpop_signing_alg_values_supported")
	}
	cred, err := f.c.AccessToken(ctx, f.co, "personal", f.s.Origin()+"/api")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.s.Origin()+"/api/orders", nil)
	if err := f.c.Authorize(ctx, f.co, "personal", req, cred); err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Authorization") != "Bearer "+cred.Token() || req.Header.Get("DPoP") != "" {
		t.Errorf("headers %v", req.Header)
	}
	// The reference Company's protected endpoint accepts the issued token.
	resp, err := f.tr.NoRedirectClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized && strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Error("the reference Company does not accept the token its issuer issued")
	}
}
