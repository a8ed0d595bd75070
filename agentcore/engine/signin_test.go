package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// signInFixture is an engine over the reference Company as the Host builds one
// (poppytest.NewEngine: state database on disk, one clock), with the sign-in layer engine.New
// builds, and the discovered Company. SignIn signs an account in with Direct Sign-In, the
// reference Company approving as the User would. Logs holds the engine's log lines (a JSON
// handler without redaction of its own: the engine redacts).
type signInFixture struct {
	s       *refcompany.Server
	eng     *poppytest.Engine
	e       *engine.Engine
	co      *discovery.Company
	Logs    *poppytest.Buffer
	secrets store.Secrets
}

func newSignInFixture(t testing.TB, dpop bool, faults ...string) *signInFixture {
	t.Helper()
	clk := &refcompany.Clock{}
	s := poppytest.Start(t, refcompany.Options{Faults: faults, Now: clk.Now})
	s.SetDPoP(dpop)
	logs := &poppytest.Buffer{}
	level := slog.LevelDebug
	if _, bench := t.(*testing.B); bench {
		level = slog.LevelInfo // the product's level unless started with --debug
	}
	eng := poppytest.NewEngine(t, s, poppytest.EngineOptions{Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level}))})
	return &signInFixture{s: s, eng: eng, e: eng.Engine, co: eng.Discover(t, s), Logs: logs, secrets: eng.Secrets}
}

// SignIn signs account in with scopes.
func (f *signInFixture) SignIn(t testing.TB, account string, scopes ...string) {
	t.Helper()
	f.eng.SignIn(t, f.s, account, scopes...)
}

func (f *signInFixture) get(t testing.TB, c *engine.Client, path string) (*transport.Response, error) {
	t.Helper()
	return get(t, f.s, c, path)
}

