package app

import (
	"strconv"
	"strings"
	"testing"
)

// TestApprovalNotice: the desktop notification names the verified Company, made visible, and
// says what to do; new terms are worded as such.
func TestApprovalNotice(t *testing.T) {
	for _, tc := range []struct{ kind, title, body string }{
		{"created", "Approval needed: Poppy⟦U+202E⟧ Outfitters", "needs your approval before it acts. Open Poppydesk"},
		{"revision", "New terms from Poppy⟦U+202E⟧ Outfitters", "changed the terms of an approval you have not decided yet. Open Poppydesk"},
	} {
		title, body := approvalNotice(tc.kind, "Poppy\u202e Outfitters")
		if title != tc.title || !strings.Contains(body, tc.body) || strings.ContainsRune(title+body, '\u202e') {
			t.Errorf("%s: %q / %q", tc.kind, title, body)
		}
	}
}

// TestExampleAgentTranscript: the agent's lines are kept without their line ends, blank lines
// dropped and the last maxAgentLines kept, each announced. (What the window gets of them:
// app/fronts TestExampleAgentRunOf.)
func TestExampleAgentTranscript(t *testing.T) {
	var events int
	h := &Host{relay: &Relay{}}
	h.relay.Attach(EmitterFunc(func(name string, _ ...any) {
		if name == EventExampleAgent {
			events++
		}
	}))
	h.agentSaid("→ discover_company: done\n")
	h.agentSaid("   ")
	h.agentSaid("evil\u202etext")
	r := h.ExampleAgent()
	if len(r.Lines) != 2 || r.Lines[0] != "→ discover_company: done" || r.Lines[1] != "evil\u202etext" || events != 2 {
		t.Fatalf("run = %+v after %d events", r, events)
	}
	for i := range maxAgentLines + 5 {
		h.agentSaid("line " + strconv.Itoa(i))
	}
	if r := h.ExampleAgent(); len(r.Lines) != maxAgentLines || r.Lines[len(r.Lines)-1] != "line "+strconv.Itoa(maxAgentLines+4) {
		t.Fatalf("%d lines kept, last %q", len(r.Lines), r.Lines[len(r.Lines)-1])
	}
}
