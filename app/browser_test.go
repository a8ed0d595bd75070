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
	if joinWords(browserjoin.Joined{}) == "" || !strings.Contains(joinWords(browserjoin.Joined{Endpoint: "x", Account: browserjoin.Account{Account: "a", SignedIn: true, Scopes: []string{"s"}}}), "signed in as a with s") {
		t.Error("join words")
	}
	down := browserjoin.Joined{Endpoint: "x", Downgraded: true, Requested: browserjoin.Account{Account: "a", SignedIn: true}}
	if w := joinWords(down); !strings.Contains(w, "signed out") || !strings.Contains(w, "did not accept the sign-in of a") {
		t.Errorf("downgraded join words %q", w)
	}
}