func (f *signInFixture) client(t testing.TB, account string) *engine.Client {
	t.Helper()
	c, err := f.e.Client(context.Background(), f.co.Identifier, account)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sent returns the recorded requests to path, in order.
func (f *signInFixture) sent(path string) []refcompany.Request {
	return f.s.RequestsTo(refcompany.ShopHost, path)
}

// tokenOf splits a recorded Authorization header into scheme and token.
func tokenOf(r refcompany.Request) (scheme, token string) {
	scheme, token, _ = strings.Cut(r.Header.Get("Authorization"), " ")
	return scheme, token
}

// TestSignedInRequest: a signed-in Client takes the account's access token from the keyring
// bundle; a token the Company rejects is refreshed once, and the request is sent again with the
// new token, which replaces the old one in the keyring (spec 4.4, 5.4).
func TestSignedInRequest(t *testing.T) {
	f := newSignInFixture(t, false)
	f.SignIn(t, "alice", "orders:read")
	ctx := context.Background()
	tests := []struct {
		name          string
		stale         bool // the keyring's access token is one the Company does not know
		wantRefreshed int
	}{
		{"stored token accepted", false, 0},
		{"stored token rejected, refreshed", true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.stale {
				f.setAccessToken(t, "alice", "stale-token")
			}
			cl := f.client(t, "alice")
			f.s.ResetRequests()
			resp, err := f.get(t, cl, "/api/orders")
			if err != nil || resp.StatusCode != 200 || resp.SignedOut {
				t.Fatalf("resp %+v err %v", resp, err)
			}
			if n := refreshes(f.s); n != tc.wantRefreshed {
				t.Fatalf("refreshed %d times, want %d", n, tc.wantRefreshed)
			}
			stored := f.accessToken(t, "alice")
			last := f.sent("/api/orders")
			if got := last[len(last)-1].Header.Get("Authorization"); got != "Bearer "+stored || stored == "stale-token" {
				t.Fatalf("Authorization %q, want the keyring's token (stale: %v)", got, stored == "stale-token")
			}
		})
	}
	// Accounts have separate Sessions (spec 5.4).
	anon, err := f.e.Client(ctx, f.co.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	if alice := f.client(t, "alice"); anon.SID() == alice.SID() {
		t.Fatal("signed-out and signed-in Clients share a Session")
	}
	if logs := f.Logs.String(); strings.Contains(logs, f.accessToken(t, "alice")) || strings.Contains(logs, "stale-token") {
		t.Fatal("an access token reached the log")
	}
}

// accessToken is the account's default access token in the keyring bundle.
func (f *signInFixture) accessToken(t testing.TB, account string) string {
	t.Helper()
	b, err := f.secrets.LoadCompany(context.Background(), f.co.Identifier, account)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range b.Tokens {
		if tok.Resource == "" {
			return tok.AccessToken
		}
	}
	t.Fatalf("account %q has no default access token", account)
	return ""
}

// setAccessToken replaces the account's default access token in the keyring bundle, keeping
// its refresh token.
func (f *signInFixture) setAccessToken(t testing.TB, account, token string) {
	t.Helper()
	if _, err := f.secrets.UpdateCompany(context.Background(), f.co.Identifier, account, func(b *store.CompanyBundle) error {
		for i := range b.Tokens {
			if b.Tokens[i].Resource == "" {
				b.Tokens[i].AccessToken = token
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// refreshes counts the refresh_token grants the reference Company's token endpoint received.
func refreshes(s *refcompany.Server) int {
	n := 0
	for _, r := range s.RequestsTo(refcompany.AuthHost, "/oauth/token") {
		if strings.Contains(string(r.Body), "grant_type=refresh_token") {
			n++
		}
	}
	return n
}

// TestSignedInDo: a signed-in Client.Do takes the account's token itself and puts it on the
// request as its token_type says: Bearer, or DPoP with a proof for this request (spec 4.5, RFC
// 9449 §7); a resource's use_dpop_nonce is answered once with the nonce (RFC 9449 §9). The
// reference Company checks the binding, the proof, the expiry and the token's resource.
func TestSignedInDo(t *testing.T) {
	tests := []struct {
		name       string
		dpop       bool
		faults     []string
		wantScheme string
		wantSent   int // requests to /api/orders for one Do
	}{
		{name: "bearer", wantScheme: "Bearer", wantSent: 1},
		{name: "dpop", dpop: true, wantScheme: "DPoP", wantSent: 1},
		{name: "dpop with a resource nonce", dpop: true, faults: []string{refcompany.FaultResourceDPoPNonce}, wantScheme: "DPoP", wantSent: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newSignInFixture(t, tc.dpop, tc.faults...)
			f.SignIn(t, "personal", "orders:read", "orders:write")
			c := f.client(t, "personal")
			f.s.ResetRequests()
			resp, err := f.get(t, c, "/api/orders")
			if err != nil || resp.StatusCode != http.StatusOK || resp.SignedOut {
				t.Fatalf("GET /api/orders: resp %+v, err %v", resp, err)
			}
			sent := f.sent("/api/orders")
			if len(sent) != tc.wantSent {
				t.Fatalf("%d requests to /api/orders, want %d", len(sent), tc.wantSent)
			}
			last := sent[len(sent)-1]
			scheme, tok := tokenOf(last)
			if scheme != tc.wantScheme || tok == "" {
				t.Fatalf("Authorization scheme %q, want %q", scheme, tc.wantScheme)
			}
			if hasProof := last.Header.Get("DPoP") != ""; hasProof != tc.dpop {
				t.Fatalf("DPoP proof sent: %v, want %v", hasProof, tc.dpop)
			}
			if res, ok := f.s.TokenResource(tok); !ok || res != f.s.Origin() {
				t.Fatalf("the API got a token for resource %q (known %v), want the default token for %s", res, ok, f.s.Origin())
			}
			if tc.wantSent == 2 {
				if sent[0].Header.Get("DPoP") == last.Header.Get("DPoP") {
					t.Fatal("the nonce retry reused the first DPoP proof")
				}
			}
			if strings.Contains(f.Logs.String(), tok) {
				t.Fatal("the access token reached the log")
			}
		})
	}
}

// TestPerServiceTokenMCP: through Engine.APIClient, the MCP server gets its own token, requested
// with resource = its url (spec 4.5, 7), DPoP-bound like the API's, while the Orders API gets
// the default token; each works only at its service (the reference Company refuses a token for
// another resource).
func TestPerServiceTokenMCP(t *testing.T) {
	for _, dpop := range []bool{false, true} {
		t.Run(map[bool]string{false: "bearer", true: "dpop"}[dpop], func(t *testing.T) {
			f := newSignInFixture(t, dpop)
			f.SignIn(t, "personal", "orders:read", "orders:write")
			ctx := context.Background()
			ac, err := f.e.APIClient(ctx, f.co.Identifier, "personal")
			if err != nil {
				t.Fatal(err)
			}
			f.s.ResetRequests()
			res, err := ac.Send(ctx, &apis.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/orders")})
			if err != nil || res.Status != http.StatusOK {
				t.Fatalf("Send: %v", err)
			}
			mcpAPI := apis.Select(f.co.Channels.APIs).MCP[0]
			m, err := ac.ConnectMCP(ctx, mcpAPI)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := m.ListTools(ctx); err != nil {
				t.Fatal(err)
			}
			_, apiTok := tokenOf(f.sent("/api/orders")[0])
			mcpReqs := f.sent(refcompany.MCPPath)
			scheme, mcpTok := tokenOf(mcpReqs[len(mcpReqs)-1])
			if want := map[bool]string{false: "Bearer", true: "DPoP"}[dpop]; scheme != want {
				t.Fatalf("MCP Authorization scheme %q, want %q", scheme, want)
			}
			if res, _ := f.s.TokenResource(mcpTok); res != f.s.MCPURL() {
				t.Fatalf("the MCP server got a token for %q, want one for its url %s", res, f.s.MCPURL())
			}
			if res, _ := f.s.TokenResource(apiTok); res != f.s.Origin() || apiTok == mcpTok {
				t.Fatalf("the API got a token for %q (same as MCP's: %v)", res, apiTok == mcpTok)
			}
		})
	}
}

// TestWrongResourceRefused: the reference Company accepts a resource token only at its
// resource (spec 4.5, 7): the MCP server's token at the Orders API gets invalid_token with the
// domain's resource_metadata, and the default token at the MCP server gets invalid_token with the
// MCP server's (RFC 9728 §5.1). The token check comes first, so the raw request needs no Session.
func TestWrongResourceRefused(t *testing.T) {
	f := newSignInFixture(t, false)
	f.SignIn(t, "personal", "orders:read", "orders:write")
	ctx := context.Background()
	c := f.client(t, "personal")
	token := func(service string) string {
		t.Helper()
		cred, err := f.e.OAuth().AccessToken(ctx, c.Company(), "personal", service)
		if err != nil || cred.Token() == "" {
			t.Fatalf("the token for %s: %v", service, err)
		}
		return cred.Token()
	}
	mcpTok, defTok := token(f.s.MCPURL()), token(f.s.Origin())
	if defTok == mcpTok {
		t.Fatal("the MCP server's token is the default token")
	}
	tests := []struct {
		name, method, path, token, wantRM string
		wantStatus                        int
	}{
		{"MCP token at the API", http.MethodGet, "/api/orders", mcpTok, f.s.URL(refcompany.ShopHost, "/.well-known/oauth-protected-resource"), 401},
		{"default token at the MCP server", http.MethodPost, refcompany.MCPPath, defTok, f.s.URL(refcompany.ShopHost, "/.well-known/oauth-protected-resource"+refcompany.MCPPath), 401},
		{"DPoP scheme for a Bearer token", http.MethodGet, "/api/orders", defTok, "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, tc.method, f.s.URL(refcompany.ShopHost, tc.path), strings.NewReader("{}"))
			scheme := "Bearer "
			if strings.HasPrefix(tc.name, "DPoP") {
				scheme = "DPoP "
			}
			req.Header.Set("Authorization", scheme+tc.token)
			resp, err := f.e.Transport().NoRedirectClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			ch, _ := transport.ParseChallenges(resp.Header.Values("WWW-Authenticate"))
			if resp.StatusCode != tc.wantStatus || len(ch) == 0 || ch[0].Param("error") != "invalid_token" || ch[0].Param("resource_metadata") != tc.wantRM {
				t.Fatalf("HTTP %d, challenges %+v", resp.StatusCode, ch)
			}
		})
	}
}

// TestRefreshOnInvalidToken: when the Company answers invalid_token (the token expired), the
// engine refreshes once through its sign-in layer and sends the request again with the new token,
// bound again for DPoP (spec 4.4, 7).
func TestRefreshOnInvalidToken(t *testing.T) {
	for _, dpop := range []bool{false, true} {
		t.Run(map[bool]string{false: "bearer", true: "dpop"}[dpop], func(t *testing.T) {
			f := newSignInFixture(t, dpop)
			f.SignIn(t, "personal", "orders:read", "orders:write")
			c := f.client(t, "personal")
			if _, err := f.get(t, c, "/api/orders"); err != nil {
				t.Fatal(err)
			}
			f.s.ExpireAccessTokens()
			f.s.ResetRequests()
			resp, err := f.get(t, c, "/api/orders")
			if err != nil || resp.StatusCode != http.StatusOK || resp.SignedOut {
				t.Fatalf("resp %+v err %v", resp, err)
			}
			sent := f.sent("/api/orders")
			if len(sent) != 2 {
				t.Fatalf("%d requests, want the refused one and the one with the new token", len(sent))
			}
			_, old := tokenOf(sent[0])
			scheme, nt := tokenOf(sent[1])
			if old == nt || nt == "" || scheme != map[bool]string{false: "Bearer", true: "DPoP"}[dpop] {
				t.Fatalf("the retry used scheme %q and the same token: %v", scheme, old == nt)
			}
			if len(f.s.RequestsTo(refcompany.AuthHost, "/oauth/token")) == 0 {
				t.Fatal("no refresh at the token endpoint")
			}
		})
	}
}

// TestSignInRequiredAfterInvalidGrant: when refresh gets invalid_grant (the Company revoked the
// refresh token), the request continues signed out in the same Session and the engine says the
// User must sign in again with a *SignInRequiredError matching oauth.ErrSignedOut (spec 5.5).
func TestSignInRequiredAfterInvalidGrant(t *testing.T) {
	tests := []struct {
		name, path string
		wantErr    bool // the signed-out attempt fails (the API needs the account)
	}{
		{"account needed", "/api/orders", true},
		{"no account needed", "/api/products", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newSignInFixture(t, true)
			f.SignIn(t, "personal", "orders:read")
			c := f.client(t, "personal")
			sid := c.SID()
			f.s.ExpireAccessTokens()
			if err := f.s.SetFault(refcompany.FaultRefreshRotation, true); err != nil {
				t.Fatal(err)
			}
			f.s.ResetRequests()
			resp, err := f.get(t, c, tc.path)
			var sie *engine.SignInRequiredError
			if tc.wantErr {
				var pe *transport.ProtocolError
				if !errors.As(err, &sie) || !errors.Is(err, oauth.ErrSignedOut) || !errors.As(err, &pe) || !pe.NeedsScopes() {
					t.Fatalf("err = %v, want a SignInRequiredError wrapping the 401 challenge", err)
				}
				if sie.Account != "personal" || !strings.Contains(err.Error(), "Sign in again") {
					t.Fatalf("error %q", err)
				}
			} else {
				if err != nil || !resp.SignedOut || !errors.As(resp.SignedOutReason, &sie) || !errors.Is(resp.SignedOutReason, oauth.ErrSignedOut) {
					t.Fatalf("resp %+v err %v", resp, err)
				}
			}
			sent := f.sent(tc.path)
			if last := sent[len(sent)-1]; last.Header.Get("Authorization") != "" || last.Header.Get("DPoP") != "" {
				t.Fatal("the signed-out attempt carried a token")
			}
			if c.SID() != sid {
				t.Fatal("continuing signed out started a new Session")
			}
			st, _ := f.e.OAuth().Status(context.Background(), f.co.Identifier, "personal")
			if st.SignedIn {
				t.Fatal("the tokens were kept after invalid_grant")
			}
		})
	}
}

// TestInsufficientScope: a token without the needed scope gets insufficient_scope, surfaced
// unchanged through Client.Do and the apis Client, with the scopes the Company names (spec 7).
func TestInsufficientScope(t *testing.T) {
	f := newSignInFixture(t, false)
	f.SignIn(t, "personal", "orders:write")
	ctx := context.Background()
	ac, err := f.e.APIClient(ctx, f.co.Identifier, "personal")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"Client.Do", func() error { _, err := f.get(t, f.client(t, "personal"), "/api/orders"); return err }},
		{"apis Send", func() error {
			_, err := ac.Send(ctx, &apis.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/orders")})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var pe *transport.ProtocolError
			if !errors.As(err, &pe) || pe.Code != transport.CodeInsufficientScope || !pe.NeedsScopes() ||
				!slices.Equal(pe.Scopes, []string{"orders:read", "orders:write"}) || pe.Status != http.StatusForbidden {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestEngineSignOut: Engine.SignOut revokes every refresh token of the account and deletes its
// tokens; the Session continues signed out: a later request carries the Session header (same
// sid) and no Authorization (spec 4.6, 5.5).
func TestEngineSignOut(t *testing.T) {
	f := newSignInFixture(t, true)
	f.SignIn(t, "personal", "orders:read", "orders:write")
	ctx := context.Background()
	c := f.client(t, "personal")
	if _, err := f.get(t, c, "/api/orders"); err != nil {
		t.Fatal(err)
	}
	sid := c.SID()
	if n := f.s.ActiveRefreshTokens(f.e.Agent().ClientID()); n != 1 {
		t.Fatalf("%d refresh tokens before sign-out", n)
	}
	if err := f.e.SignOut(ctx, f.co.Identifier, "personal"); err != nil {
		t.Fatal(err)
	}
	if n := f.s.ActiveRefreshTokens(f.e.Agent().ClientID()); n != 0 {
		t.Fatalf("%d refresh tokens still valid after sign-out", n)
	}
	if len(f.s.RequestsTo(refcompany.AuthHost, "/oauth/revoke")) != 1 {
		t.Fatal("sign-out did not revoke at the revocation endpoint")
	}
	f.s.ResetRequests()
	tests := []struct {
		path      string
		wantScope bool // the API answers a 401 challenge naming the scopes
	}{{"/api/products", false}, {"/api/orders", true}}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := f.get(t, c, tc.path)
			var pe *transport.ProtocolError
			switch {
			case tc.wantScope && (!errors.As(err, &pe) || !pe.NeedsScopes() || pe.Status != http.StatusUnauthorized):
				t.Fatalf("err = %v, want a 401 challenge", err)
			case !tc.wantScope && (err != nil || resp.StatusCode != http.StatusOK):
				t.Fatalf("resp %+v err %v", resp, err)
			}
			sent := f.sent(tc.path)
			last := sent[len(sent)-1]
			if last.Header.Get("Authorization") != "" || last.Header.Get("DPoP") != "" {
				t.Fatal("a request after sign-out carried a token")
			}
			if got := poppytest.Claims(t, last.Header.Get("Poppy-Session"))["sid"]; got != sid {
				t.Fatalf("sid %v, want the same Session %s continuing signed out", got, sid)
			}
		})
	}
	if err := f.e.SignOut(ctx, f.co.Identifier, ""); err == nil {
		t.Fatal("signing out of the signed-out Session succeeded")
	}
}

// TestSecondAccount: two accounts at one Company use separate Sessions and separate tokens
// (spec 5.4); signing one out leaves the other signed in.
func TestSecondAccount(t *testing.T) {
	f := newSignInFixture(t, true)
	f.SignIn(t, "personal", "orders:read")
	f.SignIn(t, "work", "orders:read")
	ctx := context.Background()
	personal, work := f.client(t, "personal"), f.client(t, "work")
	if personal.SID() == work.SID() {
		t.Fatal("two accounts share a Session")
	}
	f.s.ResetRequests()
	for _, c := range []*engine.Client{personal, work} {
		if resp, err := f.get(t, c, "/api/orders"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: resp %+v err %v", c.Account(), resp, err)
		}
	}
	sent := f.sent("/api/orders")
	_, tp := tokenOf(sent[0])
	_, tw := tokenOf(sent[1])
	if tp == tw || tp == "" {
		t.Fatal("two accounts used one access token")
	}
	sp, sw := poppytest.Claims(t, sent[0].Header.Get("Poppy-Session")), poppytest.Claims(t, sent[1].Header.Get("Poppy-Session"))
	if sp["sid"] != personal.SID() || sw["sid"] != work.SID() {
		t.Fatal("a request went in the other account's Session")
	}
	if n := f.s.ActiveRefreshTokens(f.e.Agent().ClientID()); n != 2 {
		t.Fatalf("%d refresh tokens, want one per account", n)
	}
	if err := f.e.SignOut(ctx, f.co.Identifier, "work"); err != nil {
		t.Fatal(err)
	}
	f.s.ResetRequests()
	if resp, err := f.get(t, personal, "/api/orders"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("personal after signing work out: resp %+v err %v", resp, err)
	}
	if _, err := f.get(t, work, "/api/orders"); err == nil {
		t.Fatal("work is still signed in")
	}
	sent = f.sent("/api/orders")
	if _, tok := tokenOf(sent[0]); tok != tp {
		t.Fatal("signing work out changed personal's token")
	}
	if sent[1].Header.Get("Authorization") != "" {
		t.Fatal("work sent a token after sign-out")
	}
}

// TestServiceURL: the service whose metadata decides the token (spec 4.5) is the MCP server's
// url, the OpenAPI description's directory, a conversation or extension endpoint, or the origin.
func TestServiceURL(t *testing.T) {
	f := newFixture(t, options{})
	co := f.discover(t)
	o := f.s.Origin()
	tests := []struct{ in, want string }{
		{o + "/mcp", o + "/mcp"},
		{o + "/api/orders/ord_1?x=1", o + "/api"},
		{o + "/poppy/conversations/c1/messages", o + "/poppy/conversations"},
		{o + "/poppy/gift-wrap", o + "/poppy/gift-wrap"},
		{o + "/elsewhere", o},
		{f.s.URL(refcompany.OtherHost, "/api/x"), f.s.URL(refcompany.OtherHost, "")},
	}
	for _, tc := range tests {
		if got := engine.ServiceURL(co, tc.in); got != tc.want {
			t.Errorf("ServiceURL(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestServiceResourceChanged: when a service starts to need its own token (its protected
// resource metadata now names its own resource), it answers the default token with invalid_token
// and resource_metadata; the engine reads the metadata again, gets a token for the new resource
// (RFC 8707) and sends the request again, and uses that token only there (spec 4.5).
func TestServiceResourceChanged(t *testing.T) {
	for _, dpop := range []bool{false, true} {
		t.Run(map[bool]string{false: "bearer", true: "dpop"}[dpop], func(t *testing.T) {
			f := newSignInFixture(t, dpop)
			f.SignIn(t, "personal", "orders:read")
			c := f.client(t, "personal")
			if _, err := f.get(t, c, "/api/orders"); err != nil {
				t.Fatal(err)
			}
			f.s.SetAPIResource(true)
			f.s.ResetRequests()
			resp, err := f.get(t, c, "/api/orders")
			if err != nil || resp.StatusCode != http.StatusOK || resp.SignedOut {
				t.Fatalf("resp %+v err %v", resp, err)
			}
			sent := f.sent("/api/orders")
			if len(sent) != 2 {
				t.Fatalf("%d requests, want the refused one and the one with the API's own token", len(sent))
			}
			_, old := tokenOf(sent[0])
			_, nt := tokenOf(sent[1])
			if res, _ := f.s.TokenResource(old); res != f.s.Origin() {
				t.Fatalf("the first request used a token for %q", res)
			}
			if res, _ := f.s.TokenResource(nt); res != f.s.APIResource() {
				t.Fatalf("the retry used a token for %q, want %s", res, f.s.APIResource())
			}
			if len(f.s.RequestsTo(refcompany.ShopHost, "/.well-known/oauth-protected-resource/api")) != 1 {
				t.Fatal("the API's metadata was not read again exactly once")
			}
			// The default token still serves the other services; the API's own token only /api.
			f.s.ResetRequests()
			if _, err := f.get(t, c, "/poppy/conversations"); err != nil {
				t.Fatal(err)
			}
			if _, tok := tokenOf(f.sent("/poppy/conversations")[0]); tok == nt {
				t.Fatal("the API's own token was used at another service")
			}
		})
	}
}

// FuzzServiceURL: ServiceURL names the service a request URL belongs to by spec 4.5 / 7, checked
// against a simple model over URLs built from parts (scheme and host in any case, with or
// without a port, path segments, a trailing slash, a query): the MCP server's url exactly when
// the URL is that server's; else the directory of the OpenAPI description when the URL is that
// directory or below it (whole segments: /api2 is not below /api); else the URL's origin. Any
// other string comes back unchanged, as the MCP url, or as some scheme://host.
func FuzzServiceURL(f *testing.F) {
	f.Add("https://shop.example/api/openapi.json", "https://shop.example/mcp", "https://shop.example/api/orders/1", uint8(0), "api", "mcp", "api/orders/1", uint8(1))
	f.Add("https://shop.example/openapi.json", "https://shop.example/MCP/", "https://SHOP.example/mcp", uint8(0x17), "v1", "mcp", "mcp", uint8(0x22))
	f.Add("://bad", "https://x/%zz", "https://shop.example:8443", uint8(0x31), "api", "api/mcp", "api2/x", uint8(0x42))
	f.Add("", "", "", uint8(0x05), "a/b", "a", "a/b/", uint8(0x13))
	f.Fuzz(func(t *testing.T, openapiURL, mcpURL, raw string, hosts uint8, apiDir, mcpPath, rawPath string, shape uint8) {
		// Any strings: never a panic, and nothing but what the doc says.
		co := &discovery.Company{Channels: discovery.Channels{APIs: []discovery.API{{Type: "openapi", URL: openapiURL}, {Type: "mcp", URL: mcpURL}}}}
		if got := engine.ServiceURL(co, raw); got != raw && got != mcpURL && !strings.Contains(got, "://") {
			t.Fatalf("ServiceURL(%q) = %q", raw, got)
		}
		// URLs built from parts, against the model.
		hostNames := []string{"shop.example", "SHOP.Example", "shop.example:8443", "other.example"}
		schemes := []string{"https", "HTTPS"}
		segs := func(p string) []string {
			var out []string
			for _, s := range strings.Split(p, "/") {
				s = strings.Map(func(r rune) rune {
					if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
						return r
					}
					return -1
				}, s)
				if s != "" && len(out) < 4 {
					out = append(out, s)
				}
			}
			return out
		}
		build := func(scheme, host string, segs []string, slash bool, query string) string {
			u := scheme + "://" + host
			for _, s := range segs {
				u += "/" + s
			}
			if slash {
				u += "/"
			}
			return u + query
		}
		type origin struct{ scheme, host string }
		apiO := origin{schemes[hosts&1], hostNames[hosts>>1&3]}
		mcpO := origin{schemes[hosts>>3&1], hostNames[hosts>>4&3]}
		rawO := origin{schemes[hosts>>6&1], hostNames[(hosts>>7)*3]}
		api, mcpS := segs(apiDir), segs(mcpPath)
		var rawS []string
		switch shape & 3 { // the request URL: below the API directory, at or below the MCP url, or anywhere
		case 0:
			rawS = append(append([]string(nil), api...), segs(rawPath)...)
		case 1:
			rawS = append(append([]string(nil), mcpS...), segs(rawPath)...)
		default:
			rawS = segs(rawPath)
		}
		query := []string{"", "?x=1", "#f", "?a=/mcp"}[shape>>2&3]
		openapi := build(apiO.scheme, apiO.host, append(append([]string(nil), api...), "openapi.json"), false, "")
		mcpU := build(mcpO.scheme, mcpO.host, mcpS, shape&16 != 0, "")
		rawU := build(rawO.scheme, rawO.host, rawS, shape&32 != 0, query)
		co = &discovery.Company{Channels: discovery.Channels{APIs: []discovery.API{{Type: "openapi", URL: openapi}, {Type: "mcp", URL: mcpU}}}}
		same := func(a, b origin) bool {
			return strings.EqualFold(a.scheme, b.scheme) && strings.EqualFold(a.host, b.host)
		}
		want := strings.ToLower(rawO.scheme) + "://" + strings.ToLower(rawO.host)
		switch {
		case same(rawO, mcpO) && slices.Equal(rawS, mcpS):
			want = mcpU
		case same(rawO, apiO) && len(rawS) >= len(api) && slices.Equal(rawS[:len(api)], api):
			want = build(apiO.scheme, apiO.host, api, false, "")
		}
		if got := engine.ServiceURL(co, rawU); got != want {
			t.Fatalf("ServiceURL(%q) = %q, want %q (openapi %q, mcp %q)", rawU, got, want, openapi, mcpU)
		}
	})
}
