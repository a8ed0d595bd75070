package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
)

var consentRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)

// consentBrowser plays the user's browser on the reference Company's consent page: it answers with
// decision ("approve" or "deny") and the scopes ticked, follows the redirect back to
// Poppydesk's loopback listener and keeps the page it shows.
type consentBrowser struct {
	t        *testing.T
	s        *refcompany.Server
	decision string
	page     chan string
}

func (b *consentBrowser) open(authURL string) error {
	go func() {
		page, err := b.answer(authURL)
		if err != nil {
			b.t.Errorf("the browser: %v", err)
		}
		b.page <- page
	}()
	return nil
}

func (b *consentBrowser) answer(authURL string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := transport.New(b.s.ClientConfig())
	if err != nil {
		return "", err
	}
	defer tr.Close()
	hc := tr.NoRedirectClient()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	consent, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := consentRequest.FindSubmatch(consent)
	if m == nil {
		return "", errors.New("no consent page")
	}
	u, _ := url.Parse(authURL)
	form := url.Values{"request": {string(m[1])}, "decision": {b.decision}, "account": {"user@shop.example"}, "scope": strings.Fields(u.Query().Get("scope"))}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, b.s.Issuer()+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = hc.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, back, nil)
	lt := &http.Transport{} // the loopback redirect URI (RFC 8252 §7.3), plain HTTP on 127.0.0.1
	defer lt.CloseIdleConnections()
	resp, err = (&http.Client{Transport: lt}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	return resp.Status + "\n" + string(page), nil
}

// endedFlow waits until the window's sign-in flow id ends and returns its view.
func endedFlow(t *testing.T, si *fronts.SignIn, id string) fronts.FlowView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, err := si.Flow(id)
		if err != nil {
			t.Fatal(err)
		}
		if v.State != fronts.FlowWaiting {
			return v
		}
		time.Sleep(10 * time.Millisecond)
	}
	v, _ := si.Flow(id)
	t.Fatalf("the sign-in did not end within 30 s: %+v", v)
	return fronts.FlowView{}
}

// TestNoScopeGrantedIsADecline: a sign-in whose token response grants no scope
// (FaultScopeNone) ends exactly as one the user declined (spec 4.7: "if the User approves none,
// it ends as a decline"): Direct Sign-In shows the same loopback page and the window the same
// words and state, Device Sign-In too; no token is kept, and the refresh token the Company
// issued is revoked.
func TestNoScopeGrantedIsADecline(t *testing.T) {
	type ending struct{ state, message, page string }
	direct := func(t *testing.T, faults []string, decision string) ending {
		var b *consentBrowser
		f := apptest.Start(t, apptest.Options{Faults: faults, Edit: func(c *app.Config) {
			c.Opener = app.OpenerFunc(func(u string) error { return b.open(u) })
		}})
		b = &consentBrowser{t: t, s: f.Company, decision: decision, page: make(chan string, 1)}
		co := f.Discover(t)
		si := f.Fronts().SignIn
		v, err := si.StartDirect(co.Identifier, "personal", []string{"orders:read"}, "")
		if err != nil {
			t.Fatal(err)
		}
		page := <-b.page
		end := endedFlow(t, si, v.ID)
		checkNothingKept(t, f, co.Identifier)
		return ending{end.State, end.Message, page}
	}
	declined := direct(t, nil, "deny")
	noScope := direct(t, []string{refcompany.FaultScopeNone}, "approve")
	if declined.state != fronts.FlowDeclined || noScope != declined {
		t.Fatalf("no scope granted ended as\n%+v\nwant what a decline gives:\n%+v", noScope, declined)
	}

	device := func(t *testing.T, faults []string, decision string) ending {
		// The polls' waits pass on the shared clock, and the first one lasts until the user has
		// answered on the device page, so the Company sees a well-paced poll and the answer.
		clk := &refcompany.Clock{}
		answered := make(chan struct{})
		f := apptest.Start(t, apptest.Options{Faults: faults, Clock: clk, Edit: func(c *app.Config) {
			c.Tuning.Sleep = func(ctx context.Context, d time.Duration) error {
				select {
				case <-answered:
				case <-ctx.Done():
					return ctx.Err()
				}
				clk.Advance(d)
				return nil
			}
		}})
		co := f.Discover(t)
		si := f.Fronts().SignIn
		v, err := si.StartDevice(co.Identifier, "personal", []string{"orders:read"}, "")
		if err != nil || v.Device == nil {
			t.Fatalf("StartDevice = %+v, %v", v, err)
		}
		tr, err := transport.New(f.Company.ClientConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		form := url.Values{"user_code": {v.Device.UserCode}, "decision": {decision}, "account": {"user@shop.example"}, "scope": {"orders:read"}}
		resp, err := tr.NoRedirectClient().PostForm(f.Company.Issuer()+"/device", form)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the device page answered %s: %s", resp.Status, page)
		}
		close(answered)
		end := endedFlow(t, si, v.ID)
		checkNothingKept(t, f, co.Identifier)
		return ending{end.State, end.Message, ""}
	}
	declined = device(t, nil, "deny")
	noScope = device(t, []string{refcompany.FaultScopeNone}, "approve")
	if declined.state != fronts.FlowDeclined || noScope != declined {
		t.Fatalf("Device Sign-In: no scope granted ended as %+v, want %+v", noScope, declined)
	}
}

// checkNothingKept: the account holds no token, and every refresh token the Company issued in
// a sign-in that granted no scope was revoked.
func checkNothingKept(t *testing.T, f *apptest.Fixture, company string) {
	t.Helper()
	b, err := f.Config.Secrets.LoadCompany(context.Background(), company, "personal")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if b != nil && len(b.Tokens) > 0 {
		t.Errorf("%d tokens were kept", len(b.Tokens))
	}
	issued := false
	for _, r := range f.Company.RequestsTo(refcompany.AuthHost, "/oauth/token") {
		issued = issued || strings.Contains(string(r.Body), "grant_type=authorization_code") || strings.Contains(string(r.Body), "device_code")
	}
	if slices.Contains(f.Company.ActiveFaults(), refcompany.FaultScopeNone) && issued && len(f.Company.RequestsTo(refcompany.AuthHost, "/oauth/revoke")) == 0 {
		t.Error("the refresh token of a sign-in that granted no scope was not revoked")
	}
}
