package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/browser"
)

// EventBrowser says the controlled browser's page or join state changed; the window calls
// Browser.State again.
const EventBrowser = "browser:changed"

// BrowserState is what the window's Browser view shows: the current page's screenshot, its URL
// and the join state. It holds no cookie, code or token.
type BrowserState struct {
	Open        bool     `json:"open"`
	Company     string   `json:"company"`
	CompanyName string   `json:"companyName"`
	Account     string   `json:"account"`
	URL         string   `json:"url"`
	Joined      bool     `json:"joined"`   // joined to the Session (false: a visitor or not yet)
	SignedIn    bool     `json:"signedIn"` // the website acts for Account
	Scopes      []string `json:"scopes"`
	JoinText    string   `json:"joinText"`
	Screenshot  string   `json:"screenshot"` // data:image/png;base64,... ("" none)
	Visible     bool     `json:"visible"`
	Updated     string   `json:"updated"` // RFC 3339
	Problem     string   `json:"problem"`
}

// BrowserConfig wires the controlled browser.
type BrowserConfig struct {
	Manager *browser.Manager
	// Engine returns the window's engine and the sign-in state reader (nil engine: not running).
	Engine  func() (*engine.Engine, browserjoin.StatusFunc)
	Emitter Emitter
	Log     *slog.Logger
	Now     func() time.Time
}

// Browser is the bound service of the window's Browser view, and (through the value NewBrowser
// also returns) the model's browser tools. The window can only watch and open the same Session
// visibly; it authorizes nothing.
type Browser struct {
	cfg BrowserConfig

	mu     sync.Mutex
	joiner *browserjoin.Joiner
	eng    *engine.Engine
	state  BrowserState
	key    string
}

// NewBrowser returns the window's service and the model's BrowserActions over the same browsers.
func NewBrowser(cfg BrowserConfig) (*Browser, modelapi.BrowserActions) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Browser{cfg: cfg}
	return b, modelBrowser{b}
}

// State is what the view shows.
func (b *Browser) State() BrowserState {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state
	st.Scopes = append([]string(nil), st.Scopes...)
	return st
}

