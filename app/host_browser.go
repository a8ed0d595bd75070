package app

// The model's browser (spec 6; agentcore/browserjoin) over the Host's controlled browsers
// (package browser), and what the window's Browser view shows of it: the last action's report
// with a screenshot of the page then. The window can only watch and open the same Session
// visibly; it authorizes nothing.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/browser"
)

// EventBrowser says the controlled browser's page or join state changed; the window reads
// [Host.BrowserSeen] again.
const EventBrowser = "browser:changed"

// browserSeen is the last BrowserSeen, guarded.
type browserSeen struct {
	mu   sync.Mutex
	seen BrowserSeen
}

// BrowserSeen is what the window's Browser view shows: the report of the model's last browser
// action (spec 6), the page's screenshot (PNG) and address taken right after it, and whether the
// browser is visible. At is zero before the model's first action.
type BrowserSeen struct {
	Report  browserjoin.Report
	PNG     []byte
	URL     string
	Visible bool
	At      time.Time
}

// observeBrowser is the model's browser's Observe: it records the report of an action with a
// screenshot of the page now, and tells the window (EventBrowser).
func (h *Host) observeBrowser(ctx context.Context, r browserjoin.Report) {
	v := BrowserSeen{Report: r, At: h.now()}
	if bs, ok := r.Session.(browserSession); ok {
		// The view's screenshot is taken even when the model's call was cancelled meanwhile.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		png, loc, err := bs.Screenshot(ctx)
		cancel()
		if err == nil {
			v.PNG, v.URL = png, loc
		}
		v.Visible = bs.s.Visible()
	}
	h.seen.mu.Lock()
	h.seen.seen = v
	h.seen.mu.Unlock()
	h.relay.Emit(EventBrowser)
}

// BrowserSeen returns what the Browser view shows (zero for a nil Host).
func (h *Host) BrowserSeen() BrowserSeen {
	if h == nil {
		return BrowserSeen{}
	}
	h.seen.mu.Lock()
	defer h.seen.mu.Unlock()
	return h.seen.seen
}

// ShowBrowser restarts the current Session's browser visibly, with the same profile and
// cookies, for the user to watch. It needs a display.
func (h *Host) ShowBrowser(ctx context.Context) error {
	if h == nil {
		return problem(ProblemNotConnected)
	}
	h.seen.mu.Lock()
	key := h.seen.seen.Report.Key
	h.seen.mu.Unlock()
	if key == "" || h.browsers == nil {
		return errors.New("the controlled browser is not open yet: it opens when your agent visits a Company's website")
	}
	s := h.browsers.Running(key)
	if s == nil {
		return errors.New("the controlled browser was closed")
	}
	if err := s.SetVisible(ctx, true); err != nil {
		return fmt.Errorf("opening the browser window failed: %w", err)
	}
	h.seen.mu.Lock()
	h.seen.seen.Visible = true
	h.seen.mu.Unlock()
	h.relay.Emit(EventBrowser)
	return nil
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
		return browserjoin.Page{}, actionError(err)
	}
	return browserjoin.Page{URL: p.URL, Alerts: p.Alerts, Data: p}, nil
}

// actionError types the browser's refusals for the layers that tell the model (spec 6): a
// request whose arguments the browser refuses, or a page or form its rules block.
func actionError(err error) error {
	switch {
	case errors.Is(err, browser.ErrRefused):
		return &browserjoin.ActionError{Refused: true, Err: err}
	case errors.Is(err, browser.ErrOffSite):
		return &browserjoin.ActionError{Err: err}
	}
	return err
}

func (bs browserSession) Join(ctx context.Context, endpoint string, authorize browserjoin.AuthorizeFunc) error {
	return bs.s.Join(ctx, endpoint, authorize)
}
func (bs browserSession) Recognized(ctx context.Context) (bool, error) { return bs.s.Recognized(ctx) }

// JoinPageHeader passes on the browser-session page's response header of the last join, so the
// Joiner reports what spec 6 step 1 asks of it (its findings reach the Inspector).
func (bs browserSession) JoinPageHeader() http.Header { return bs.s.JoinPageHeader() }
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
	png, loc, err := bs.s.Screenshot(ctx)
	if err != nil {
		return nil, "", actionError(err)
	}
	return png, loc, nil
}
