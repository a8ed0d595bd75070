package app

import (
	"context"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/browser"
)

// TestBrowserWithoutEngine: before the engine runs, the model hears why and the window's view
// stays closed; the window cannot open a window for a browser that isn't running.
func TestBrowserWithoutEngine(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  BrowserConfig
		want string
	}{
		{"not configured", BrowserConfig{}, "not configured"},
		{"no engine", BrowserConfig{Manager: &browser.Manager{Root: t.TempDir()},
			Engine: func() (*engine.Engine, browserjoin.StatusFunc) { return nil, nil }}, "engine is not running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, model := NewBrowser(tc.cfg)
			_, err := model.Browse(context.Background(), modelapi.BrowseRequest{Action: "read", Company: "shop.example"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Browse: %v, want %q", err, tc.want)
			}
			if st := svc.State(); st.Open || st.Screenshot != "" {
				t.Errorf("state %+v", st)
			}
			if err := svc.ShowWindow(); err == nil || !strings.Contains(err.Error(), "not open yet") {
				t.Errorf("ShowWindow: %v", err)
			}
		})
	}
}

// TestBrowserSessionIsTheJoinKey: the adapter of one browser is always the same
// browserjoin.Browser, since the Joiner keys the join state by it (a browser that compared
// unequal would be joined again on every action).
func TestBrowserSessionIsTheJoinKey(t *testing.T) {
	one, other := &browser.Session{}, &browser.Session{}
	var a, b, c browserjoin.Browser = browserSession{one}, browserSession{one}, browserSession{other}
	if a != b || a == c {
		t.Errorf("same browser equal: %v, other browser equal: %v", a == b, a == c)
	}
	state := map[browserjoin.Browser]int{a: 1}
	if state[b] != 1 {
		t.Error("the same browser is another map key")
	}
}
