package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestSignedRequestEndToEnd: discovery → a real Session (agentcore/session) → the engine
// transport → the reference Company verifying with agentcore/sessioncheck (spec 3, 5.2, 5.3).
func TestSignedRequestEndToEnd(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	c := f.client(t, transport.Hooks{})
	resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"session":true`) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
	api := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
	if len(api) != 1 || api[0].Header.Get("Poppy-Session") == "" || api[0].Header.Get("Poppy-Version") != "0.4" {
		t.Fatalf("API requests = %+v", api)
	}
	if api[0].Header.Get("Authorization") != "" {
		t.Fatal("a signed-out request carried Authorization")
	}
	// Discovery requests, metadata fetches of the Company, and the verifier's own fetches never
	// carry the Session header or credentials (spec 3.4, 5.2).
	for _, r := range f.s.Requests() {
		if strings.HasPrefix(r.Path, "/api/") {
			continue
		}
		for _, h := range []string{"Poppy-Session", "Poppy-Version", "Authorization", "Dpop", "Cookie"} {
			if r.Header.Get(h) != "" {
				t.Errorf("%s %s%s carried %s", r.Method, r.Host, r.Path, h)
			}
		}
	}
	if len(f.s.RequestsTo(refcompany.AgentHost, "/agent.json")) == 0 {
		t.Error("the Company never fetched the agent's client metadata: Session verification did not run")
	}
}

// TestSessionJWTOnlyToDestinations: the Session JWT (and a token) never go to a URL that is not a
// Session destination, and nothing is sent there (spec 5.2, DESIGN invariant 6).
func TestSessionJWTOnlyToDestinations(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	c := f.client(t, transport.Hooks{})
	u := func(host, path string) string { return f.s.URL(host, path) }
	tests := []struct {
		name, url string
		allowed   bool
	}{
		{"API under the listed API's directory", u(refcompany.ShopHost, "/api/products"), true},
		{"conversation route under the endpoint", u(refcompany.ShopHost, "/poppy/conversations/c_1/messages"), true},
		{"browser authorize", u(refcompany.ShopHost, "/poppy/browser-session/authorize"), true},
		{"feedback", u(refcompany.ShopHost, "/poppy/feedback"), true},
		{"extension endpoint", u(refcompany.ShopHost, "/poppy/gift-wrap/wrap"), true},
		{"poppy.json", u(refcompany.ShopHost, "/.well-known/poppy.json"), false},
		{"protected resource metadata", u(refcompany.ShopHost, "/.well-known/oauth-protected-resource"), false},
		{"API description document", u(refcompany.ShopHost, "/api/openapi.json"), false},
		{"token endpoint", u(refcompany.AuthHost, "/oauth/token"), false},
		{"web page on the same host", u(refcompany.ShopHost, "/"), false},
		{"browser-session page itself", u(refcompany.ShopHost, "/poppy/browser-session"), false},
		{"sibling path sharing a prefix", u(refcompany.ShopHost, "/apix"), false},
		{"another host", u(refcompany.OtherHost, "/api/products"), false},
		{"agent host", u(refcompany.AgentHost, "/agent.json"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.s.ResetRequests()
			resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: tc.url, AccessToken: "tok"})
			if resp != nil {
				resp.Body.Close()
			}
			if tc.allowed {
				if errors.Is(err, transport.ErrNotSessionDestination) {
					t.Fatalf("refused a Session destination: %v", err)
				}
				return
			}
			if !errors.Is(err, transport.ErrNotSessionDestination) {
				t.Fatalf("err = %v, want ErrNotSessionDestination", err)
			}
			if n := len(f.s.Requests()); n != 0 {
				t.Fatalf("%d requests reached the Company", n)
			}
		})
	}
}

// TestRedirectProtected: a protected endpoint's redirect is never followed (spec 3).
func TestRedirectProtected(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	if err := f.s.SetFault(refcompany.FaultRedirectProtected, true); err != nil {
		t.Fatal(err)
	}
	c := f.client(t, transport.Hooks{})
	_, err := c.Do(context.Background(), &transport.Request{Method: http.MethodPost, URL: f.s.URL(refcompany.ShopHost, "/api/products"),
		Body: []byte(`{}`), AccessToken: "tok"})
	var re *transport.RedirectError
	if !errors.As(err, &re) || !errors.Is(err, transport.ErrRedirectRefused) {
		t.Fatalf("err = %v, want *RedirectError", err)
	}
	if !strings.Contains(re.Location, "/moved/api/products") || re.Status != http.StatusTemporaryRedirect {
		t.Fatalf("RedirectError = %+v", re)
	}
	for _, r := range f.s.Requests() {
		if strings.HasPrefix(r.Path, "/moved") {
			t.Fatalf("the redirect was followed: %s %s", r.Method, r.Path)
		}
	}
}

// Test429Burst: the engine waits at least Retry-After before sending the request again, and
// gives up after its bound (spec 5.6).
func Test429Burst(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		wantErr    bool
		wantSent   int
	}{
		{"retries after waiting", 3, false, 3},
		{"gives up at the bound", 1, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *transport.Config) { c.Max429Retries = tc.maxRetries })
			f.discover(t)
			f.s.SetFault(refcompany.Fault429Burst, true) // 2 × 429, Retry-After: 1
			c := f.client(t, transport.Hooks{})
			resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products")})
			if tc.wantErr {
				var pe *transport.ProtocolError
				if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter.Seconds() != 1 {
					t.Fatalf("err = %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if n := len(f.s.RequestsTo(refcompany.ShopHost, "/api/products")); n != tc.wantSent {
				t.Fatalf("sent %d times, want %d", n, tc.wantSent)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.sleeps) != tc.wantSent-1 {
				t.Fatalf("slept %v", f.sleeps)
			}
			for _, d := range f.sleeps {
				if d.Seconds() < 1 {
					t.Fatalf("waited %s, less than Retry-After", d)
				}
			}
		})
	}
}

// TestSessionEnded: session_ended starts a new Session (new sid) and re-sends once; a second
// session_ended stops (spec 5.5, 7).
func TestSessionEnded(t *testing.T) {
	tests := []struct {
		name          string
		faultOffInNew bool
		wantErr       bool
	}{
		{"new Session succeeds", true, false},
		{"new Session ended too", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, refcompany.FaultSessionEnded)
			f.discover(t)
			renews := 0
			c := f.client(t, transport.Hooks{RenewSession: func(ctx context.Context) (transport.Signer, error) {
				renews++
				if tc.faultOffInNew {
					f.s.SetFault(refcompany.FaultSessionEnded, false)
				}
				ns, err := f.agent.Sessions.Renew(ctx, f.sess)
				if err != nil {
					return nil, err
				}
				f.sess = ns
				return ns, nil
			}})
			resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products")})
			if tc.wantErr {
				if !transport.IsCode(err, transport.CodeSessionEnded) {
					t.Fatalf("err = %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if !resp.Renewed {
					t.Error("Response.Renewed not set")
				}
				resp.Body.Close()
			}
			if renews != 1 {
				t.Fatalf("RenewSession called %d times, want 1", renews)
			}
			reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
			if len(reqs) != 2 {
				t.Fatalf("sent %d times, want 2", len(reqs))
			}
			if a, b := poppytest.Claims(t, reqs[0].Header.Get("Poppy-Session"))["sid"], poppytest.Claims(t, reqs[1].Header.Get("Poppy-Session"))["sid"]; a == b {
				t.Fatalf("the retry reused sid %q", a)
			}
		})
	}
}

// TestVersionUnsupported: version_unsupported → poppy.json again without cache; the same version
// stops, another version starts a new Session and re-sends once (spec 3.4).
func TestVersionUnsupported(t *testing.T) {
	t.Run("same version stops", func(t *testing.T) {
		f := newFixture(t, nil, refcompany.FaultVersionUnsupported)
		f.discover(t)
		before := len(f.s.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json"))
		c := f.client(t, transport.Hooks{Rediscover: func(ctx context.Context) (transport.Rediscovery, error) {
			co, err := f.disc.Discover(ctx, f.s.Domain, discoveryNoCache())
			if err != nil {
				return transport.Rediscovery{}, err
			}
			return transport.Rediscovery{Version: co.Version}, nil
		}})
		_, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products")})
		var pe *transport.ProtocolError
		if !errors.As(err, &pe) || pe.Code != transport.CodeVersionUnsupported || !strings.Contains(pe.Note, "still chooses version 0.4") {
			t.Fatalf("err = %v", err)
		}
		if after := len(f.s.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json")); after != before+1 {
			t.Fatalf("poppy.json fetched %d more times, want 1 (no cache)", after-before)
		}
		if n := len(f.s.RequestsTo(refcompany.ShopHost, "/api/products")); n != 1 {
			t.Fatalf("request sent %d times, want 1", n)
		}
	})
	t.Run("changed version re-sends once in a new Session", func(t *testing.T) {
		f := newFixture(t, nil, refcompany.FaultVersionUnsupported)
		f.discover(t)
		c := f.client(t, transport.Hooks{Rediscover: func(ctx context.Context) (transport.Rediscovery, error) {
			// Simulates a Company that moved to a version this engine also implements.
			f.s.SetFault(refcompany.FaultVersionUnsupported, false)
			ns, err := f.agent.Sessions.Renew(ctx, f.sess)
			return transport.Rediscovery{Version: "0.4-next", Signer: ns}, err
		}})
		resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products")})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
		if len(reqs) != 2 || poppytest.Claims(t, reqs[0].Header.Get("Poppy-Session"))["sid"] == poppytest.Claims(t, reqs[1].Header.Get("Poppy-Session"))["sid"] {
			t.Fatalf("want 2 requests in 2 Sessions, got %d", len(reqs))
		}
	})
}

// TestTokenErrors: invalid_token refresh / continue signed out, 401 challenge and
// insufficient_scope expose scopes (spec 7, 5.5).
func TestTokenErrors(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	f.s.AddAccessToken("good", f.agent.ClientID, "orders:read")
	f.s.AddAccessToken("weak", f.agent.ClientID)
	orders := f.s.URL(refcompany.ShopHost, "/api/orders")
	products := f.s.URL(refcompany.ShopHost, "/api/products")
	refreshTo := func(tok string) func(context.Context, string, *url.URL) (string, error) {
		return func(context.Context, string, *url.URL) (string, error) { return tok, nil }
	}
	tests := []struct {
		name       string
		url, token string
		refresh    func(context.Context, string, *url.URL) (string, error)
		wantStatus int
		wantCode   string
		wantScopes string
		signedOut  bool
	}{
		{"refresh hook gives a new token", orders, "stale", refreshTo("good"), 200, "", "", false},
		{"no refresh hook: continue signed out", products, "stale", nil, 200, "", "", true},
		{"refresh fails: continue signed out", products, "stale", func(context.Context, string, *url.URL) (string, error) { return "", errors.New("invalid_grant") }, 200, "", "", true},
		{"signed out at an account endpoint: 401 challenge", orders, "stale", nil, 401, "", "orders:read", false},
		{"insufficient_scope", orders, "weak", nil, 403, transport.CodeInsufficientScope, "orders:read orders:write", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := f.client(t, transport.Hooks{Refresh: tc.refresh})
			resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: tc.url, AccessToken: tc.token})
			if tc.wantStatus == 200 {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.SignedOut != tc.signedOut {
					t.Fatalf("SignedOut = %v", resp.SignedOut)
				}
				return
			}
			var pe *transport.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Status != tc.wantStatus || pe.Code != tc.wantCode || strings.Join(pe.Scopes, " ") != tc.wantScopes || !pe.NeedsScopes() {
				t.Fatalf("ProtocolError = %+v", pe)
			}
		})
	}
}

// TestExtensionRequired: extension_required names the extension, from WWW-Authenticate (APIs) or
// the JSON body (protocol endpoints) (spec 3.3, 7, 8.13).
func TestExtensionRequired(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	c := f.client(t, transport.Hooks{})
	for _, tc := range []struct{ name, method, path string }{
		{"API via WWW-Authenticate", http.MethodPost, "/api/gift-wrap"},
		{"protocol endpoint via JSON body", http.MethodPost, "/poppy/conversations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Do(context.Background(), &transport.Request{Method: tc.method, URL: f.s.URL(refcompany.ShopHost, tc.path), Body: []byte(`{}`)})
			var pe *transport.ProtocolError
			if !errors.As(err, &pe) || pe.Code != transport.CodeExtensionRequired || pe.Extension != "operations" || pe.Status != 403 {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestInvalidSessionStops: invalid_session is returned at once, never retried (spec 5.3, 7).
func TestInvalidSessionStops(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	dest, _ := f.company.SessionDestinations()
	bad := transport.SignerFunc(func(ctx context.Context, r *http.Request, tok string) error {
		r.Header.Set("Poppy-Session", "eyJhbGciOiJub25lIn0.e30.")
		return nil
	})
	renews := 0
	c, err := f.tr.Session(transport.SessionConfig{Signer: bad, Destinations: dest, Version: "0.4",
		Hooks: transport.Hooks{RenewSession: func(context.Context) (transport.Signer, error) { renews++; return bad, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/products")})
	if !transport.IsCode(err, transport.CodeInvalidSession) {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.s.RequestsTo(refcompany.ShopHost, "/api/products")); n != 1 || renews != 0 {
		t.Fatalf("sent %d times, renewed %d times", n, renews)
	}
}

// TestObserverRedacts: the observer sees every exchange, never a secret (DESIGN invariant 5).
func TestObserverRedacts(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	f.s.AddAccessToken("secret-access-token", f.agent.ClientID, "orders:read")
	c := f.client(t, transport.Hooks{})
	resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/orders"), AccessToken: "secret-access-token"})
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	sent := f.s.RequestsTo(refcompany.ShopHost, "/api/orders")[0].Header.Get("Poppy-Session")
	f.mu.Lock()
	defer f.mu.Unlock()
	var found bool
	for _, ex := range f.exchanges {
		all := ex.URL + string(ex.RequestBody) + string(ex.ResponseBody)
		for k, v := range ex.RequestHeader {
			all += k + strings.Join(v, ",")
		}
		if strings.Contains(all, sent) || strings.Contains(all, "secret-access-token") {
			t.Fatalf("a secret reached the observer: %+v", ex)
		}
		if strings.HasSuffix(ex.URL, "/api/orders") {
			found = true
			if ex.Status != 200 || ex.RequestHeader.Get("Poppy-Session") != "[redacted]" || ex.RequestHeader.Get("Authorization") != "[redacted]" || !strings.Contains(string(ex.ResponseBody), "ord_1") {
				t.Fatalf("exchange = %+v", ex)
			}
		}
	}
	if !found {
		t.Fatal("the API exchange was not observed")
	}
}

// TestRetryAfterTooLong: a Retry-After beyond the engine's limit is not waited for (spec 5.6
// still holds: the request is not sent again before it).
func TestRetryAfterTooLong(t *testing.T) {
	f := newFixture(t, nil)
	f.discover(t)
	f.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	var db transport.DestinationsBuilder
	db.Prefix(f.s.URL(refcompany.OtherHost, "/api"))
	c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.OtherHost, "/api/x")})
	var pe *transport.ProtocolError
	if !errors.As(err, &pe) || pe.Status != 429 || pe.RetryAfter.Hours() != 1 || !strings.Contains(pe.Note, "not waiting") {
		t.Fatalf("err = %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sleeps) != 0 || len(f.s.RequestsTo(refcompany.OtherHost, "/api/x")) != 1 {
		t.Fatalf("slept %v", f.sleeps)
	}
}
