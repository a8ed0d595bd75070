package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// AuthorizeFunc authorizes a code read from this browser's own browser-session page (spec 6
// step 2). The engine gives it (agentcore/browserjoin.Authorizer); this package never sees a
// token.
type AuthorizeFunc = func(ctx context.Context, code string) error

// Config configures the controlled browser of one Company Session.
type Config struct {
	Options
	// Website are the origins the model may browse (https://{organization.domain}).
	Website []string
	// Endpoint is the Company's browser_session_endpoint, if any: the model never opens it.
	Endpoint string
	// StepTimeout bounds each navigation and step (default 20 s).
	StepTimeout time.Duration
}

// Session is the controlled browser of one Company Session. It is safe for concurrent use;
// actions run one at a time.
type Session struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	p        *process
	endpoint string   // the last joined endpoint
	joinSet  []string // cookie names the last join set in step 3 (the Session's cookies)
	// pageHeader is the response header of the browser-session page the last join loaded in
	// step 1 (nil before any), for the engine's check of spec 6's page headers.
	pageHeader http.Header
	onChange   func()
}

// Open starts the browser of a Company Session.
func Open(cfg Config) (*Session, error) {
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 20 * time.Second
	}
	s := &Session{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	p, err := launch(cfg.Options)
	if err != nil {
		return nil, err
	}
	s.p = p
	return s, nil
}

// OnChange sets a function called after each action that may have changed the page (the
// window's live view).
func (s *Session) OnChange(f func()) { s.mu.Lock(); s.onChange = f; s.mu.Unlock() }

// Visible reports whether the browser shows a window.
func (s *Session) Visible() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.cfg.Visible }

// Close stops the browser.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p.close()
	s.p = nil
}

func (s *Session) tab() (context.Context, error) {
	if s.p == nil {
		return nil, errors.New("browser: the controlled browser was closed")
	}
	return s.p.tab, nil
}

func (s *Session) changed() {
	if s.onChange != nil {
		go s.onChange()
	}
}

