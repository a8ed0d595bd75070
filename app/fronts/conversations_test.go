package fronts

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
)

func TestAuthorOf(t *testing.T) {
	png := "data:image/png;base64,iVBORw0KGgo="
	for _, tc := range []struct {
		name string
		role string
		a    conversation.Author
		want ConversationAuthor
	}{
		{"the model writes as agent on the user's side", "user", conversation.Author{Type: "agent"}, ConversationAuthor{Kind: "model"}},
		{"the user's own words", "user", conversation.Author{Type: "human"}, ConversationAuthor{Kind: "user"}},
		{"the Company's agent", "company", conversation.Author{Type: "agent", Name: "Shop bot"}, ConversationAuthor{Kind: "company-agent", Name: "Shop bot"}},
		{"a person with a data picture", "company", conversation.Author{Type: "human", Name: "Alex", Image: png}, ConversationAuthor{Kind: "company-person", Name: "Alex", Picture: png}},
		{"a person with a remote picture gets none", "company", conversation.Author{Type: "human", Name: "Alex", Image: "https://shop.example/alex.png"}, ConversationAuthor{Kind: "company-person", Name: "Alex"}},
		{"a name with a direction override is made visible", "company", conversation.Author{Type: "human", Name: "Al\u202eex"}, ConversationAuthor{Kind: "company-person", Name: "Al⟦U+202E⟧ex"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := authorOf(tc.role, &tc.a); *got != tc.want {
				t.Errorf("authorOf(%q, %+v) = %+v, want %+v", tc.role, tc.a, *got, tc.want)
			}
		})
	}
}

func TestDataPicture(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"data:image/png;base64,iVBORw0KGgo=", "data:image/png;base64,iVBORw0KGgo="},
		{"data:image/jpeg;base64,/9j/4AAQ", "data:image/jpeg;base64,/9j/4AAQ"},
		{"data:image/svg+xml;base64,PHN2Zz4=", ""}, // SVG can carry script and remote references
		{"https://shop.localhost/logo.png", ""},
		{"data:image/png;base64,iVBO\"><script>", ""},
		{"data:image/png;base64," + strings.Repeat("A", maxPicture), ""},
		{"", ""},
	} {
		if got := dataPicture(tc.in); got != tc.want {
			t.Errorf("dataPicture(%.40q) = %.40q, want %.40q", tc.in, got, tc.want)
		}
	}
}

func TestEntryOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    conversation.Entry
		want func(ConversationEntry) bool
	}{
		{"text stays text with line breaks; bidi made visible", conversation.Entry{Type: "message", Role: "company", Author: &conversation.Author{Type: "agent"}, Text: "<b>hi</b>\nline\u200b2"},
			func(c ConversationEntry) bool {
				return c.Text == "<b>hi</b>\nline⟦U+200B⟧2" && c.Author.Kind == "company-agent"
			}},
		{"data as compact JSON without HTML escaping", conversation.Entry{Type: "message", Role: "company", Author: &conversation.Author{Type: "agent"}, Data: json.RawMessage(`{ "a": "<x>" }`)},
			func(c ConversationEntry) bool { return c.Data == `{"a":"<x>"}` }},
		{"an operation is named for the approval line", conversation.Entry{Type: "message", Role: "company", Author: &conversation.Author{Type: "agent"}, OperationID: "exc_1", Revision: "r2"},
			func(c ConversationEntry) bool { return c.Operation == "exc_1" && c.Revision == "r2" }},
		{"a request to talk with the user keeps its reason", conversation.Entry{Type: "user_requested", Reason: "Need\u202e you"},
			func(c ConversationEntry) bool { return c.Reason == "Need⟦U+202E⟧ you" && c.Author == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := entryOf(&tc.e); !tc.want(got) {
				t.Errorf("entryOf = %+v", got)
			}
		})
	}
}
