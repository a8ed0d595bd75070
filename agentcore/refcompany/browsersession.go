package refcompany

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// The browser-session endpoint of the reference Company (spec 6, 10.6) and the cookies of its
// website (website.go).
const (
	// BrowserSessionPath is web.browser_session_endpoint's path; its /authorize is the Session
	// destination of step 2.
	BrowserSessionPath = "/poppy/browser-session"
	// JoinCookie ties a code to the browser that loaded the page (step 1). The __Host- prefix
	// keeps other hosts of the domain from setting it; SameSite=Strict keeps a form submitted
	// from another site from carrying it.
	JoinCookie = "__Host-poppy_join"
	// SessionCookie is the Session's cookie, set only in step 3.
	SessionCookie = "__Host-shop_session"
	// LoginCookie is the website's own login (the browser's login without this protocol; the
	// step-3 table).
	LoginCookie = "__Host-shop_login"

	// DefaultJoinCodeLifetime is how long a code can be authorized and submitted.
	DefaultJoinCodeLifetime = 60 * time.Second
	// webSessionLifetime bounds the Session cookie (it never outlives the Session, spec 6).
	webSessionLifetime = time.Hour
)

// Join faults make the reference Company's browser-session endpoint produce what a Personal
// Agent must recover from (spec 6 step 3: after an error, start again at step 1). Each is
// armed for a number of joins with SetJoinFault.
const (
	// JoinFaultExpiredCode: the page's code has already expired, so authorize answers 400.
	JoinFaultExpiredCode = "join-code-expired"
	// JoinFaultUsedCode: the code counts as submitted before, so step 3 answers 400.
	JoinFaultUsedCode = "join-code-used"
	// JoinFaultOtherBrowser: the page's cookie belongs to another browser's code, so step 3
	// answers 400 (the cookie does not match the code).
	JoinFaultOtherBrowser = "join-code-other-browser"
	// JoinFaultMissingCookie: the page sets no join cookie, so step 3 answers 400.
	JoinFaultMissingCookie = "join-cookie-missing"
	// JoinFaultTokenRefused: the authorize endpoint refuses any access token with 401
	// invalid_token (armed for n authorize requests that carry one), so a Personal Agent that
	// still holds a sign-in continues signed out (spec 5.5) and the browser joins signed out.
	// The join itself succeeds: this fault is not one of JoinBreakingFaults.
	JoinFaultTokenRefused = "join-token-refused"
)

// FaultJoinPageHeaders: the browser-session page is served without the headers that keep it out
// of caches, frames and openers (spec 6 step 1: Cache-Control: no-store, Content-Security-Policy:
// frame-ancestors 'none', Cross-Origin-Opener-Policy: same-origin); the join itself works. It is
// switched with SetFault like the other faults.
const FaultJoinPageHeaders = "join-page-headers"

// FaultJoinPageSetsSession: loading the browser-session page also starts a web session (its
// Session cookie, signed out) (spec 6: loading the page MUST NOT start a Session, and the
// Session cookie is set only in step 3); the join itself works.
const FaultJoinPageSetsSession = "join-page-sets-session"

// pageFaults are the faults of the browser-session page that do not break a join.
var pageFaults = []string{FaultJoinPageHeaders, FaultJoinPageSetsSession}

// JoinBreakingFaults are the join faults that make a join fail (spec 6 step 3: start again at
// step 1).
var JoinBreakingFaults = []string{JoinFaultExpiredCode, JoinFaultUsedCode, JoinFaultOtherBrowser, JoinFaultMissingCookie}

// JoinFaults lists the join faults SetJoinFault accepts. They are also in Faults (server.go):
// SetFault, Options.Faults and `company serve` switch one on for every join until switched off.
var JoinFaults = append(slices.Clone(JoinBreakingFaults), JoinFaultTokenRefused)

