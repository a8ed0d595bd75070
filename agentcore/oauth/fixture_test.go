package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// fixture: a running reference Company, the engine's dev-mode transport, a discovered Company,
// a real test agent identity, an in-memory secret store and the OAuth client under test.
type fixture struct {
	s       *refcompany.Server
	tr      *transport.Transport
	co      *discovery.Company
	agent   *refcompany.TestAgent
	secrets store.Secrets
	c       *oauth.Client
	clock   *refcompany.Clock
	logs    *strings.Builder
	sleeps  []time.Duration
	mu      sync.Mutex
	// onSleep runs on each poll wait (Device Sign-In), after the clock advanced.
	onSleep func(n int)
}

type fixtureOpts struct {
	faults   []string
	dpop     bool
	fakeTime bool
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: refcompany.NewFrozenClock(time.Now()), logs: &strings.Builder{}}
	now := time.Now
	if o.fakeTime {
		now = f.clock.Now
	}
	s := poppytest.Start(t, refcompany.Options{Faults: o.faults, Now: now})
	s.SetDPoP(o.dpop)
	f.s = s
	f.tr = poppytest.Transport(t, s, nil)
	d, err := discovery.New(discovery.Config{Transport: f.tr})
	if err != nil {
		t.Fatal(err)
	}
	f.co, err = d.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	f.agent, err = s.NewTestAgent(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	f.secrets = store.NewSecrets(store.NewMemoryKV())
	var lmu sync.Mutex
	logger := slogTo(f.logs, &lmu)
	f.c, err = oauth.New(oauth.Config{Transport: f.tr, Identity: f.agent.Identity, Secrets: f.secrets, Now: now, Logger: logger,
		DirectTimeout: 20 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			n := len(f.sleeps)
			hook := f.onSleep
			f.mu.Unlock()
			f.clock.Advance(d)
			if hook != nil {
				hook(n)
			}
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var requestRE = regexp.MustCompile(`name="request" value="([^"]+)"`)

// browser plays the User's browser over plain HTTP: it opens the authorization URL, answers the
// consent form (decision "approve" or "deny", with the ticked scopes) and returns the URL the
// Company sent the browser back to.
func (f *fixture) browser(t testing.TB, authURL, decision string, ticked []string) string {
	t.Helper()
	hc := f.tr.NoRedirectClient()
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("consent page: HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	m := requestRE.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no request id in the consent page: %s", body)
	}
	form := url.Values{"request": {string(m[1])}, "decision": {decision}, "account": {"alex@shop.example"}, "scope": ticked}
	resp, err = hc.PostForm(f.s.Issuer()+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent answer: HTTP %d, want 303", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// loopback sends the browser to the engine's loopback listener (plain http on 127.0.0.1).
func loopback(t testing.TB, raw string) (int, http.Header, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// signIn runs a whole Direct Sign-In with the HTTP browser, approving ticked scopes.
func (f *fixture) signIn(t testing.TB, account string, scopes []string) *oauth.Result {
	t.Helper()
	ctx := context.Background()
	flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: account, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	back := f.browser(t, flow.URL, "approve", oauth.Plan(scopes, nil))
	loopback(t, back)
	res, err := flow.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *fixture) bundle(t testing.TB, account string) *store.CompanyBundle {
	t.Helper()
	b, err := f.secrets.LoadCompany(context.Background(), f.co.Identifier, account)
	if errors.Is(err, store.ErrNotFound) {
		return &store.CompanyBundle{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func defaultToken(b *store.CompanyBundle) store.Token {
	for _, t := range b.Tokens {
		if t.Resource == "" {
			return t
		}
	}
	return store.Token{}
}
