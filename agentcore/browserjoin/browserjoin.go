package browserjoin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// AuthorizeFunc authorizes one code read from the controlled browser's own page (spec 6 step 2).
type AuthorizeFunc = func(ctx context.Context, code string) error

// Sender sends a request in the Session (an *engine.Client).
type Sender interface {
	Do(ctx context.Context, req *transport.Request) (*transport.Response, error)
}

// AuthorizeResult says how the last authorization went: whether the Company took it signed in.
type AuthorizeResult struct {
	// SignedOut is set when the account's token was refused or missing and the request went
	// signed out (spec 5.5): the browser then joins signed out.
	SignedOut bool
}

// Authorizer returns the function that sends POST {endpoint}/authorize with {"code": code}
// through c (spec 6 step 2). res, when not nil, receives how the last call went.
func Authorizer(c Sender, endpoint string, res *AuthorizeResult) AuthorizeFunc {
	u := strings.TrimSuffix(endpoint, "/") + "/authorize"
	return func(ctx context.Context, code string) error {
		if code == "" {
			return errors.New("browserjoin: no code to authorize (spec 6 step 2)")
		}
		body, err := json.Marshal(map[string]string{"code": code})
		if err != nil {
			return err
		}
		resp, err := c.Do(ctx, &transport.Request{Method: http.MethodPost, URL: u,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: body})
		if err != nil {
			var pe *transport.ProtocolError
			if errors.As(err, &pe) {
				return fmt.Errorf("browserjoin: the Company refused to authorize the browser's code at %s (HTTP %d %s; spec 6 step 2): %w", u, pe.Status, pe.Code, err)
			}
			return fmt.Errorf("browserjoin: authorizing the browser's code at %s failed (spec 6 step 2): %w", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent && resp.StatusCode/100 != 2 {
			return fmt.Errorf("browserjoin: %s answered HTTP %d; spec 6 step 2 expects 204", u, resp.StatusCode)
		}
		if res != nil {
			res.SignedOut = resp.SignedOut || resp.AccessToken == ""
		}
		return nil
	}
}

// Browser is the controlled browser of one Session as the Joiner needs it; package browser's
// *Session has these methods.
type Browser interface {
	// Join runs spec 6 steps 1-3 with authorize for step 2.
	Join(ctx context.Context, endpoint string, authorize AuthorizeFunc) error
	// Recognized reports whether the website still has the cookies the last join set.
	Recognized(ctx context.Context) (bool, error)
}

// Account is the sign-in state the browser should be joined with.
type Account struct {
	Account  string   `json:"account"` // the account label ("" signed out)
	SignedIn bool     `json:"signedIn"`
	Scopes   []string `json:"scopes,omitempty"`
}

// Joined is the state of the last join of a browser.
type Joined struct {
	// Endpoint is web.browser_session_endpoint ("" when the Company has none: a visitor).
	Endpoint string `json:"endpoint"`
	// Account is how the browser is joined (SignedIn false after a downgraded join).
	Account
	At time.Time `json:"at"`
	// Downgraded is set when the account was signed in but the Company refused its token in
	// step 2, so the request, and the join, continued signed out (spec 5.5). Requested is the
	// sign-in the join was asked for; Decide does not ask for the same again right away.
	Downgraded bool    `json:"downgraded,omitempty"`
	Requested  Account `json:"requested"`
}

// DowngradeRetry is how long a downgraded join stands for the same sign-in (account and
// scopes): within it, Decide does not join again just because the keyring still says signed
// in, which would join again on every call while the Company keeps refusing the token. A
// change of the account's sign-in state or scopes, or a website that no longer recognizes the
// Session, still joins again at once.
const DowngradeRetry = 15 * time.Minute

// Decision says whether to join and why.
type Decision struct {
	Join   bool
	Reason string
}

// Decide is the join policy (spec 6): join before browsing when the Company has an endpoint;
// join again after signing in or out, when the scopes change, or when the website no longer
// recognizes the Session. Without an endpoint there is nothing to join.
//
// The rejoin loop: when the last join was downgraded (the account was signed in but the
// Company refused its token in step 2, so the browser joined signed out, spec 5.5), the
// keyring still says signed in. Joining "again after signing in" would then join on every
// call. So a downgraded join stands while the sign-in is the one it was asked for (same
// account, same scopes) and for at most DowngradeRetry after it (at is the time now); signing
// in with other scopes, signing out, or the website forgetting the Session joins again.
func Decide(last *Joined, endpoint string, now Account, recognized bool, at time.Time) Decision {
	switch {
	case endpoint == "":
		return Decision{Reason: "the Company lists no browser_session_endpoint: browsing as a signed-out visitor (spec 6)"}
	case last == nil || last.Endpoint != endpoint:
		return Decision{Join: true, Reason: "joining the browser to the Session before browsing (spec 6)"}
	case !recognized:
		return Decision{Join: true, Reason: "joining again because the website no longer recognizes the Session (spec 6)"}
	case last.Downgraded && now.SignedIn && now.Account == last.Requested.Account &&
		sameScopes(now.Scopes, last.Requested.Scopes) && at.Before(last.At.Add(DowngradeRetry)):
		return Decision{Reason: "the Company took the last join signed out although the account is signed in (its token was refused, spec 5.5); not joining again until the sign-in or its scopes change"}
	case !last.SignedIn && now.SignedIn:
		return Decision{Join: true, Reason: "joining again after signing in (spec 6)"}
	case last.SignedIn && !now.SignedIn:
		return Decision{Join: true, Reason: "joining again after signing out (spec 6)"}
	case last.SignedIn && !sameScopes(last.Scopes, now.Scopes):
		return Decision{Join: true, Reason: "joining again because the scopes changed (spec 6)"}
	}
	return Decision{Reason: "joined"}
}

func sameScopes(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// StatusFunc reports whether account is signed in at company and with which scopes (e.g. over
// oauth.Client.Status). It returns no token.
type StatusFunc func(ctx context.Context, company, account string) (signedIn bool, scopes []string, err error)

// Joiner keeps browsers joined to their Sessions (spec 6): Ensure applies Decide before each use.
type Joiner struct {
	// Engine gives the Company and the Client of (company, account).
	Engine *engine.Engine
	// Status reads the account's sign-in state (nil: always signed out).
	Status StatusFunc
	Now    func() time.Time
	Logger *slog.Logger
	// Reporter receives the rules the browser-session page broke (spec 6 step 1: its headers),
	// as the browser saw it in step 1 of each join, whether the join then worked or not (nil:
	// none). The browser tells them through an optional method, JoinPageHeader() http.Header.
	Reporter inspect.Reporter

	mu    sync.Mutex
	state map[Browser]*Joined
}

// pageHeaders is what a Browser that reports the header of the browser-session page it loaded
// in step 1 has (package browser's *Session).
type pageHeaders interface {
	JoinPageHeader() http.Header
}

// reportPage reports what the browser-session page's headers lack (inspect.JoinPageFindings),
// as b loaded it in the join just made.
func (j *Joiner) reportPage(ctx context.Context, b Browser, company, endpoint string) {
	ph, ok := b.(pageHeaders)
	if !ok || j.Reporter == nil {
		return
	}
	h := ph.JoinPageHeader()
	if h == nil {
		return
	}
	for _, f := range inspect.JoinPageFindings(endpoint, h) {
		f.Company = company
		j.Reporter.Report(ctx, f)
	}
}

// Endpoint returns the Company's browser_session_endpoint ("" when it has none) and its
// website origin, https://{organization.domain}.
func Endpoint(co *discovery.Company) (endpoint, website string) {
	if co.Channels.Web != nil {
		endpoint = co.Channels.Web.BrowserSessionEndpoint
	}
	return endpoint, "https://" + strings.ToLower(co.Organization.Domain)
}

// Last returns the last join of b (nil before any).
func (j *Joiner) Last(b Browser) *Joined {
	j.mu.Lock()
	defer j.mu.Unlock()
	if l := j.state[b]; l != nil {
		cp := *l
		return &cp
	}
	return nil
}

// Forget drops what the Joiner knows of b (after it closed).
func (j *Joiner) Forget(b Browser) {
	j.mu.Lock()
	delete(j.state, b)
	j.mu.Unlock()
}

// Ensure joins b to the Session of (company, account) when Decide says so, and returns the
// join state the browser is in.
func (j *Joiner) Ensure(ctx context.Context, b Browser, company, account string) (Joined, error) {
	if j.Engine == nil {
		return Joined{}, errors.New("browserjoin: the Joiner has no engine")
	}
	co, err := j.Engine.Company(ctx, company)
	if err != nil {
		return Joined{}, fmt.Errorf("browserjoin: the Company %s is not known; discover it first: %w", company, err)
	}
	endpoint, _ := Endpoint(co)
	now := Account{Account: account}
	if account != "" && j.Status != nil {
		in, scopes, err := j.Status(ctx, co.Identifier, account)
		if err != nil {
			return Joined{}, fmt.Errorf("browserjoin: reading the sign-in state of %q at %s: %w", account, co.Identifier, err)
		}
		now.SignedIn, now.Scopes = in, scopes
	}
	last := j.Last(b)
	recognized := true
	if last != nil && endpoint != "" {
		if recognized, err = b.Recognized(ctx); err != nil {
			return Joined{}, fmt.Errorf("browserjoin: checking the browser's cookies: %w", err)
		}
	}
	d := Decide(last, endpoint, now, recognized, j.now())
	if !d.Join {
		if last == nil {
			last = &Joined{Endpoint: endpoint, At: j.now()}
			j.set(b, last)
		}
		return *last, nil
	}
	j.log().InfoContext(ctx, "browserjoin: "+d.Reason, "company", co.Identifier, "account", account)
	cl, err := j.Engine.Client(ctx, co.Identifier, account)
	if err != nil {
		return Joined{}, err
	}
	var res AuthorizeResult
	err = b.Join(ctx, endpoint, Authorizer(cl, endpoint, &res))
	j.reportPage(ctx, b, co.Identifier, endpoint)
	if err != nil {
		j.Forget(b)
		return Joined{}, err
	}
	joined := &Joined{Endpoint: endpoint, Account: now, At: j.now(), Requested: now}
	if res.SignedOut && now.SignedIn {
		joined.Downgraded = true
		joined.SignedIn, joined.Scopes = false, nil
		j.log().WarnContext(ctx, "browserjoin: the Company refused the account's access token when authorizing the browser, so the browser joined signed out (spec 5.5); it joins again when the sign-in or its scopes change",
			"company", co.Identifier, "account", account)
	} else if res.SignedOut {
		joined.SignedIn, joined.Scopes = false, nil
	}
	j.set(b, joined)
	return *joined, nil
}

func (j *Joiner) set(b Browser, s *Joined) {
	j.mu.Lock()
	if j.state == nil {
		j.state = map[Browser]*Joined{}
	}
	j.state[b] = s
	j.mu.Unlock()
}

func (j *Joiner) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
}

func (j *Joiner) log() *slog.Logger {
	if j.Logger != nil {
		return j.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// OAuthStatus is a StatusFunc over oauth.Client.Status (it reads no token out).
func OAuthStatus(c *oauth.Client) StatusFunc {
	return func(ctx context.Context, company, account string) (bool, []string, error) {
		st, err := c.Status(ctx, company, account)
		return st.SignedIn, st.Scopes, err
	}
}