// ShowWindow opens the current Session's browser visibly, for the user to watch (a restart with
// the same profile and cookies). It needs a display.
func (b *Browser) ShowWindow() error {
	b.mu.Lock()
	key := b.key
	b.mu.Unlock()
	if key == "" || b.cfg.Manager == nil {
		return errors.New("the controlled browser is not open yet: it opens when your agent visits a Company's website")
	}
	s := b.cfg.Manager.Running(key)
	if s == nil {
		return errors.New("the controlled browser was closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.SetVisible(ctx, true); err != nil {
		return fmt.Errorf("opening the browser window failed: %w", err)
	}
	b.mu.Lock()
	b.state.Visible = true
	b.mu.Unlock()
	b.emit()
	return nil
}

func (b *Browser) emit() {
	if b.cfg.Emitter != nil {
		b.cfg.Emitter.Emit(EventBrowser)
	}
}

func (b *Browser) joinerFor(e *engine.Engine, status browserjoin.StatusFunc) *browserjoin.Joiner {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.joiner == nil || b.eng != e {
		b.joiner, b.eng = &browserjoin.Joiner{Engine: e, Status: status, Now: b.cfg.Now, Logger: b.cfg.Log}, e
	}
	return b.joiner
}

// joinWords says the join state in plain words.
func joinWords(j browserjoin.Joined) string {
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

// browse runs one model action: the Company's Session browser, joined as browserjoin decides,
// then the action, then the live view.
func (b *Browser) browse(ctx context.Context, req modelapi.BrowseRequest) (*modelapi.BrowseResult, error) {
	if b.cfg.Manager == nil || b.cfg.Engine == nil {
		return nil, errors.New("the controlled browser is not configured in this window")
	}
	e, status := b.cfg.Engine()
	if e == nil {
		return nil, errors.New("Poppydesk's engine is not running in this window, so nothing was done")
	}
	co, err := e.Company(ctx, req.Company)
	if err != nil {
		if co, err = e.Discover(ctx, req.Company); err != nil {
			return nil, fmt.Errorf("the Company %q is not known and could not be discovered: %w", req.Company, err)
		}
	}
	endpoint, site := browserjoin.Endpoint(co)
	key := co.Identifier + "\x00" + req.Account
	s, err := b.cfg.Manager.Get(key, []string{site}, endpoint)
	if err != nil {
		return nil, err
	}
	j, err := b.joinerFor(e, status).Ensure(ctx, s, co.Identifier, req.Account)
	if err != nil {
		b.update(co, req.Account, key, nil, "", nil, err)
		return nil, err
	}
	res := &modelapi.BrowseResult{Company: co.Identifier, CompanyName: co.Organization.Name, Joined: joinWords(j)}
	var p browser.Page
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
		err = fmt.Errorf("unknown browser action %q", req.Action)
	}
	if err == nil && endpoint != "" && (req.Action == "open" || req.Action == "back" || req.Action == "submit") {
		// The page may show that the website no longer recognizes the Session (it dropped the
		// Session's cookie): join again at once (spec 6), and load a page that was a GET again.
		var again browserjoin.Joined
		var rejoined bool
		if again, rejoined, err = b.rejoinIfForgotten(ctx, e, status, s, co.Identifier, req.Account); err == nil && rejoined {
			j, res.Joined = again, joinWords(again)
			if req.Action == "submit" {
				res.Joined += "; the website did not recognize the Session when the form was sent, so the browser joined again: send the form again if it is still needed"
			} else {
				p, err = s.Open(ctx, p.URL)
			}
		}
	}
	if err != nil {
		b.update(co, req.Account, key, s, joinWords(j), &j, err)
		return nil, err
	}
	if req.Action != "screenshot" {
		res.Page, res.Alerts, res.URL = p, p.Alerts, p.URL
	}
	b.update(co, req.Account, key, s, joinWords(j), &j, nil)
	return res, nil
}

// rejoinIfForgotten joins s again when the cookies its last join set are gone (the website no
// longer recognizes the Session, spec 6). It reports whether it joined.
func (b *Browser) rejoinIfForgotten(ctx context.Context, e *engine.Engine, status browserjoin.StatusFunc, s *browser.Session, company, account string) (browserjoin.Joined, bool, error) {
	ok, err := s.Recognized(ctx)
	if err != nil || ok {
		return browserjoin.Joined{}, false, err
	}
	b.cfg.Log.InfoContext(ctx, "browser: the website no longer recognizes the Session; joining again (spec 6)", "company", company)
	j, err := b.joinerFor(e, status).Ensure(ctx, s, company, account)
	return j, err == nil, err
}

// update refreshes the window's view after an action (a screenshot of the page now).
func (b *Browser) update(co *discovery.Company, account, key string, s *browser.Session, words string, j *browserjoin.Joined, problem error) {
	st := BrowserState{Open: s != nil, Company: co.Identifier, CompanyName: co.Organization.Name, Account: account,
		JoinText: words, Updated: b.cfg.Now().UTC().Format(time.RFC3339)}
	if j != nil {
		st.Joined, st.SignedIn, st.Scopes = j.Endpoint != "", j.SignedIn, j.Scopes
	}
	if problem != nil {
		st.Problem = problem.Error()
	}
	if s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		png, loc, err := s.Screenshot(ctx)
		cancel()
		if err == nil {
			st.Screenshot, st.URL = "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png), loc
		}
		st.Visible = s.Visible()
	}
	b.mu.Lock()
	b.state, b.key = st, key
	b.mu.Unlock()
	b.emit()
}

// modelBrowser is the model's side (modelapi.BrowserActions); it is not bound to the window.
type modelBrowser struct{ b *Browser }

func (m modelBrowser) Browse(ctx context.Context, req modelapi.BrowseRequest) (*modelapi.BrowseResult, error) {
	return m.b.browse(ctx, req)
}