// joinCode is one code of the browser-session page.
type joinCode struct {
	code, cookie string
	expires      time.Time
	authorized   bool
	submitted    bool
	// What step 2 recorded: the Session, and the account and scopes when signed in.
	clientID, sid, userID string
	account, grant, token string
	scopes                []string
}

// webSession is what a Session cookie stands for (spec 6 "The cookie").
type webSession struct {
	clientID, sid, userID string
	account               string // "" for a signed-out join
	scopes                []string
	grant, token          string // the sign-in the cookie acts for, checked at each request
	expires               time.Time
}

// JoinRecord is what the reference Company recorded about one completed join, for tests.
type JoinRecord struct {
	ClientID, SID, Account string
	Scopes                 []string
	At                     time.Time
}

type browserState struct {
	mu        sync.Mutex
	codes     map[string]*joinCode   // by code
	byCookie  map[string]string      // join cookie value → code
	sessions  map[string]*webSession // by Session cookie value
	logins    map[string]string      // website login cookie value → account
	lifetime  time.Duration
	faults    map[string]int
	joins     []JoinRecord
	exchanges []WebExchange
}

func newBrowserState() *browserState {
	return &browserState{codes: map[string]*joinCode{}, byCookie: map[string]string{}, sessions: map[string]*webSession{},
		logins: map[string]string{}, lifetime: DefaultJoinCodeLifetime, faults: map[string]int{}}
}

// browser is the browser-session endpoint's state (this file).
func (s *Server) browser() *browserState { s.state(); return s.browserSt }

// BrowserSessionEndpoint is web.browser_session_endpoint: https://shop.localhost:PORT/poppy/browser-session.
func (s *Server) BrowserSessionEndpoint() string { return s.URL(ShopHost, BrowserSessionPath) }

// SetJoinCodeLifetime sets how long new codes last (default DefaultJoinCodeLifetime).
func (s *Server) SetJoinCodeLifetime(d time.Duration) {
	b := s.browser()
	b.mu.Lock()
	b.lifetime = d
	b.mu.Unlock()
}

// SetJoinFault arms a join fault (JoinFaults) for the next n page loads (0 disarms it).
func (s *Server) SetJoinFault(name string, n int) error {
	if !slices.Contains(JoinFaults, name) {
		return fmt.Errorf("refcompany: unknown join fault %q; known: %s", name, strings.Join(JoinFaults, ", "))
	}
	b := s.browser()
	b.mu.Lock()
	b.faults[name] = n
	b.mu.Unlock()
	return nil
}

// Joins lists the joins completed so far (step 3 passed).
func (s *Server) Joins() []JoinRecord {
	b := s.browser()
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.joins)
}

// ForgetWebSessions makes the website forget every Session cookie it set (as after a restart
// of the website's session store): a browser that carries one is no longer recognized as the
// Session, and the website clears the cookie on its next request (website.go). It returns how
// many were forgotten.
func (s *Server) ForgetWebSessions() int {
	b := s.browser()
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.sessions)
	clear(b.sessions)
	return n
}

// takeFault consumes one arming of a join fault, or reports a join fault switched on with
// SetFault (then it stays on). Called with b.mu held.
func (s *Server) takeFault(b *browserState, name string) bool {
	if b.faults[name] > 0 {
		b.faults[name]--
		return true
	}
	return s.fault(name)
}

// serveBrowserSite serves the browser-session endpoint (spec 6) and the website (website.go).
func (s *Server) serveBrowserSite(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case BrowserSessionPath:
		switch r.Method {
		case http.MethodGet:
			s.joinPage(w, r)
		case http.MethodPost:
			s.joinSubmit(w, r)
		default:
			w.Header().Set("Allow", "GET, POST")
			s.webError(w, http.StatusMethodNotAllowed, "Use GET to load this page, and POST to submit its form.")
		}
	case BrowserSessionPath + "/authorize":
		s.joinAuthorize(w, r)
	default:
		s.serveWebsite(w, r)
	}
}

