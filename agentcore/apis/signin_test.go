package apis_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// signedIn is an account signed in with the real oauth.Client through Direct Sign-In, and the
// apis.Config hooks that use it the way agentcore/engine does: the token of each service
// (spec 4.5, 7), Bearer or DPoP with a proof (RFC 9449), nonces kept, one refresh.
type signedIn struct {
	f       *fixture
	oc      *oauth.Client
	account string

	mu    sync.Mutex
	creds map[string]oauth.Credential
}

// setDPoP switches DPoP binding at the issuer and discovers the Company again, so its metadata
// lists dpop_signing_alg_values_supported (spec 4.5).
func (f *fixture) setDPoP(t *testing.T, on bool) {
	t.Helper()
	f.s.SetDPoP(on)
	disc, err := discovery.New(discovery.Config{Transport: f.tr, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if f.company, err = disc.Discover(context.Background(), f.s.Domain); err != nil {
		t.Fatal(err)
	}
	if got := len(f.company.AuthorizationServer.DPoPSigningAlgs) > 0; got != on {
		t.Fatalf("the issuer lists DPoP algorithms: %v, want %v", got, on)
	}
}

func (f *fixture) signIn(t *testing.T, account string, scopes ...string) *signedIn {
	t.Helper()
	ctx := context.Background()
	oc, err := oauth.New(oauth.Config{Transport: f.tr, Identity: f.agent.Identity, Secrets: store.NewSecrets(store.NewMemoryKV()), Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := oc.StartDirect(ctx, oauth.SignInRequest{Company: f.company, Account: account, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.ApproveSignIn(ctx, flow.URL, account+"@shop.example", scopes); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return &signedIn{f: f, oc: oc, account: account, creds: map[string]oauth.Credential{}}
}

// service is the service URL of a request URL: the MCP server's url, else the Orders API.
func (si *signedIn) service(rawURL string) string {
	if rawURL == si.f.s.MCPURL() {
		return rawURL
	}
	return si.f.s.Origin() + "/api"
}

func (si *signedIn) token(ctx context.Context, rawURL string) (string, error) {
	cred, err := si.oc.AccessToken(ctx, si.f.company, si.account, si.service(rawURL))
	if errors.Is(err, oauth.ErrNotSignedIn) {
		return "", nil // signed out (spec 5.4)
	}
	if err != nil {
		return "", err
	}
	si.mu.Lock()
	si.creds[cred.Token()] = cred
	si.mu.Unlock()
	return cred.Token(), nil
}

// hooks are the pipeline's sign-in hooks over the real oauth.Client, as agentcore/engine wires
// them.
func (si *signedIn) hooks() transport.Hooks {
	f := si.f
	return transport.Hooks{
		Token: func(ctx context.Context, u *url.URL) (string, error) { return si.token(ctx, u.String()) },
		Authorize: func(ctx context.Context, req *http.Request, token string) error {
			si.mu.Lock()
			cred, ok := si.creds[token]
			si.mu.Unlock()
			if !ok {
				return errors.New("a token this test never handed out")
			}
			return si.oc.Authorize(ctx, f.company, si.account, req, cred)
		},
		OnResponse: func(_ context.Context, resp *http.Response) { si.oc.NoteNonce(resp) },
		Refresh: func(ctx context.Context, rejected string, u *url.URL) (string, error) {
			si.mu.Lock()
			cred := si.creds[rejected]
			si.mu.Unlock()
			if _, err := si.oc.RefreshHook(f.company, si.account, cred.Resource)(ctx, rejected, u); err != nil {
				return "", err
			}
			svc := cred.Resource
			if svc == "" {
				svc = f.s.Origin() + "/api"
			}
			return si.token(ctx, svc)
		},
	}
}

func (si *signedIn) client(t *testing.T) *apis.Client {
	t.Helper()
	return si.f.clientOver(t, si.f.tr, si.f.session(t, si.account, opsV2), si.f.dest, si.hooks(), nil)
}

// TestSignedInSendAndMCP: Send and the MCP connection, both through the pipeline, take each
// service's token from its Token hook (the MCP server's own, for resource = its url: spec 7), put
// it on every attempt with its Authorize hook (Bearer, or DPoP with a fresh proof: RFC 9449 §7),
// and send a request again once with the resource's nonce after use_dpop_nonce (RFC 9449 §9).
// The reference Company verifies binding, proof, expiry and resource.
func TestSignedInSendAndMCP(t *testing.T) {
	tests := []struct {
		name       string
		mcp, dpop  bool
		faults     []string
		wantScheme string
		wantRetry  bool
	}{
		{name: "send bearer", wantScheme: "Bearer"},
		{name: "send dpop", dpop: true, wantScheme: "DPoP"},
		{name: "send dpop nonce", dpop: true, faults: []string{refcompany.FaultResourceDPoPNonce}, wantScheme: "DPoP", wantRetry: true},
		{name: "mcp bearer", mcp: true, wantScheme: "Bearer"},
		{name: "mcp dpop", mcp: true, dpop: true, wantScheme: "DPoP"},
		{name: "mcp dpop nonce", mcp: true, dpop: true, faults: []string{refcompany.FaultResourceDPoPNonce}, wantScheme: "DPoP", wantRetry: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.faults...)
			f.setDPoP(t, tc.dpop)
			si := f.signIn(t, "alice", "orders:read", "orders:write")
			c := si.client(t)
			ctx := context.Background()
			f.s.ResetRequests()
			path, wantResource := "/api/orders", f.s.Origin()
			if tc.mcp {
				path, wantResource = refcompany.MCPPath, f.s.MCPURL()
				m, err := c.ConnectMCP(ctx, apis.Select(f.company.Document.APIs).MCP[0])
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				res, err := m.CallTool(ctx, apis.ToolCall{Name: "search_products", Arguments: []byte(`{"query":"jacket"}`)})
				if err != nil || res.IsError {
					t.Fatalf("search_products: %+v, %v", res, err)
				}
			} else {
				res, err := c.Send(ctx, &apis.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, path)})
				if err != nil || res.Status != http.StatusOK {
					t.Fatalf("Send: %v", err)
				}
			}
			sent := f.s.RequestsTo(refcompany.ShopHost, path)
			for _, r := range sent {
				scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
				if scheme != tc.wantScheme || (r.Header.Get("DPoP") != "") != tc.dpop {
					t.Fatalf("a request carried Authorization scheme %q and DPoP %v", scheme, r.Header.Get("DPoP") != "")
				}
				if res, _ := f.s.TokenResource(tok); res != wantResource {
					t.Fatalf("a request to %s carried a token for %q, want %q", path, res, wantResource)
				}
			}
			retried := len(sent) >= 2 && bytes.Equal(sent[0].Body, sent[1].Body) && sent[0].Header.Get("DPoP") != sent[1].Header.Get("DPoP")
			if retried != tc.wantRetry {
				t.Fatalf("first request sent again: %v, want %v (%d requests)", retried, tc.wantRetry, len(sent))
			}
		})
	}
}

// TestMCPRefresh: an MCP request whose token the Company rejects is refreshed once and sent again
// with the new token (spec 4.4, 7); when the Company no longer accepts the refresh token
// (invalid_grant), the request continues signed out (spec 5.5, 7): listing tools works, and a
// tool that needs the account then gets the challenge for it.
func TestMCPRefresh(t *testing.T) {
	tests := []struct {
		name        string
		revoke      bool
		wantSignOut bool
	}{
		{name: "refreshed"},
		{name: "refresh token revoked", revoke: true, wantSignOut: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.setDPoP(t, true)
			si := f.signIn(t, "alice", "orders:read", "orders:write")
			c := si.client(t)
			ctx := context.Background()
			m, err := c.ConnectMCP(ctx, apis.Select(f.company.Document.APIs).MCP[0])
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			f.s.ExpireAccessTokens()
			if tc.revoke {
				if err := f.s.SetFault(refcompany.FaultRefreshRotation, true); err != nil {
					t.Fatal(err)
				}
			}
			f.s.ResetRequests()
			_, err = m.ListTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantSignOut {
				last := f.s.RequestsTo(refcompany.ShopHost, refcompany.MCPPath)
				if n := len(last); n < 2 || last[n-1].Header.Get("Authorization") != "" {
					t.Fatalf("%d MCP requests; the last must go signed out", n)
				}
				_, err := m.CallTool(ctx, apis.ToolCall{Name: "exchange_item", Arguments: []byte(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)})
				var pe *transport.ProtocolError
				if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized || !pe.NeedsScopes() {
					t.Fatalf("err = %v, want the challenge for the account", err)
				}
				return
			}
			sent := f.s.RequestsTo(refcompany.ShopHost, refcompany.MCPPath)
			if len(sent) < 2 || sent[0].Header.Get("Authorization") == sent[1].Header.Get("Authorization") {
				t.Fatalf("%d MCP requests; the retry must carry the refreshed token", len(sent))
			}
			_, nt, _ := strings.Cut(sent[1].Header.Get("Authorization"), " ")
			if res, _ := f.s.TokenResource(nt); res != f.s.MCPURL() {
				t.Fatalf("the refreshed MCP token is for %q", res)
			}
		})
	}
}
