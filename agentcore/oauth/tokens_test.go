package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func formOf(t testing.TB, r refcompany.Request) url.Values {
	t.Helper()
	v, err := url.ParseQuery(string(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRefresh(t *testing.T) {
	tests := []struct {
		name        string
		fault       string
		wantRotated bool
		wantErr     error
	}{
		{name: "rotation: the new refresh token replaces the old", wantRotated: true},
		{name: "no rotation: the old refresh token is kept", fault: refcompany.FaultRefreshNoRotation},
		{name: "invalid_grant signs out", fault: refcompany.FaultRefreshRotation, wantErr: oauth.ErrSignedOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			ctx := context.Background()
			f.signIn(t, "personal", []string{"orders:read"})
			before := defaultToken(f.bundle(t, "personal"))
			if tc.fault != "" {
				f.s.SetFault(tc.fault, true)
			}
			cred, err := f.c.Refresh(ctx, f.co, "personal", "")
			after := defaultToken(f.bundle(t, "personal"))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !oauth.IsCode(err, "invalid_grant") || !strings.Contains(err.Error(), "spec 5.5") {
					t.Fatalf("Refresh = %v, want %v", err, tc.wantErr)
				}
				if st, _ := f.c.Status(ctx, f.co.Identifier, "personal"); st.SignedIn || len(f.bundle(t, "personal").Tokens) != 0 {
					t.Errorf("still signed in after invalid_grant: %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cred.Token() == before.AccessToken || after.AccessToken != cred.Token() {
				t.Error("the new access token was not stored")
			}
			if rotated := after.RefreshToken != before.RefreshToken; rotated != tc.wantRotated {
				t.Errorf("refresh token rotated = %v, want %v", rotated, tc.wantRotated)
			}
			last := f.s.RequestsTo(refcompany.AuthHost, "/oauth/token")
			form := formOf(t, last[len(last)-1])
			if form.Get("grant_type") != "refresh_token" || form.Get("client_assertion_type") != oauth.AssertionType || form.Get("client_assertion") == "" {
				t.Errorf("refresh request form lacks the grant or client assertion: %v", form)
			}
			// A second refresh works: it uses whichever refresh token is current.
			if _, err := f.c.Refresh(ctx, f.co, "personal", ""); err != nil {
				t.Fatalf("second refresh: %v", err)
			}
			if n := f.s.ActiveRefreshTokens(f.agent.ClientID); n != 1 {
				t.Errorf("the Company holds %d valid refresh tokens for the client, want 1", n)
			}
		})
	}
}

func TestRefreshHookFitsTransport(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read"})
	old := defaultToken(f.bundle(t, "personal")).AccessToken
	var hooks transport.Hooks
	hooks.Refresh = f.c.RefreshHook(f.co, "personal", "")
	nt, err := hooks.Refresh(ctx, old, nil)
	if err != nil || nt == "" || nt == old {
		t.Fatalf("Refresh hook = %q, %v", nt, err)
	}
	// A second request rejected with the same old token gets the already refreshed one.
	again, err := hooks.Refresh(ctx, old, nil)
	if err != nil || again != nt {
		t.Fatalf("second hook call = %v, want the token already refreshed", err)
	}
}

func TestPerServiceTokens(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read", "orders:write"})
	def := defaultToken(f.bundle(t, "personal"))

	// The OpenAPI server has no metadata of its own: the default token works there.
	api, err := f.c.AccessToken(ctx, f.co, "personal", f.s.Origin()+"/api")
	if err != nil || api.Resource != "" || api.Token() != def.AccessToken {
		t.Fatalf("API token = %v, %v; want the default token", api, err)
	}
	// The MCP server's metadata names its url: a token requested with resource, used only there.
	mcp, err := f.c.AccessToken(ctx, f.co, "personal", f.s.MCPURL())
	if err != nil {
		t.Fatal(err)
	}
	if mcp.Resource != f.s.MCPURL() || mcp.Token() == def.AccessToken {
		t.Fatalf("MCP token %v is not a token for the MCP server", mcp)
	}
	if r, ok := f.s.TokenResource(mcp.Token()); !ok || r != f.s.MCPURL() {
		t.Errorf("the Company issued the MCP token for %q", r)
	}
	reqs := f.s.RequestsTo(refcompany.AuthHost, "/oauth/token")
	if form := formOf(t, reqs[len(reqs)-1]); form.Get("resource") != f.s.MCPURL() || form.Get("grant_type") != "refresh_token" {
		t.Errorf("the MCP token request form was %v", form)
	}
	// Remembered: a second call costs no request.
	n := len(f.s.Requests())
	if again, err := f.c.AccessToken(ctx, f.co, "personal", f.s.MCPURL()); err != nil || again.Token() != mcp.Token() || len(f.s.Requests()) != n {
		t.Errorf("second AccessToken: %v, %d new requests", err, len(f.s.Requests())-n)
	}
	// The default token is unchanged for the other services, and the refresh token still works.
	if d := defaultToken(f.bundle(t, "personal")); d.AccessToken != def.AccessToken || d.RefreshToken == "" {
		t.Error("the resource token replaced the default token")
	}
	st, _ := f.c.Status(ctx, f.co.Identifier, "personal")
	if !slices.Equal(st.Resources, []string{f.s.MCPURL()}) {
		t.Errorf("status resources %v", st.Resources)
	}
}

func TestInvalidTarget(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read"})
	// A service on another of the Company's hosts whose metadata names a resource the issuer
	// does not serve.
	svc := f.s.URL(refcompany.OtherHost, "/svc")
	f.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/svc" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"resource":"` + svc + `","authorization_servers":["` + f.s.Issuer() + `"]}`))
			return
		}
		http.NotFound(w, r)
	}))
	_, err := f.c.AccessToken(ctx, f.co, "personal", svc)
	if !oauth.IsCode(err, "invalid_target") || !strings.Contains(err.Error(), "RFC 8707") {
		t.Fatalf("AccessToken = %v, want invalid_target", err)
	}
	if st, _ := f.c.Status(ctx, f.co.Identifier, "personal"); !st.SignedIn {
		t.Error("invalid_target signed the account out")
	}
	// Metadata that names another resource than the URL it was derived from is not used.
	f.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"resource":"` + f.s.MCPURL() + `"}`))
	}))
	f.c.ForgetResource(svc)
	if _, err := f.c.AccessToken(ctx, f.co, "personal", svc); err == nil || !strings.Contains(err.Error(), "RFC 9728 §3.3") {
		t.Fatalf("mismatched resource metadata = %v", err)
	}
}

func TestSignOutRevokesEveryRefreshToken(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read"})
	mcp, err := f.c.AccessToken(ctx, f.co, "personal", f.s.MCPURL())
	if err != nil {
		t.Fatal(err)
	}
	rt := defaultToken(f.bundle(t, "personal")).RefreshToken
	if err := f.c.SignOut(ctx, f.co, "personal"); err != nil {
		t.Fatal(err)
	}
	revs := f.s.RequestsTo(refcompany.AuthHost, "/oauth/revoke")
	if len(revs) != 1 {
		t.Fatalf("%d revocation requests, want 1", len(revs))
	}
	form := formOf(t, revs[0])
	if form.Get("token") != rt || form.Get("token_type_hint") != "refresh_token" || form.Get("client_assertion") == "" {
		t.Errorf("revocation form %v", form)
	}
	if n := f.s.ActiveRefreshTokens(f.agent.ClientID); n != 0 {
		t.Errorf("%d refresh tokens still valid at the Company", n)
	}
	if _, ok := f.s.TokenResource(mcp.Token()); ok {
		t.Error("the grant's access tokens survived the revocation (RFC 7009 §2.1)")
	}
	if st, _ := f.c.Status(ctx, f.co.Identifier, "personal"); st.SignedIn || len(f.bundle(t, "personal").Tokens) != 0 {
		t.Errorf("status after sign-out %+v", st)
	}
	if _, err := f.c.Refresh(ctx, f.co, "personal", ""); !errors.Is(err, oauth.ErrNotSignedIn) {
		t.Errorf("Refresh after sign-out = %v", err)
	}
}

func TestSignInAgainRequestsUnionAndRevokesReplaced(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read"})
	old := defaultToken(f.bundle(t, "personal")).RefreshToken
	flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:write"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, flow.URL).Get("scope"); got != "orders:read orders:write" {
		t.Fatalf("second sign-in requested %q, want the union with the held scope", got)
	}
	if !flow.Requested[0].Held || flow.Requested[1].Held || flow.Requested[1].Changes != "irreversible" {
		t.Errorf("scope info for the window %+v", flow.Requested)
	}
	loopback(t, f.browser(t, flow.URL, "approve", []string{"orders:read", "orders:write"}))
	if _, err := flow.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	revs := f.s.RequestsTo(refcompany.AuthHost, "/oauth/revoke")
	if len(revs) != 1 || formOf(t, revs[0]).Get("token") != old {
		t.Errorf("the replaced refresh token was not revoked (%d revocations)", len(revs))
	}
	if n := f.s.ActiveRefreshTokens(f.agent.ClientID); n != 1 {
		t.Errorf("%d refresh tokens valid, want 1", n)
	}
}

func TestSecondAccountSeparate(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	f.signIn(t, "personal", []string{"orders:read"})
	f.signIn(t, "work", []string{"orders:read", "orders:write"})
	p, w := f.bundle(t, "personal"), f.bundle(t, "work")
	if defaultToken(p).RefreshToken == defaultToken(w).RefreshToken || p.AccountLabel != "personal" || w.AccountLabel != "work" {
		t.Fatal("the two accounts share tokens")
	}
	accts, err := f.c.Accounts(ctx, f.co.Identifier)
	if err != nil || len(accts) != 2 {
		t.Fatalf("Accounts = %+v, %v", accts, err)
	}
	if revs := f.s.RequestsTo(refcompany.AuthHost, "/oauth/revoke"); len(revs) != 0 {
		t.Error("signing in to a second account revoked the first one's token")
	}
	if err := f.c.SignOut(ctx, f.co, "work"); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.c.Status(ctx, f.co.Identifier, "personal"); !st.SignedIn {
		t.Error("signing out of work signed out of personal")
	}
}
