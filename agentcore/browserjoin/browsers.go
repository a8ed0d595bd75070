package browserjoin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

// Page is what one browser action shows of the page: its URL, its visible alerts, and the whole
// page as data for the model.
type Page struct {
	URL string
	// Alerts are the page's visible error or alert messages (spec 6 "The cookie": e.g. a
	// website's "Missing scope: orders:write").
	Alerts []string
	// Data is the page as the model may see it (package browser's Page: url, title, text, links,
	// forms, alerts; never cookies, storage or hidden values). It is Company content.
	Data any
}

// Session is the controlled browser of one Company Session as [Browsers] drives it. The app
// adapts package browser's *Session to it; the adapter must be comparable and the same value
// for the same browser, since the [Joiner] keys its join state by it.
type Session interface {
	Browser
	// Open loads an https URL of the Company's website.
	Open(ctx context.Context, url string) (Page, error)
	// Read reads the current page again.
	Read(ctx context.Context) (Page, error)
	// Submit fills the named form's visible fields and submits it.
	Submit(ctx context.Context, form string, fields map[string]string) (Page, error)
	// Back goes back one page.
	Back(ctx context.Context) (Page, error)
	// Screenshot returns a PNG of the current page and its URL.
	Screenshot(ctx context.Context) (png []byte, url string, err error)
}

// Sessions finds or launches the controlled browser of a Session (package browser's *Manager,
// through an adapter).
type Sessions interface {
	// Get returns the browser of the Session named key, launching it for website (the origins
	// it may browse) and endpoint (its browser_session_endpoint, "" none) when it isn't running.
	Get(key string, website []string, endpoint string) (Session, error)
}

// Request is one browser action the model asks for.
type Request struct {
	// Action is open, read, screenshot, submit or back.
	Action  string
	Company string
	Account string
	URL     string            // open
	Form    string            // submit
	Fields  map[string]string // submit
}

// Result is what the browser gives back: the page (Company content), a screenshot, and the join
// state in Poppydesk's words.
type Result struct {
	CompanyName string
	Company     string // identifier
	// Page is the page as data (Page.Data; nil for a screenshot).
	Page any
	// Alerts are the page's visible error messages (also inside Page).
	Alerts []string
	PNG    []byte
	URL    string
	// Joined says how the browser is joined ([Joined.Words]), e.g. "joined to the Session,
	// signed in as personal with orders:read" or "browsing as a signed-out visitor (the Company
	// offers no browser join)".
	Joined string
}

// Report is what [Browsers] tells the window's view after each action (BrowsersConfig.Observe).
// It holds no cookie, code or token.
type Report struct {
	Company, CompanyName, Account string
	// Key names the Session's browser (the key given to Sessions.Get).
	Key string
	// Session is the browser the action ran in (nil when the join failed before it).
	Session Session
	// Joined is the browser's join state (nil when the join failed) and Words its plain words.
	Joined *Joined
	Words  string
	// Err is why the action failed (nil: it succeeded).
	Err error
}

// BrowsersConfig configures [NewBrowsers].
type BrowsersConfig struct {
	// Sessions gives the browser of each Session (nil: browsing is not configured).
	Sessions Sessions
	// Engine returns the running engine and the sign-in state reader; a nil engine means it
	// is not running, and nothing is done. It is called on every action, so a restarted engine
	// is picked up.
	Engine func() (*engine.Engine, StatusFunc)
	// Observe receives a Report after each action on a Company's browser, before Browse
	// returns (nil: none). ctx is the action's.
	Observe func(ctx context.Context, r Report)
	Now     func() time.Time
	Logger  *slog.Logger
	// Reporter receives the rules the Company's browser-session page breaks (Joiner.Reporter).
	Reporter inspect.Reporter
}

// Browsers is the model's browser (spec 6): each action runs in the controlled browser of the
// Company Session (company, account), joined first as [Decide] says, and joined again at once
// when the page shows that the website no longer recognizes the Session.
type Browsers struct {
	cfg BrowsersConfig

	mu     sync.Mutex
	joiner *Joiner
	eng    *engine.Engine // the engine joiner was made for
}

// NewBrowsers returns the model's browser over cfg.Sessions.
func NewBrowsers(cfg BrowsersConfig) *Browsers {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Browsers{cfg: cfg}
}

// Words says the join state in plain words, for the model and the window.
func (j Joined) Words() string {
	switch {
	case j.Endpoint == "":
		return "browsing as a signed-out visitor (the Company offers no browser join)"
	case j.SignedIn:
		return "joined to the Session, signed in as " + j.Account.Account + " with " + strings.Join(j.Scopes, " ")
	case j.Downgraded:
		return "joined to the Session, signed out: the Company did not accept the sign-in of " + j.Requested.Account +
			" for the browser; sign in again to browse signed in"
	}
	return "joined to the Session, signed out"
}