var joinPageTmpl = template.Must(template.New("join").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Connecting</title></head>
<body><p>Connecting</p>
<form id="poppy-join" method="post" action="{{.Action}}">
<input type="hidden" name="code" value="{{.Code}}">
<button type="submit">Continue</button>
</form></body></html>`))

// joinPage is step 1: a form with a one-time code, and a cookie that ties it to this browser.
// Loading it starts, ends and changes no Session and no other cookie.
func (s *Server) joinPage(w http.ResponseWriter, r *http.Request) {
	b := s.browser()
	now := s.now()
	c := &joinCode{code: "bc_" + randID(18), cookie: randID(24)}
	b.mu.Lock()
	c.expires = now.Add(b.lifetime)
	if s.takeFault(b, JoinFaultExpiredCode) {
		c.expires = now.Add(-time.Second)
	}
	if s.takeFault(b, JoinFaultUsedCode) {
		c.submitted = true
	}
	setCookie := !s.takeFault(b, JoinFaultMissingCookie)
	cookie := c.cookie
	if s.takeFault(b, JoinFaultOtherBrowser) {
		// Another browser's code owns this cookie value: the pair will not match.
		other := &joinCode{code: "bc_" + randID(18), cookie: randID(24), expires: c.expires}
		b.codes[other.code], b.byCookie[other.cookie] = other, other.code
		cookie = other.cookie
		c.cookie = randID(24)
	}
	b.codes[c.code] = c
	b.byCookie[c.cookie] = c.code
	lifetime := b.lifetime
	b.mu.Unlock()

	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if !s.fault(FaultJoinPageHeaders) {
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
	}
	h.Set("Referrer-Policy", "no-referrer")
	if setCookie {
		http.SetCookie(w, &http.Cookie{Name: JoinCookie, Value: cookie, Path: "/", MaxAge: int(lifetime / time.Second),
			Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	if s.fault(FaultJoinPageSetsSession) {
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: randomID(16), Path: "/", MaxAge: int(webSessionLifetime / time.Second),
			Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
	joinPageTmpl.Execute(w, map[string]string{"Action": s.BrowserSessionEndpoint(), "Code": c.code})
}

// joinAuthorize is step 2, a Session destination: the Session header is verified as at any
// resource (spec 5.3), the access token if any (spec 4.5), then the code: issued here, not
// expired, not authorized before. 204, or 400 invalid_request.
func (s *Server) joinAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST with a JSON body {\"code\": ...} (spec 6 step 2)")
		return
	}
	if a := r.Header.Get("Authorization"); a != "" {
		b := s.browser()
		b.mu.Lock()
		refuse := s.takeFault(b, JoinFaultTokenRefused)
		b.mu.Unlock()
		if refuse {
			scheme := "Bearer"
			if strings.HasPrefix(strings.ToLower(a), "dpop ") {
				scheme = "DPoP"
			}
			challenge(w, http.StatusUnauthorized, scheme, "invalid_token", "the access token is not accepted here (fault "+JoinFaultTokenRefused+")", "")
			return
		}
	}
	token, at, ok := s.checkAccessToken(w, r, "")
	if !ok {
		return
	}
	sess, err := s.verifierFor().Verify(r.Context(), r, token, at.ClientID)
	if err != nil {
		var se *sessioncheck.Error
		if !errors.As(err, &se) {
			se = &sessioncheck.Error{Status: http.StatusBadRequest, Code: sessioncheck.CodeInvalidSession, Description: err.Error()}
		}
		se.WriteJSON(w)
		return
	}
	var body struct {
		Code string `json:"code"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err := json.Unmarshal(raw, &body); err != nil || body.Code == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be JSON {\"code\": \"...\"} with the page's code (spec 6 step 2)")
		return
	}
	b := s.browser()
	now := s.now()
	b.mu.Lock()
	c := b.codes[body.Code]
	switch {
	case c == nil:
		b.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request", "this code was not issued by this Company's browser-session page")
		return
	case !now.Before(c.expires):
		b.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request", "this code has expired; load the browser-session page again")
		return
	case c.authorized:
		b.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request", "this code was already authorized")
		return
	}
	c.authorized = true
	c.clientID, c.sid, c.userID = sess.ClientID, sess.SID, sess.UserID
	if token != "" {
		c.token, c.scopes = token, slices.Clone(at.Scopes)
	}
	b.mu.Unlock()
	if token != "" {
		acct := s.ops().accountOf(token)
		grant := s.grantOf(token)
		b.mu.Lock()
		c.account, c.grant = acct, grant
		b.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// grantOf is the id of the grant an issued access token belongs to ("" for AddAccessToken tokens).
func (s *Server) grantOf(token string) string {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.atInfo[token].grantID
}

// signInLive reports whether the sign-in a Session cookie acts for still stands: its grant has
// a refresh token (the User did not sign out or disconnect, spec 5.5), or, for a token added by
// AddAccessToken, the token is still known.
func (s *Server) signInLive(ws *webSession) bool {
	if ws.account == "" {
		return false
	}
	if ws.grant != "" {
		a := s.auth()
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, g := range a.grants {
			if g.id == ws.grant {
				return true
			}
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tokens[ws.token]
	return ok
}

// joinSubmit is step 3: the cookie of step 1 must be present and match the code; the code must
// be authorized, unexpired and submitted for the first time (a code is used by the first request
// that submits it, whatever the result). Then the Session cookie is set, the join cookie cleared,
// and the browser redirected to the website; otherwise an error page sets no cookie.
func (s *Server) joinSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		s.webError(w, http.StatusBadRequest, "The form could not be read. Start again from the browser-session page.")
		return
	}
	code := r.PostForm.Get("code")
	b := s.browser()
	now := s.now()
	b.mu.Lock()
	c := b.codes[code]
	var problem string
	switch {
	case c == nil:
		problem = "This code is not one this Company issued."
	case c.submitted:
		problem = "This code was already used. Start again from the browser-session page."
	}
	if c != nil {
		c.submitted = true
	}
	if problem == "" {
		ck, err := r.Cookie(JoinCookie)
		switch {
		case err != nil || ck.Value == "":
			problem = "This browser did not load the page that issued this code (its join cookie is missing)."
		case subtle.ConstantTimeCompare([]byte(ck.Value), []byte(c.cookie)) != 1:
			problem = "This code belongs to another browser."
		case !c.authorized:
			problem = "This code was not authorized by the Personal Agent."
		case !now.Before(c.expires):
			problem = "This code has expired. Start again from the browser-session page."
		}
	}
	if problem != "" {
		b.mu.Unlock()
		s.webError(w, http.StatusBadRequest, "Joining this browser to the Session failed: "+problem)
		return
	}
	value := randID(24)
	b.sessions[value] = &webSession{clientID: c.clientID, sid: c.sid, userID: c.userID, account: c.account,
		scopes: slices.Clone(c.scopes), grant: c.grant, token: c.token, expires: now.Add(webSessionLifetime)}
	// Replace the cookie of an earlier join: it no longer acts for anything (spec 6).
	if old, err := r.Cookie(SessionCookie); err == nil {
		delete(b.sessions, old.Value)
	}
	delete(b.byCookie, c.cookie)
	b.joins = append(b.joins, JoinRecord{ClientID: c.clientID, SID: c.sid, Account: c.account, Scopes: slices.Clone(c.scopes), At: now})
	signedIn := c.account != ""
	b.mu.Unlock()

	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: int(webSessionLifetime / time.Second),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: JoinCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	if signedIn {
		// A signed-in join replaces any login the browser had; it does not come back (step 3 table).
		if old, err := r.Cookie(LoginCookie); err == nil {
			b.mu.Lock()
			delete(b.logins, old.Value)
			b.mu.Unlock()
		}
		http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.URL(ShopHost, "/account"), http.StatusSeeOther)
}
