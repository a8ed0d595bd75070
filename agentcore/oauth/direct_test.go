package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

func TestDirectSignIn(t *testing.T) {
	both := []string{"orders:read", "orders:write"}
	tests := []struct {
		name     string
		faults   []string
		decision string
		ticked   []string
		tamper   func(q url.Values) // changes the response the browser brings back
		wantErr  func(error) bool
		granted  []string
		page     string // text the loopback page must contain
	}{
		{name: "approve all", decision: "approve", ticked: both, granted: both, page: "You signed in to Shop"},
		{name: "approve fewer", decision: "approve", ticked: []string{"orders:read"}, granted: []string{"orders:read"}, page: "You signed in"},
		{name: "deny", decision: "deny", wantErr: func(err error) bool { return errors.Is(err, oauth.ErrDeclined) }, page: "You declined"},
		{name: "no scope ticked is a decline", decision: "approve", ticked: nil, wantErr: func(err error) bool { return errors.Is(err, oauth.ErrDeclined) }, page: "You declined"},
		{name: "iss missing", faults: []string{refcompany.FaultIssMissing}, decision: "approve", ticked: both,
			wantErr: func(err error) bool { return strings.Contains(err.Error(), "carries no iss") }, page: "did not come from"},
		{name: "iss wrong", faults: []string{refcompany.FaultIssWrong}, decision: "approve", ticked: both,
			wantErr: func(err error) bool { return strings.Contains(err.Error(), "RFC 9207") }, page: "did not come from"},
		{name: "iss wrong on access_denied", faults: []string{refcompany.FaultIssWrong}, decision: "deny",
			wantErr: func(err error) bool {
				return strings.Contains(err.Error(), "RFC 9207") && !errors.Is(err, oauth.ErrDeclined)
			}, page: "did not come from"},
		{name: "iss missing on access_denied", faults: []string{refcompany.FaultIssMissing}, decision: "deny",
			wantErr: func(err error) bool {
				return strings.Contains(err.Error(), "carries no iss") && !errors.Is(err, oauth.ErrDeclined)
			}, page: "did not come from"},
		{name: "scope wider than requested", faults: []string{refcompany.FaultScopeWider}, decision: "approve", ticked: []string{"orders:read"},
			wantErr: func(err error) bool { return strings.Contains(err.Error(), "beyond those requested") }, page: "could not get access"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{faults: tc.faults})
			ctx := context.Background()
			var opened string
			flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: both,
				Open: func(u string) error { opened = u; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if opened != flow.URL || flow.OpenErr != nil {
				t.Fatalf("Open got %q (err %v), want the authorization URL", opened, flow.OpenErr)
			}
			au, _ := url.Parse(flow.URL)
			q := au.Query()
			for k, want := range map[string]string{"response_type": "code", "code_challenge_method": "S256", "scope": "orders:read orders:write", "client_id": f.agent.ClientID} {
				if q.Get(k) != want {
					t.Errorf("authorization URL %s = %q, want %q", k, q.Get(k), want)
				}
			}
			if !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") || len(q.Get("code_challenge")) != 43 || len(q.Get("state")) < 22 {
				t.Errorf("authorization URL lacks a loopback redirect_uri, S256 challenge or state: %s", flow.URL)
			}
			back := f.browser(t, flow.URL, tc.decision, tc.ticked)
			bu, _ := url.Parse(back)
			if tc.tamper != nil {
				bq := bu.Query()
				tc.tamper(bq)
				bu.RawQuery = bq.Encode()
			}
			status, hdr, page := loopback(t, bu.String())
			res, err := flow.Wait(ctx)
			if hdr.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("loopback page headers: %v", hdr)
			}
			if !strings.Contains(page, tc.page) || !strings.Contains(page, "You can close this tab") {
				t.Errorf("loopback page (HTTP %d) does not say %q and that the tab can be closed:\n%s", status, tc.page, page)
			}
			if c := bu.Query().Get("code"); c != "" && strings.Contains(page, c) {
				t.Error("the loopback page contains the authorization code")
			}
			b := f.bundle(t, "personal")
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("Wait error = %v, want the table's error", err)
				}
				if len(b.Tokens) != 0 {
					t.Errorf("a failed sign-in stored tokens: %+v", b.Tokens)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Granted, tc.granted) {
				t.Errorf("granted %v, want %v", res.Granted, tc.granted)
			}
			tok := defaultToken(b)
			if tok.RefreshToken == "" || tok.AccessToken == "" || !slices.Equal(tok.Scopes, tc.granted) || tok.TokenType != "Bearer" {
				t.Errorf("stored token %+v", tok)
			}
			if strings.Contains(page, tok.AccessToken) || strings.Contains(page, tok.RefreshToken) {
				t.Error("the loopback page contains a token")
			}
			// The listener took exactly one callback and is closed.
			if _, err := (&http.Client{}).Get(bu.String()); err == nil {
				t.Error("the loopback listener still answers after its one callback")
			}
			// The token works at the reference Company's protected endpoints.
			if at, ok := f.s.TokenResource(tok.AccessToken); !ok || at != f.s.Origin() {
				t.Errorf("the Company does not know the access token as a default token (%q, %v)", at, ok)
			}
		})
	}
}

