package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
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

// Browser is the bound service of the window's Browser view: it keeps what the view shows of
// the model's browsing (agentcore/browserjoin's Browsers, which NewBrowser also returns). The
// window can only watch and open the same Session visibly; it authorizes nothing.
type Browser struct {
	cfg BrowserConfig

	mu    sync.Mutex
	state BrowserState
	key   string
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
	bc := browserjoin.BrowsersConfig{Engine: cfg.Engine, Observe: b.observe, Now: cfg.Now, Logger: cfg.Log}
	if cfg.Manager != nil {
		bc.Sessions = browserSessions{cfg.Manager}
	}
	return b, browserjoin.NewBrowsers(bc)
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

// observe converts the report of a model's action into the view (with a screenshot of the page
// now) and tells the window.
func (b *Browser) observe(ctx context.Context, r browserjoin.Report) {
	st := BrowserState{Open: r.Session != nil, Company: r.Company, CompanyName: r.CompanyName, Account: r.Account,
		JoinText: r.Words, Updated: b.cfg.Now().UTC().Format(time.RFC3339)}
	if r.Joined != nil {
		st.Joined, st.SignedIn, st.Scopes = r.Joined.Endpoint != "", r.Joined.SignedIn, r.Joined.Scopes
	}
	if r.Err != nil {
		st.Problem = r.Err.Error()
	}
	if bs, ok := r.Session.(browserSession); ok {
		// The view's screenshot is taken even when the model's call was cancelled meanwhile.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		png, loc, err := bs.Screenshot(ctx)
		cancel()
		if err == nil {
			st.Screenshot, st.URL = "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png), loc
		}
		st.Visible = bs.s.Visible()
	}
	b.mu.Lock()
	b.state, b.key = st, r.Key
	b.mu.Unlock()
	b.emit()
}

// browserSessions adapts *browser.Manager to browserjoin.Sessions.
type browserSessions struct{ m *browser.Manager }

func (p browserSessions) Get(key string, website []string, endpoint string) (browserjoin.Session, error) {
	s, err := p.m.Get(key, website, endpoint)
	if err != nil {
		return nil, err
	}
	return browserSession{s}, nil
}

// browserSession adapts *browser.Session to browserjoin.Session: it converts browser.Page. It is
// a value holding the pointer, so the same browser is always the same browserjoin.Browser (the
// key of the Joiner's join state).
type browserSession struct{ s *browser.Session }

func pageOf(p browser.Page, err error) (browserjoin.Page, error) {
	if err != nil {
		return browserjoin.Page{}, err
	}
	return browserjoin.Page{URL: p.URL, Alerts: p.Alerts, Data: p}, nil
}

func (bs browserSession) Join(ctx context.Context, endpoint string, authorize browserjoin.AuthorizeFunc) error {
	return bs.s.Join(ctx, endpoint, authorize)
}
func (bs browserSession) Recognized(ctx context.Context) (bool, error) { return bs.s.Recognized(ctx) }
func (bs browserSession) Open(ctx context.Context, url string) (browserjoin.Page, error) {
	return pageOf(bs.s.Open(ctx, url))
}
func (bs browserSession) Read(ctx context.Context) (browserjoin.Page, error) {
	return pageOf(bs.s.Read(ctx))
}
func (bs browserSession) Submit(ctx context.Context, form string, fields map[string]string) (browserjoin.Page, error) {
	return pageOf(bs.s.Submit(ctx, form, fields))
}
func (bs browserSession) Back(ctx context.Context) (browserjoin.Page, error) {
	return pageOf(bs.s.Back(ctx))
}
func (bs browserSession) Screenshot(ctx context.Context) ([]byte, string, error) {
	return bs.s.Screenshot(ctx)
}