// step runs f with a context that ends with ctx or the step timeout, on the tab.
func (s *Session) step(ctx context.Context, f func(tab context.Context) error) error {
	tab, err := s.tab()
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(tab, s.cfg.StepTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	return f(tctx)
}

// JoinError is a failed browser join: the step (1, 2 or 3, or 0 for the confirmation) and why.
type JoinError struct {
	Endpoint string
	Step     int
	Err      error
	// Retried is true when the join started again at step 1 once and failed again.
	Retried bool
}

func (e *JoinError) Error() string {
	what := map[int]string{0: "confirming the join", 1: "loading the browser-session page (step 1)",
		2: "authorizing the code (step 2)", 3: "submitting the form (step 3)"}[e.Step]
	again := ""
	if e.Retried {
		again = " (after starting again at step 1 once)"
	}
	return fmt.Sprintf("browser: joining the browser to the Session at %s failed while %s%s: %v; the website is not browsed as the Session (spec 6)", e.Endpoint, what, again, e.Err)
}

func (e *JoinError) Unwrap() error { return e.Err }

// Join joins this browser to the Session (spec 6 steps 1-3), starting again at step 1 once
// after an error.
func (s *Session) Join(ctx context.Context, endpoint string, authorize AuthorizeFunc) error {
	if authorize == nil {
		return errors.New("browser: Join needs the engine's authorize function")
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("browser: the browser_session_endpoint %q is not an https URL (spec 3, 6)", endpoint)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed()
	var first *JoinError
	for attempt := 0; attempt < 2; attempt++ {
		je := s.joinOnce(ctx, endpoint, authorize)
		if je == nil {
			return nil
		}
		if ctx.Err() != nil {
			return je
		}
		if first != nil {
			je.Retried = true
			return je
		}
		first = je
		s.log.InfoContext(ctx, "browser: join failed; starting again at step 1 (spec 6)", "endpoint", endpoint, "step", je.Step, "err", je.Err)
	}
	return first
}

// joinForm is what step 2 reads from the page: the form that posts to the endpoint and its
// hidden code (only this function sees the code).
type joinForm struct {
	Href   string `json:"href"`
	Action string `json:"action"`
	Method string `json:"method"`
	Code   string `json:"code"`
	Forms  int    `json:"forms"`
}

// checkJoinForm checks the page read in step 1 before its code is used (spec 6 steps 1-2). The
// URLs in its errors are the Company's choice and reach the model through JoinError, so secret
// query parameters (code=, state=, join_code=...) and JWT shapes in them are masked
// (redact.Text, DESIGN invariant 5).
func checkJoinForm(endpoint string, form joinForm) error {
	switch {
	case form.Href != endpoint:
		return fmt.Errorf("the page's address changed to %s before the code was read", redact.Text(form.Href))
	case form.Forms != 1 || form.Code == "":
		return errors.New("the page has no single form with a hidden field named code (spec 6 step 1)")
	case form.Action != endpoint || form.Method != "post":
		return fmt.Errorf("the page's form does not post to the endpoint (action %q, method %q; spec 6 step 1)", redact.Text(form.Action), form.Method)
	}
	return nil
}

const readJoinForm = `(() => {
  const inputs = Array.from(document.querySelectorAll('form input[type="hidden"][name="code"]'));
  const f = inputs.length === 1 ? inputs[0].form : null;
  return {href: location.href, forms: inputs.length, action: f ? f.action : "", method: f ? (f.getAttribute("method") || "get").toLowerCase() : "", code: f ? inputs[0].value : ""};
})()`

// cookies returns the name and value of the cookies the browser would send to u. They stay in
// this package: only names leave it (JoinError texts), never values.
func (s *Session) cookies(tab context.Context, u string) (map[string]string, error) {
	res, err := chromedp.Call(tab, network.GetCookies, network.GetCookiesParams{URLs: []string{u}})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range res.Cookies {
		out[c.Name] = c.Value
	}
	return out, nil
}

// changed lists the cookies of after that are new or have another value than in before.
func changedCookies(before, after map[string]string) []string {
	var out []string
	for n, v := range after {
		if old, ok := before[n]; !ok || old != v {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Session) joinOnce(ctx context.Context, endpoint string, authorize AuthorizeFunc) *JoinError {
	fail := func(step int, err error) *JoinError { return &JoinError{Endpoint: endpoint, Step: step, Err: err} }
	s.pageHeader = nil
	var before, afterPage map[string]string
	var form joinForm
	// Step 1: a top-level GET of the endpoint.
	err := s.step(ctx, func(tab context.Context) error {
		var err error
		if before, err = s.cookies(tab, endpoint); err != nil {
			return err
		}
		resp, err := chromedp.Run(tab, chromedp.NavigateResponse(endpoint))
		if err != nil {
			return err
		}
		if resp.Status != 200 {
			return fmt.Errorf("the page answered HTTP %d, not 200", resp.Status)
		}
		if resp.URL != endpoint {
			return fmt.Errorf("the page was not served at the endpoint itself (it ended at %s); a code is read only from the endpoint's own page (spec 6 step 2)", redact.Text(resp.URL))
		}
		s.pageHeader = headerOf(resp.Headers)
		if !strings.HasPrefix(resp.MimeType, "text/html") {
			return fmt.Errorf("the page is %q, not text/html", resp.MimeType)
		}
		// Step 2 reads the code from this page, in this browser, through CDP (spec 6, 10.6).
		if form, err = chromedp.Run(tab, chromedp.Evaluate[joinForm](readJoinForm)); err != nil {
			return err
		}
		afterPage, err = s.cookies(tab, endpoint)
		return err
	})
	if err != nil {
		return fail(1, err)
	}
	if err := checkJoinForm(endpoint, form); err != nil {
		return fail(2, err)
	}
	joinCookies := changedCookies(before, afterPage)
	// Step 2: the engine authorizes the code in a request of its own.
	err = authorize(ctx, form.Code)
	form.Code = ""
	if err != nil {
		return fail(2, err)
	}
	// Step 3: the browser submits the form; the Company redirects to its website.
	var final string
	err = s.step(ctx, func(tab context.Context) error {
		resp, err := chromedp.RunResponse(tab, chromedp.Submit(chromedp.CSS(`form input[type="hidden"][name="code"]`)))
		if err != nil {
			return err
		}
		final = resp.URL
		if resp.Status/100 != 2 {
			text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 300) : ""`))
			return fmt.Errorf("the Company answered HTTP %d: %s", resp.Status, redact.Text(strings.Join(strings.Fields(text), " ")))
		}
		return nil
	})
	if err != nil {
		return fail(3, err)
	}
	// Confirmation: a page of the website, not the endpoint, and the join cookie cleared.
	if final == endpoint || !s.allowed(final) {
		return fail(0, fmt.Errorf("the form led to %s, not to a page of the website", redact.Text(final)))
	}
	var after map[string]string
	if err := s.step(ctx, func(tab context.Context) error {
		var err error
		after, err = s.cookies(tab, endpoint)
		return err
	}); err != nil {
		return fail(0, err)
	}
	for _, c := range joinCookies {
		if _, ok := after[c]; ok {
			return fail(0, fmt.Errorf("the Company did not clear the join cookie %s", c))
		}
	}
	s.endpoint = endpoint
	// The Session's cookies are those step 3 set or replaced.
	s.joinSet = changedCookies(afterPage, after)
	return nil
}

// JoinPageHeader returns the response header of the browser-session page the last join loaded
// in step 1 (nil before any join reached the page), so the engine can check what spec 6 step 1
// asks of it. It holds no cookie value: Set-Cookie is left out.
func (s *Session) JoinPageHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pageHeader.Clone()
}

// headerOf converts the headers Chromium reports (one string per name, several values joined
// by newlines) to an http.Header, without Set-Cookie.
func headerOf(h network.Headers) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.EqualFold(k, "Set-Cookie") {
			continue
		}
		str, ok := v.(string)
		if !ok {
			continue
		}
		for _, line := range strings.Split(str, "\n") {
			out.Add(k, line)
		}
	}
	return out
}

// Recognized reports whether the cookies the last join set are all still in the browser. The
// join has no other signal; a website that drops the Session's cookie no longer recognizes it.
func (s *Session) Recognized(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endpoint == "" {
		return false, nil
	}
	var jar map[string]string
	err := s.step(ctx, func(tab context.Context) error {
		var err error
		jar, err = s.cookies(tab, s.endpoint)
		return err
	})
	if err != nil {
		return false, err
	}
	for _, n := range s.joinSet {
		if _, ok := jar[n]; !ok {
			return false, nil
		}
	}
	return len(s.joinSet) > 0, nil
}

// SetVisible restarts the browser with the same profile, visible or headless, keeps its cookies
// and reopens the current page, so the user watches the same Session.
func (s *Session) SetVisible(ctx context.Context, visible bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed()
	if s.cfg.Visible == visible && s.p != nil {
		return nil
	}
	var cookies []*network.Cookie
	var loc string
	if s.p != nil {
		_ = s.step(ctx, func(tab context.Context) error {
			res, err := chromedp.Call(tab, network.GetCookies, network.GetCookiesParams{URLs: s.cfg.Website})
			if err == nil {
				cookies = res.Cookies
			}
			loc, _ = chromedp.Run(tab, chromedp.Location())
			return err
		})
		s.p.close()
		s.p = nil
	}
	o := s.cfg.Options
	o.Visible = visible
	p, err := launch(o)
	if err != nil {
		return err
	}
	s.p, s.cfg.Visible = p, visible
	return s.step(ctx, func(tab context.Context) error {
		var params []*network.CookieParam
		for _, c := range cookies {
			scheme := "https://"
			if !c.Secure {
				scheme = "http://"
			}
			params = append(params, &network.CookieParam{Name: c.Name, Value: c.Value, URL: scheme + strings.TrimPrefix(c.Domain, ".") + c.Path,
				Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: c.SameSite, Expires: cdp.TimeSinceEpoch(c.Expires)})
		}
		if len(params) > 0 {
			if _, err := chromedp.Call(tab, network.SetCookies, network.SetCookiesParams{Cookies: params}); err != nil {
				return fmt.Errorf("browser: carrying the Session's cookies to the new window: %w", err)
			}
		}
		if loc != "" && s.allowed(loc) {
			return chromedp.Do(tab, chromedp.Navigate(loc))
		}
		return nil
	})
}
