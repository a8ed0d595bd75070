package transport_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// account is a real sign-in (oauth.Client, Direct Sign-In at the reference Company) and the
// hooks agentcore/engine builds from it: Authorize (Bearer or DPoP with a proof), OnResponse
// (DPoP nonces) and Refresh.
type account struct {
	f  *fixture
	oc *oauth.Client

	mu         sync.Mutex
	creds      map[string]oauth.Credential
	authorized []string // the tokens Authorize was called with, in order
}

const acct = "personal"

func (f *fixture) signIn(t *testing.T, scopes ...string) *account {
	t.Helper()
	ctx := context.Background()
	oc, err := oauth.New(oauth.Config{Transport: f.tr, Identity: f.agent.Identity, Secrets: store.NewSecrets(store.NewMemoryKV())})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := oc.StartDirect(ctx, oauth.SignInRequest{Company: f.company, Account: acct, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.ApproveSignIn(ctx, flow.URL, "alex@shop.example", scopes); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return &account{f: f, oc: oc, creds: map[string]oauth.Credential{}}
}

func (a *account) token(t *testing.T) string {
	t.Helper()
	cred, err := a.oc.AccessToken(context.Background(), a.f.company, acct, a.f.s.Origin()+"/api")
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.creds[cred.Token()] = cred
	a.mu.Unlock()
	return cred.Token()
}

func (a *account) hooks() transport.Hooks {
	co := a.f.company
	return transport.Hooks{
		Authorize: func(ctx context.Context, req *http.Request, token string) error {
			a.mu.Lock()
			cred, ok := a.creds[token]
			a.authorized = append(a.authorized, token)
			a.mu.Unlock()
			if !ok {
				return errors.New("no Credential for this token")
			}
			return a.oc.Authorize(ctx, co, acct, req, cred)
		},
		OnResponse: func(_ context.Context, resp *http.Response) { a.oc.NoteNonce(resp) },
		Refresh: func(ctx context.Context, rejected string, _ *url.URL) (string, error) {
			if _, err := a.oc.RefreshHook(co, acct, "")(ctx, rejected, nil); err != nil {
				return "", err
			}
			cred, err := a.oc.AccessToken(ctx, co, acct, a.f.s.Origin()+"/api")
			if err != nil {
				return "", err
			}
			a.mu.Lock()
			a.creds[cred.Token()] = cred
			a.mu.Unlock()
			return cred.Token(), nil
		},
	}
}

func newDPoPFixture(t *testing.T, dpop bool, faults ...string) *fixture {
	t.Helper()
	f := newFixture(t, nil, faults...)
	f.s.SetDPoP(dpop)
	f.discover(t)
	return f
}

// TestAuthorizeHook: Hooks.Authorize puts the token on every attempt (Bearer, or DPoP with a
// fresh proof for the attempt: spec 4.5, RFC 9449 §7), also the attempt after a refresh with the
// new token (spec 4.4); a use_dpop_nonce answer is sent again once, with the nonce that
// Hooks.OnResponse kept (RFC 9449 §9). The reference Company verifies each proof.
func TestAuthorizeHook(t *testing.T) {
	tests := []struct {
		name       string
		dpop       bool
		faults     []string
		wantScheme string
		wantFirst  int // requests for the first Do
	}{
		{"bearer", false, nil, "Bearer", 1},
		{"dpop", true, nil, "DPoP", 1},
		{"dpop with a resource nonce", true, []string{refcompany.FaultResourceDPoPNonce}, "DPoP", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newDPoPFixture(t, tc.dpop, tc.faults...)
			a := f.signIn(t, "orders:read")
			c := f.client(t, a.hooks())
			ctx := context.Background()
			url := f.s.URL(refcompany.ShopHost, "/api/orders")
			tok := a.token(t)
			f.s.ResetRequests()
			resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url, AccessToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			sent := f.s.RequestsTo(refcompany.ShopHost, "/api/orders")
			if len(sent) != tc.wantFirst {
				t.Fatalf("%d requests, want %d", len(sent), tc.wantFirst)
			}
			for _, r := range sent {
				if !strings.HasPrefix(r.Header.Get("Authorization"), tc.wantScheme+" ") || (r.Header.Get("DPoP") != "") != tc.dpop {
					t.Fatalf("Authorization %q, DPoP proof %v", strings.Fields(r.Header.Get("Authorization"))[0], r.Header.Get("DPoP") != "")
				}
			}
			// invalid_token: one refresh, then the new token, authorized again.
			f.s.ExpireAccessTokens()
			f.s.ResetRequests()
			resp, err = c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url, AccessToken: tok})
			if err != nil || resp.SignedOut || resp.AccessToken == tok {
				t.Fatalf("after expiry: resp %+v err %v", resp, err)
			}
			resp.Body.Close()
			a.mu.Lock()
			lastAuthorized := a.authorized[len(a.authorized)-1]
			a.mu.Unlock()
			if lastAuthorized != resp.AccessToken {
				t.Fatal("the attempt with the refreshed token was not authorized through the hook")
			}
		})
	}
}

// TestAuthorizeHookFails: a failing Authorize hook stops the request before anything is sent.
func TestAuthorizeHookFails(t *testing.T) {
	f := newDPoPFixture(t, false)
	c := f.client(t, transport.Hooks{Authorize: func(context.Context, *http.Request, string) error {
		return errors.New("the keyring is locked")
	}})
	f.s.ResetRequests()
	_, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/orders"), AccessToken: "t"})
	if err == nil || !strings.Contains(err.Error(), "the keyring is locked") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.s.RequestsTo(refcompany.ShopHost, "/api/orders")); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestSignedOutReason: when the refresh fails because the Company no longer accepts the refresh
// token (invalid_grant), the request continues signed out without Authorization or DPoP, and
// Response.SignedOutReason carries the refresh error (spec 5.5).
func TestSignedOutReason(t *testing.T) {
	f := newDPoPFixture(t, true)
	a := f.signIn(t, "orders:read")
	c := f.client(t, a.hooks())
	tok := a.token(t)
	f.s.ExpireAccessTokens()
	if err := f.s.SetFault(refcompany.FaultRefreshRotation, true); err != nil {
		t.Fatal(err)
	}
	f.s.ResetRequests()
	resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products"), AccessToken: tok})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !resp.SignedOut || !errors.Is(resp.SignedOutReason, oauth.ErrSignedOut) {
		t.Fatalf("SignedOut %v, reason %v", resp.SignedOut, resp.SignedOutReason)
	}
	sent := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
	if last := sent[len(sent)-1]; last.Header.Get("Authorization") != "" || last.Header.Get("DPoP") != "" {
		t.Fatal("the signed-out attempt carried a token or proof")
	}
}