// TestDirectSignInIgnoresStrayRequests: a loopback request without the sign-in's state (a web
// page scanning local ports, another process, a forged answer) gets a plain 400 page and neither
// takes the one callback nor ends the sign-in; the real answer then signs in, and the listener
// closes after it (spec 4.2, RFC 6749 §10.12).
func TestDirectSignInIgnoresStrayRequests(t *testing.T) {
	scopes := []string{"orders:read"}
	tests := []struct {
		name  string
		stray func(redirect, back *url.URL) string // the stray request's URL
		// notFound: the request is not for the callback path at all (the listener's mux
		// answers 404 and the callback never sees it).
		notFound bool
	}{
		{name: "bare loopback address", stray: func(redirect, _ *url.URL) string { return redirect.String() }},
		{name: "other path", notFound: true, stray: func(redirect, _ *url.URL) string {
			return redirect.ResolveReference(&url.URL{Path: "/favicon.ico"}).String()
		}},
		{name: "real answer without state", stray: func(_, back *url.URL) string { return withQuery(back, func(q url.Values) { q.Del("state") }) }},
		{name: "real answer with a forged state", stray: func(_, back *url.URL) string {
			return withQuery(back, func(q url.Values) { q.Set("state", "forged") })
		}},
		{name: "state given twice", stray: func(_, back *url.URL) string {
			return withQuery(back, func(q url.Values) { q.Add("state", q.Get("state")) })
		}},
		{name: "forged error answer", stray: func(redirect, _ *url.URL) string {
			return withQuery(redirect, func(q url.Values) { q.Set("error", "access_denied"); q.Set("state", "guess") })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			ctx := context.Background()
			flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: scopes})
			if err != nil {
				t.Fatal(err)
			}
			redirect, _ := url.Parse(mustQuery(t, flow.URL).Get("redirect_uri"))
			back, _ := url.Parse(f.browser(t, flow.URL, "approve", scopes))
			for range 3 {
				status, hdr, page := loopback(t, tc.stray(redirect, back))
				if tc.notFound {
					if status != http.StatusNotFound {
						t.Fatalf("request to another path: HTTP %d", status)
					}
					continue
				}
				if status != http.StatusBadRequest || !strings.Contains(page, "changed nothing") ||
					!strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
					t.Fatalf("stray request: HTTP %d, page:\n%s", status, page)
				}
			}
			select {
			case <-flow.Done():
				_, err := flow.Wait(ctx)
				t.Fatalf("a stray request ended the sign-in: %v", err)
			default:
			}
			status, _, page := loopback(t, back.String())
			res, err := flow.Wait(ctx)
			if err != nil || status != http.StatusOK || !strings.Contains(page, "You signed in") {
				t.Fatalf("the real answer after stray requests: HTTP %d, %v\n%s", status, err, page)
			}
			if !slices.Equal(res.Granted, scopes) || len(f.bundle(t, "personal").Tokens) != 1 {
				t.Fatalf("result %+v, tokens %+v", res, f.bundle(t, "personal").Tokens)
			}
			if _, err := (&http.Client{}).Get(back.String()); err == nil {
				t.Error("the loopback listener still answers after its one callback")
			}
		})
	}
}

