package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/browser"
)

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

// TestBrowserStateOf: before the model browses the view is closed; after, it shows the join
// state, the page's screenshot as a data: URL, the time in UTC and why an action failed.
func TestBrowserStateOf(t *testing.T) {
	if st := browserStateOf(browserView{}); st.Open || st.Updated != "" || st.Screenshot != "" {
		t.Errorf("before any action: %+v", st)
	}
	at := time.Date(2026, 11, 29, 18, 0, 0, 0, time.FixedZone("X", 3600))
	st := browserStateOf(browserView{at: at, png: []byte("\x89PNG"), url: "https://shop.example/account",
		report: browserjoin.Report{Company: "https://auth.shop.example", CompanyName: "Shop", Account: "personal", Key: "k",
			Session: browserSession{&browser.Session{}}, Joined: &browserjoin.Joined{Endpoint: "https://shop.example/poppy/browser-session", Account: browserjoin.Account{SignedIn: true, Scopes: []string{"orders:read"}}},
			Words: "joined, signed in as personal", Err: errors.New("the page did not load")}})
	if !st.Open || !st.Joined || !st.SignedIn || st.Scopes[0] != "orders:read" || st.Updated != "2026-11-29T17:00:00Z" ||
		!strings.HasPrefix(st.Screenshot, "data:image/png;base64,") || st.URL != "https://shop.example/account" || st.Problem != "the page did not load" {
		t.Errorf("state = %+v", st)
	}
}
