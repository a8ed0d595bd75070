package app

import (
	"testing"

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