// TestDirectSignInWrongIssWithStateEnds: an answer with the sign-in's state but another iss is an
// attack on the real callback (a mix-up, RFC 9207): it takes the one callback and ends the
// sign-in as a failure, and a later answer changes nothing.
func TestDirectSignInWrongIssWithStateEnds(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	back, _ := url.Parse(f.browser(t, flow.URL, "approve", []string{"orders:read"}))
	status, _, page := loopback(t, withQuery(back, func(q url.Values) { q.Set("iss", "https://other.example") }))
	if _, err := flow.Wait(ctx); err == nil || !strings.Contains(err.Error(), "RFC 9207") || status != http.StatusBadRequest ||
		!strings.Contains(page, "did not come from") {
		t.Fatalf("wrong iss with the right state: HTTP %d, Wait %v\n%s", status, err, page)
	}
	if _, err := (&http.Client{}).Get(back.String()); err == nil {
		t.Error("the loopback listener still answers after the failed callback")
	}
	if len(f.bundle(t, "personal").Tokens) != 0 {
		t.Error("tokens stored after a refused answer")
	}
}

func withQuery(u *url.URL, edit func(url.Values)) string {
	c := *u
	q := c.Query()
	edit(q)
	c.RawQuery = q.Encode()
	return c.String()
}

func TestDirectSignInCancelAndTimeout(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"},
		Open: func(string) error { return errors.New("no browser on this machine") }})
	if err != nil {
		t.Fatal(err)
	}
	if flow.OpenErr == nil || flow.URL == "" {
		t.Fatalf("a failed Open must leave the URL to copy and say why: %v %q", flow.OpenErr, flow.URL)
	}
	redirect, _ := url.Parse(mustQuery(t, flow.URL).Get("redirect_uri"))
	flow.Cancel()
	if _, err := flow.Wait(ctx); !errors.Is(err, oauth.ErrCancelled) {
		t.Fatalf("Wait after Cancel = %v", err)
	}
	if _, err := (&http.Client{}).Get(redirect.String()); err == nil {
		t.Error("the loopback listener still answers after Cancel")
	}
	if _, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Scopes: []string{"orders:read"}}); err == nil {
		t.Error("a sign-in without an account name was started")
	}
}

func mustQuery(t testing.TB, raw string) url.Values {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

func TestDirectSignInTimesOut(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c, err := oauth.New(oauth.Config{Transport: f.tr, Identity: f.agent.Identity, Secrets: f.secrets, DirectTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	flow, err := c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Wait(ctx); !errors.Is(err, oauth.ErrTimedOut) {
		t.Fatalf("Wait = %v, want ErrTimedOut", err)
	}
	// The Company's answer after the timeout reaches no listener.
	back := f.browser(t, flow.URL, "approve", []string{"orders:read"})
	if _, err := (&http.Client{}).Get(back); err == nil {
		t.Error("the loopback listener still answers after the timeout")
	}
	if len(f.bundle(t, "personal").Tokens) != 0 {
		t.Error("tokens stored after a timed-out sign-in")
	}
}

// TestSignInChoices: the sign-in screen's rows read the scopes the account holds from the
// keyring: before signing in only the requested scope starts ticked; after signing in with it,
// asking for more keeps it ticked (held scopes are requested again, spec 4.7).
func TestSignInChoices(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	type row struct {
		name                     string
		held, requested, checked bool
	}
	rows := func(cs []oauth.ScopeChoice) []row {
		var out []row
		for _, c := range cs {
			out = append(out, row{c.Name, c.Held, c.Requested, c.Checked})
		}
		return out
	}
	cs, err := f.c.SignInChoices(ctx, f.co, "personal", []string{"orders:read"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rows(cs), []row{{"orders:read", false, true, true}, {"orders:write", false, false, false}}; !slices.Equal(got, want) {
		t.Fatalf("before sign-in %+v, want %+v", got, want)
	}
	if cs[0].Changes != "none" || !cs[0].PersonalData || cs[0].Description == "" || cs[1].Changes != "irreversible" {
		t.Errorf("descriptions and hints %+v", cs)
	}
	f.signIn(t, "personal", []string{"orders:read"})
	cs, _ = f.c.SignInChoices(ctx, f.co, "personal", []string{"orders:write"})
	if got, want := rows(cs), []row{{"orders:read", true, false, true}, {"orders:write", false, true, true}}; !slices.Equal(got, want) {
		t.Fatalf("for more access %+v, want %+v", got, want)
	}
}
