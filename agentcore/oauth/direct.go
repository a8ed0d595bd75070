package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
)

// SignInRequest starts a sign-in (spec 4.2, 4.3) for a decision the User took in the window.
type SignInRequest struct {
	Company *discovery.Company
	// Account names the account at the Company ("personal", "work"): each has its own bundle
	// and refresh token (spec 5.4). Required.
	Account string
	// Scopes are the scopes the task needs. The request carries their union with the scopes the
	// account already holds (spec 4.7).
	Scopes []string
	// Open opens the authorization URL in the User's browser (Direct Sign-In). When it is nil or
	// fails, the URL stays available to copy (DirectFlow.URL).
	Open func(url string) error
}

// Result is a finished sign-in, as the window may show it: no token.
type Result struct {
	Company   string   `json:"company"`
	Account   string   `json:"account"`
	Requested []string `json:"requested"`
	Granted   []string `json:"granted"`
	// Missing are requested scopes the User did not approve (spec 4.7: check before continuing).
	Missing   []string `json:"missing,omitempty"`
	TokenType string   `json:"token_type"`
}

func newResult(co *discovery.Company, account, tokenType string, requested, granted []string) *Result {
	r := &Result{Company: co.Identifier, Account: account, Requested: requested, Granted: granted, TokenType: tokenType}
	for _, s := range requested {
		if !Covers(granted, []string{s}) {
			r.Missing = append(r.Missing, s)
		}
	}
	return r
}

// DirectFlow is one Direct Sign-In waiting for its single loopback callback (spec 4.2).
type DirectFlow struct {
	// URL is the authorization URL, for the window to show and copy when opening failed. It has
	// no secret: state and the code challenge are useless without the loopback listener and the
	// verifier. Keep it out of the model's context all the same.
	URL string
	// OpenErr is why Open failed (nil when it succeeded).
	OpenErr error
	// Requested are the scopes requested, with descriptions and hints for the window.
	Requested []ScopeInfo
	// Deadline is when the flow gives up.
	Deadline time.Time

	c        *Client
	co       *discovery.Company
	account  string
	scopes   []string
	state    string
	verifier string
	redirect string
	ln       net.Listener
	srv      *http.Server
	once     sync.Once
	taken    atomic.Bool
	done     chan struct{}
	result   *Result
	err      error
	ctx      context.Context // the flow's: the caller's values (the Inspector's cause), its deadline
	cancel   context.CancelFunc
}

// StartDirect starts Direct Sign-In: it listens on 127.0.0.1 on a random port, builds the
// authorization URL (PKCE S256, state, scope) and calls req.Open with it. Wait returns the
// result. The flow ends after exactly one callback, on Cancel, or after Config.DirectTimeout;
// ctx bounds only the start, not the wait for the User.
func (c *Client) StartDirect(ctx context.Context, req SignInRequest) (*DirectFlow, error) {
	st, err := c.prepareSignIn(ctx, req, "Direct Sign-In (spec 3.2, 4.2)", func(co *discovery.Company, as *discovery.ASMetadata) bool {
		return co.SignIn.Direct && as.AuthorizationEndpoint != ""
	})
	if err != nil {
		return nil, err
	}
	co, as, scopes, held := st.co, st.as, st.scopes, st.held
	loop := ""
	for _, r := range c.id.Metadata().RedirectURIs {
		if identity.IsLoopbackRedirect(r) {
			loop = r
			break
		}
	}
	if loop == "" {
		return nil, errors.New("the client metadata lists no loopback redirect URI, so Direct Sign-In cannot return to Poppydesk (spec 4.1, RFC 8252 §7.3)")
	}
	ru, _ := url.Parse(loop)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1 for the sign-in callback failed: %w", err)
	}
	ru.Host = "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if ru.Path == "" {
		ru.Path = "/"
	}
	f := &DirectFlow{c: c, co: co, account: req.Account, scopes: scopes, state: identity.NewID(24), verifier: newVerifier(),
		redirect: ru.String(), ln: ln, done: make(chan struct{}), Requested: Describe(co, scopes, held),
		Deadline: c.now().Add(c.timeout)}
	au, err := url.Parse(as.AuthorizationEndpoint)
	if err != nil {
		ln.Close()
		return nil, companyErr("Direct Sign-In", fmt.Sprintf("authorization_endpoint %q is not a URL (spec 3.2)", as.AuthorizationEndpoint))
	}
	q := au.Query()
	q.Set("response_type", "code")
	q.Set("client_id", c.id.ClientID())
	q.Set("redirect_uri", f.redirect)
	q.Set("scope", strings.Join(scopes, " "))
	q.Set("state", f.state)
	q.Set("code_challenge", challengeS256(f.verifier))
	q.Set("code_challenge_method", "S256")
	au.RawQuery = q.Encode()
	f.URL = au.String()

	// The flow outlives ctx, but keeps its values (the Inspector's cause, agentcore/inspect).
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	f.ctx, f.cancel = fctx, cancel
	mux := http.NewServeMux()
	mux.HandleFunc(ru.Path, f.callback)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	go func() {
		<-fctx.Done()
		if errors.Is(fctx.Err(), context.DeadlineExceeded) {
			f.finish(nil, fmt.Errorf("%w: no answer from the browser within %s; start the sign-in again", ErrTimedOut, c.timeout))
		} else {
			f.finish(nil, ErrCancelled)
		}
	}()
	c.log.InfoContext(ctx, "direct sign-in started", "company", co.Identifier, "account", req.Account, "scopes", strings.Join(scopes, " "))
	if req.Open != nil {
		if err := req.Open(f.URL); err != nil {
			f.OpenErr = fmt.Errorf("opening the browser failed: %w; copy the link into your browser instead", err)
		}
	} else {
		f.OpenErr = errors.New("no browser to open; copy the link into your browser")
	}
	return f, nil
}

