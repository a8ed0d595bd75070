package app

import (
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
)

// TestConversationChangeOf: a delta carries the text so far, made visible; an entry change
// carries none.
func TestConversationChangeOf(t *testing.T) {
	ch := conversationChangeOf(conversation.Update{Kind: conversation.UpdateDelta, Company: "c", ConversationID: "x", MessageID: "m", Text: "a\u202eb"})
	if ch.Text != "a⟦U+202E⟧b" || ch.MessageID != "m" || ch.Kind != "delta" {
		t.Errorf("conversationChangeOf(delta) = %+v", ch)
	}
	if ch := conversationChangeOf(conversation.Update{Kind: conversation.UpdateEntry, Company: "c", ConversationID: "x", Text: "secret?"}); ch.Text != "" {
		t.Errorf("an entry change carries text %q; only deltas do", ch.Text)
	}
}