// joinerFor returns the Joiner of engine e; a new engine gets a new Joiner (its Sessions differ).
func (b *Browsers) joinerFor(e *engine.Engine, status StatusFunc) *Joiner {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.joiner == nil || b.eng != e {
		b.joiner, b.eng = &Joiner{Engine: e, Status: status, Now: b.cfg.Now, Logger: b.cfg.Logger, Reporter: b.cfg.Reporter}, e
	}
	return b.joiner
}

// Browse runs one model action: the Company's Session browser, joined as Decide says, then the
// action. After open, back and submit it checks that the website still recognizes the Session
// and joins again at once when it doesn't (spec 6): an opened page is loaded again, a submitted
// form is not sent again (the model is told to send it again if it still needs to).
func (b *Browsers) Browse(ctx context.Context, req Request) (*Result, error) {
	if b.cfg.Sessions == nil || b.cfg.Engine == nil {
		return nil, errors.New("browserjoin: the controlled browser is not configured here, so nothing was done")
	}
	e, status := b.cfg.Engine()
	if e == nil {
		return nil, errors.New("browserjoin: Poppydesk's engine is not running, so nothing was done")
	}
	co, err := e.Company(ctx, req.Company)
	if err != nil {
		if co, err = e.Discover(ctx, req.Company); err != nil {
			return nil, fmt.Errorf("browserjoin: the Company %q is not known and could not be discovered: %w", req.Company, err)
		}
	}
	endpoint, site := Endpoint(co)
	rep := Report{Company: co.Identifier, CompanyName: co.Organization.Name, Account: req.Account, Key: co.Identifier + "\x00" + req.Account}
	s, err := b.cfg.Sessions.Get(rep.Key, []string{site}, endpoint)
	if err != nil {
		return nil, err
	}
	jn := b.joinerFor(e, status)
	j, err := jn.Ensure(ctx, s, co.Identifier, req.Account)
	if err != nil {
		rep.Err = err
		b.observe(ctx, rep)
		return nil, err
	}
	res := &Result{Company: co.Identifier, CompanyName: co.Organization.Name, Joined: j.Words()}
	var p Page
	switch req.Action {
	case "open":
		p, err = s.Open(ctx, req.URL)
	case "read":
		p, err = s.Read(ctx)
	case "submit":
		p, err = s.Submit(ctx, req.Form, req.Fields)
	case "back":
		p, err = s.Back(ctx)
	case "screenshot":
		res.PNG, res.URL, err = s.Screenshot(ctx)
	default:
		err = &ActionError{Refused: true, Err: fmt.Errorf("browserjoin: unknown browser action %q; the actions are open, read, submit, back and screenshot", req.Action)}
	}
	if err == nil && endpoint != "" && (req.Action == "open" || req.Action == "back" || req.Action == "submit") {
		var again Joined
		var rejoined bool
		if again, rejoined, err = b.rejoinIfForgotten(ctx, jn, s, co.Identifier, req.Account); err == nil && rejoined {
			j, res.Joined = again, again.Words()
			if req.Action == "submit" {
				res.Joined += "; the website did not recognize the Session when the form was sent, so the browser joined again: send the form again if it is still needed"
			} else {
				p, err = s.Open(ctx, p.URL)
			}
		}
	}
	rep.Session, rep.Joined, rep.Words, rep.Err = s, &j, j.Words(), err
	b.observe(ctx, rep)
	if err != nil {
		return nil, err
	}
	if req.Action != "screenshot" {
		res.Page, res.Alerts, res.URL = p.Data, p.Alerts, p.URL
	}
	return res, nil
}

// rejoinIfForgotten joins s again when the cookies its last join set are gone (the website no
// longer recognizes the Session, spec 6). It reports whether it joined.
func (b *Browsers) rejoinIfForgotten(ctx context.Context, jn *Joiner, s Session, company, account string) (Joined, bool, error) {
	ok, err := s.Recognized(ctx)
	if err != nil || ok {
		return Joined{}, false, err
	}
	b.cfg.Logger.InfoContext(ctx, "browserjoin: the website no longer recognizes the Session; joining again (spec 6)", "company", company)
	j, err := jn.Ensure(ctx, s, company, account)
	return j, err == nil, err
}

func (b *Browsers) observe(ctx context.Context, r Report) {
	if b.cfg.Observe != nil {
		b.cfg.Observe(ctx, r)
	}
}

// ActionError is a browser action Poppydesk did not carry out, and why, in Poppydesk's words
// (Err). Refused: the request's own arguments name what the browser may not do (a URL off the
// Company's website or with an ambiguous path, a form or field the page does not have, an unknown
// action); the caller can ask again with others. Otherwise Poppydesk's rules blocked it: the page
// went off the website or a form would post off it (spec 6: the model browses only the Company's
// website). Nothing was sent for it either way.
type ActionError struct {
	Refused bool
	Err     error
}

func (e *ActionError) Error() string { return e.Err.Error() }
func (e *ActionError) Unwrap() error { return e.Err }