// Cancel stops the flow; Wait then returns ErrCancelled (unless it already finished).
func (f *DirectFlow) Cancel() { f.finish(nil, ErrCancelled) }

// Done is closed when the flow has finished.
func (f *DirectFlow) Done() <-chan struct{} { return f.done }

// Wait blocks until the flow finishes or ctx ends (which does not cancel the flow).
func (f *DirectFlow) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-f.done:
		return f.result, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// finish records the outcome once, and closes the listener (exactly one callback, spec 4.2).
func (f *DirectFlow) finish(r *Result, err error) {
	f.once.Do(func() {
		f.result, f.err = r, err
		f.ln.Close()
		close(f.done)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			f.srv.Shutdown(ctx) // lets the one callback's page be written
			f.cancel()
		}()
	})
}

// callback handles the one authorization response (RFC 6749 §4.1.2, RFC 9207, spec 4.2). Only a
// request carrying the sign-in's state can be that response: any other request to the loopback
// address (a web page scanning local ports, another process, the browser's favicon fetch) gets a
// plain 400 page and changes nothing, so it can neither take the one callback nor end a sign-in
// the User is still doing (RFC 6749 §10.12, RFC 8252 §8.1). The request with the state takes the
// slot, and its iss, error and code are checked as the answer: a wrong iss with the right state
// ends the sign-in as a failure (RFC 9207: the answer of another sign-in).
func (f *DirectFlow) callback(w http.ResponseWriter, r *http.Request) {
	select {
	case <-f.done:
		writePage(w, http.StatusGone, pageExpired, f.co.Organization.Name, "")
		return
	default:
	}
	if !f.stateMatches(r.URL.Query()) {
		f.c.log.DebugContext(r.Context(), "direct sign-in: a loopback request without the sign-in's state was ignored",
			"company", f.co.Identifier, "path", r.URL.Path)
		writePage(w, http.StatusBadRequest, pageStray, f.co.Organization.Name, "")
		return
	}
	if !f.taken.CompareAndSwap(false, true) {
		// Exactly one callback (spec 4.2): a second or late answer changes nothing.
		writePage(w, http.StatusGone, pageExpired, f.co.Organization.Name, "")
		return
	}
	res, err, why := f.handle(r)
	switch {
	case err == nil:
		writePage(w, http.StatusOK, pageSuccess, f.co.Organization.Name, "")
	case errors.Is(err, ErrDeclined):
		writePage(w, http.StatusOK, pageDeclined, f.co.Organization.Name, "")
	default:
		writePage(w, http.StatusBadRequest, pageFailed, f.co.Organization.Name, why)
	}
	f.finish(res, err)
}

// stateMatches reports whether q carries exactly the sign-in's state (RFC 6749 §10.12), compared
// in constant time.
func (f *DirectFlow) stateMatches(q url.Values) bool {
	st, ok := q["state"]
	return ok && len(st) == 1 && st[0] != "" && subtle.ConstantTimeCompare([]byte(st[0]), []byte(f.state)) == 1
}

