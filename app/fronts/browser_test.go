package fronts

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/app"
)

// openSession is a browser Session as the report names it; the view only asks whether one is
// open.
type openSession struct{ browserjoin.Session }

// TestBrowserStateOf: before the model browses the view is closed; after, it shows the join
// state, the page's screenshot as a data: URL, the time in UTC and why an action failed.
func TestBrowserStateOf(t *testing.T) {
	if st := browserStateOf(app.BrowserSeen{}); st.Open || st.Updated != "" || st.Screenshot != "" {
		t.Errorf("before any action: %+v", st)
	}
	at := time.Date(2026, 11, 29, 18, 0, 0, 0, time.FixedZone("X", 3600))
	st := browserStateOf(app.BrowserSeen{At: at, PNG: []byte("\x89PNG"), URL: "https://shop.example/account",
		Report: browserjoin.Report{Company: "https://auth.shop.example", CompanyName: "Shop", Account: "personal", Key: "k",
			Session: openSession{}, Joined: &browserjoin.Joined{Endpoint: "https://shop.example/poppy/browser-session", Account: browserjoin.Account{SignedIn: true, Scopes: []string{"orders:read"}}},
			Words: "joined, signed in as personal", Err: errors.New("the page did not load")}})
	if !st.Open || !st.Joined || !st.SignedIn || st.Scopes[0] != "orders:read" || st.Updated != "2026-11-29T17:00:00Z" ||
		!strings.HasPrefix(st.Screenshot, "data:image/png;base64,") || st.URL != "https://shop.example/account" || st.Problem != "the page did not load" {
		t.Errorf("state = %+v", st)
	}
}
