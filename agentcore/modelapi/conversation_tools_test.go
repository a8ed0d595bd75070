package modelapi_test

import (
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestConversationTools: the model starts, sends, reads, hands off and closes through the Host's
// model interface and conversation manager; the Company's words arrive inside the untrusted
// envelope; the model writes as the agent; no tool accepts anything.
func TestConversationTools(t *testing.T) {
	f := newFixture(t, fopts{})
	cs := f.cs
	call := func(name string, args map[string]any) reply {
		t.Helper()
		r, err := callOn(t, cs, name, args)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := call("start_conversation", map[string]any{"company": f.s.Domain, "text": "Which jacket is warmer?", "wait_seconds": 2})
	if r.IsError || !strings.Contains(r.Text, "\n"+modelapi.UntrustedWarning) {
		t.Fatalf("start = %s", r.Raw)
	}
	id, _ := r.SC["conversation"].(map[string]any)["conversation_id"].(string)
	for i := 0; i < 20 && !strings.Contains(r.Raw, "-10"); i++ {
		r = call("read_conversation", map[string]any{"company": f.s.Domain, "conversation_id": id, "wait_seconds": 1})
	}
	env, _ := r.SC[modelapi.EnvelopeKey].(map[string]any)
	if env == nil || !strings.Contains(r.Raw, "rated down to -10") || strings.Contains(r.Message(), "-10") {
		t.Fatalf("the Company's text is not (only) inside the untrusted envelope: %s", r.Raw)
	}
	for _, req := range f.s.RequestsTo(refcompany.ShopHost, "/poppy/conversations") {
		if strings.Contains(string(req.Body), `"human"`) {
			t.Fatal("a model message was sent with author.type human (spec 8.8)")
		}
	}
	r = call("send_conversation_message", map[string]any{"company": f.s.Domain, "conversation_id": id, "text": "Thanks", "accept_user_request": true})
	if !r.IsError || r.status() != "refused" {
		t.Fatalf("an unknown argument was accepted: %s", r.Raw)
	}
	r = call("hand_off_conversation", map[string]any{"company": f.s.Domain, "conversation_id": id})
	if r.IsError || r.SC["conversation"].(map[string]any)["status"] != "queued" {
		t.Fatalf("handoff = %s", r.Raw)
	}
	r = call("close_conversation", map[string]any{"company": f.s.Domain, "conversation_id": id})
	if r.IsError || r.SC["conversation"].(map[string]any)["status"] != "closed" {
		t.Fatalf("close = %s", r.Raw)
	}
	r = call("send_conversation_message", map[string]any{"company": f.s.Domain, "conversation_id": id, "text": "more"})
	if !r.IsError || r.status() != "conversation_closed" {
		t.Fatalf("send after close = %s", r.Raw)
	}
}

func (r reply) Message() string { return r.message() }