// handle checks and uses the response whose state matched (callback); why is a plain-words
// reason for the loopback page.
func (f *DirectFlow) handle(r *http.Request) (res *Result, err error, why string) {
	const step = "Direct Sign-In response"
	q := r.URL.Query()
	iss, hasIss := q["iss"]
	if !hasIss || len(iss) != 1 || iss[0] != f.co.Issuer {
		got := "no iss"
		if hasIss {
			got = fmt.Sprintf("iss %q", strings.Join(iss, ","))
		}
		return nil, companyErr(step, fmt.Sprintf("the response carries %s, not the issuer %q the sign-in started with; it may come from another Company's sign-in, so it was refused (spec 4.2, RFC 9207)", got, f.co.Issuer)), "The answer did not come from this Company's sign-in page, so Poppydesk refused it."
	}
	if e := q.Get("error"); e != "" {
		oe := &Error{Step: step, Code: e, Description: q.Get("error_description"), Problem: explain(e)}
		if e == "access_denied" {
			oe.wrapped = ErrDeclined
		}
		return nil, oe, explain(e) + "."
	}
	code := q.Get("code")
	if code == "" {
		return nil, companyErr(step, "the response has neither code nor error (RFC 6749 §4.1.2)"), "The Company's answer was incomplete."
	}
	// The exchange carries the flow's values (what started the sign-in, for the Inspector) and
	// ends with the browser's request or the flow.
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	defer cancel()
	defer context.AfterFunc(r.Context(), cancel)()
	res, err = f.exchange(ctx, code)
	return res, err, "Poppydesk could not get access from the Company after your approval."
}

// exchange trades the code for tokens (RFC 6749 §4.1.3, RFC 7636 §4.5, spec 4.2, 4.7).
func (f *DirectFlow) exchange(ctx context.Context, code string) (*Result, error) {
	c, co := f.c, f.co
	unlock := c.lock(co.Identifier, f.account)
	defer unlock()
	key, err := c.dpopKey(ctx, co, f.account)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {GrantAuthorizationCode}, "code": {code}, "redirect_uri": {f.redirect}, "code_verifier": {f.verifier}}
	body, err := c.postForm(ctx, co.Issuer, co.AuthorizationServer.TokenEndpoint, "code exchange at the token endpoint", form, key)
	if err != nil {
		return nil, err
	}
	return c.finishSignIn(ctx, co, f.account, "code exchange at the token endpoint", body, f.scopes, key != nil)
}

// finishSignIn checks and stores a sign-in's token response and revokes a replaced refresh
// token (spec 4.7: replacing is not sign-out).
func (c *Client) finishSignIn(ctx context.Context, co *discovery.Company, account, step string, body []byte, scopes []string, dpop bool) (*Result, error) {
	tr, granted, err := parseToken(step, body, scopes, true, dpop)
	if err != nil && errors.Is(err, ErrDeclined) && tr != nil && tr.RefreshToken != "" {
		// No scope granted (spec 4.7): a decline. The grant is given back so that no token the
		// User did not approve stays valid at the Company (RFC 7009).
		if rerr := c.revoke(ctx, co.Issuer, co.AuthorizationServer.RevocationEndpoint, tr.RefreshToken); rerr != nil {
			c.log.WarnContext(ctx, "revoking the refresh token of a sign-in that granted no scope failed", "company", co.Identifier, "error", rerr.Error())
		}
	}
	if err != nil {
		return nil, err
	}
	replaced, err := c.storeSignIn(ctx, co, account, tr, granted)
	if err != nil {
		return nil, err
	}
	if replaced != "" {
		if err := c.revoke(ctx, co.Issuer, co.AuthorizationServer.RevocationEndpoint, replaced); err != nil {
			c.log.WarnContext(ctx, "revoking the replaced refresh token failed", "company", co.Identifier, "error", err.Error())
		}
	}
	c.log.InfoContext(ctx, "signed in", "company", co.Identifier, "account", account, "granted", strings.Join(granted, " "))
	return newResult(co, account, tr.TokenType, scopes, granted), nil
}

// Held lists the flow's own secrets (its state and PKCE verifier), for text that leaves
// Poppydesk to be cleaned of them (spec 10.2). Never shown or logged.
func (f *DirectFlow) Held() []string { return []string{f.state, f.verifier} }

// String keeps the state and PKCE verifier out of fmt output (spec 10.2).
func (f *DirectFlow) String() string {
	return fmt.Sprintf("DirectFlow{company: %s, account: %q, scopes: %q}", f.co.Identifier, f.account, f.scopes)
}

// GoString: see String.
func (f *DirectFlow) GoString() string { return f.String() }
