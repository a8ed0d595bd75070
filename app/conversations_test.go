package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
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
		if got := DataPicture(tc.in); got != tc.want {
			t.Errorf("DataPicture(%.40q) = %.40q, want %.40q", tc.in, got, tc.want)
		}
	}
}

func TestEntryOfAndChange(t *testing.T) {
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
	ch := ConversationChangeOf(conversation.Update{Kind: conversation.UpdateDelta, Company: "c", ConversationID: "x", MessageID: "m", Text: "a\u202eb"})
	if ch.Text != "a⟦U+202E⟧b" || ch.MessageID != "m" || ch.Kind != "delta" {
		t.Errorf("ConversationChangeOf(delta) = %+v", ch)
	}
	if ch := ConversationChangeOf(conversation.Update{Kind: conversation.UpdateEntry, Company: "c", ConversationID: "x", Text: "secret?"}); ch.Text != "" {
		t.Errorf("an entry change carries text %q; only deltas do", ch.Text)
	}
}

// convWorld is the reference Company Agent, the real engine and Manager, and the service.
type convWorld struct {
	s   *poppytest.Server
	svc *Conversations
	co  string

	mu      sync.Mutex
	changes []ConversationChange
}

func newConvWorld(t *testing.T) *convWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(engine.Config{Transport: s.ClientConfig(), Identity: identity.Config{ClientID: s.URL(poppytest.AgentHost, "/agent.json"), ClientName: "app test"},
		Secrets: store.NewSecrets(store.NewMemoryKV()), State: store.NewMemoryEngineState(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	s.AddHost(poppytest.AgentHost, e.Agent().Handler(log))
	co, err := e.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	w := &convWorld{s: s, co: co.Identifier}
	m, err := conversation.New(conversation.Config{Engine: e, Store: store.NewMemoryConversations(), Logger: log,
		OnUpdate: func(u conversation.Update) {
			w.mu.Lock()
			w.changes = append(w.changes, ConversationChangeOf(u))
			w.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	w.svc = NewConversations(ConversationsConfig{Manager: func() (ConversationManager, error) { return m, nil }, Context: ctx, Log: log,
		Companies: func(context.Context) ([]ConversationCompany, error) {
			return []ConversationCompany{{Identifier: co.Identifier, Name: co.Organization.Name}}, nil
		}})
	t.Cleanup(func() { StopConversations(w.svc) })
	return w
}

// waitEntries waits until the transcript has an entry satisfying ok.
func (w *convWorld) waitEntries(t *testing.T, id string, ok func([]ConversationEntry) bool) []ConversationEntry {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		p, err := w.svc.Entries(w.co, id, 0, MaxConversationPage)
		if err != nil {
			t.Fatal(err)
		}
		if ok(p.Entries) {
			return p.Entries
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out; entries: %+v", p.Entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasText(es []ConversationEntry, kind, sub string) bool {
	for _, e := range es {
		if e.Author != nil && e.Author.Kind == kind && strings.Contains(e.Text, sub) {
			return true
		}
	}
	return false
}

func TestConversationsWithTheReferenceCompanyAgent(t *testing.T) {
	w := newConvWorld(t)
	w.s.SetAgentDelays(5*time.Millisecond, 30*time.Millisecond)
	cos, err := w.svc.Companies()
	if err != nil || len(cos) != 1 || cos[0].Identifier != w.co {
		t.Fatalf("Companies() = %+v, %v", cos, err)
	}
	if _, err := w.svc.Start(w.co, "  "); err == nil {
		t.Fatal("Start with an empty message succeeded; it must say to type a message")
	}
	st, err := w.svc.Start(w.co, "Which jacket is warmer?")
	if err != nil {
		t.Fatal(err)
	}
	if ConversationsFollowing(w.svc) != 1 {
		t.Errorf("Following() = %d after Start, want 1 (the stream delivers the reply)", ConversationsFollowing(w.svc))
	}
	es := w.waitEntries(t, st.ID, func(es []ConversationEntry) bool { return hasText(es, "company-agent", "Stormline") })
	if !hasText(es, "user", "Which jacket is warmer?") {
		t.Errorf("the user's message typed in the window is not authored by the user: %+v", es)
	}
	w.mu.Lock()
	deltas := 0
	for _, c := range w.changes {
		if c.Kind == "delta" && c.ConversationID == st.ID {
			deltas++
		}
	}
	w.mu.Unlock()
	if deltas < 2 {
		t.Errorf("%d text-delta changes reached the window, want the reply streamed in pieces", deltas)
	}

	if _, err := w.svc.Handoff(w.co, st.ID); err != nil {
		t.Fatal(err)
	}
	es = w.waitEntries(t, st.ID, func(es []ConversationEntry) bool { return hasText(es, "company-person", "Alex") })
	for _, e := range es {
		if e.Author != nil && e.Author.Kind == "company-person" {
			if e.Author.Name != poppytest.AgentPersonName || e.Author.Picture != "" {
				t.Errorf("the person is %+v, want Alex without a remote picture", *e.Author)
			}
		}
	}
	cur, err := w.svc.State(w.co, st.ID)
	if err != nil || cur.Responder != "human" || cur.Total != len(es) {
		t.Errorf("State() = %+v, %v; want a person responding and %d entries", cur, err, len(es))
	}
	list, err := w.svc.List(w.co)
	if err != nil || len(list) != 1 || list[0].ID != st.ID {
		t.Fatalf("List() = %+v, %v", list, err)
	}
	p, err := w.svc.Entries(w.co, st.ID, 1, 1)
	if err != nil || len(p.Entries) != 1 || p.From != 1 || p.Total != len(es) {
		t.Errorf("Entries(1, 1) = %+v, %v", p, err)
	}

	// The Company's request to talk with the user; accepting opens a Direct Conversation.
	if _, err := w.svc.Send(w.co, st.ID, "Can a specialist check this?"); err != nil {
		t.Fatal(err)
	}
	var inv ConversationInvite
	deadline := time.Now().Add(15 * time.Second)
	for {
		cur, err := w.svc.State(w.co, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(cur.Invites) > 0 {
			inv = cur.Invites[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request to talk with the user arrived: %+v", cur)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d, err := w.svc.AcceptUserRequest(w.co, st.ID, inv.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Direct || d.Parent != st.ID {
		t.Errorf("AcceptUserRequest = %+v, want a Direct Conversation of %s", d, st.ID)
	}
	if _, err := w.svc.Send(w.co, d.ID, "Yes, size M please."); err != nil {
		t.Fatal(err)
	}
	w.waitEntries(t, d.ID, func(es []ConversationEntry) bool { return hasText(es, "user", "size M") })
	if _, err := w.svc.Close(w.co, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Close(w.co, st.ID); err != nil {
		t.Fatal(err)
	}
	if cur, _ := w.svc.State(w.co, st.ID); cur.Status != "closed" {
		t.Errorf("status after Close = %q, want closed", cur.Status)
	}
}

// TestConversationsFollowIsBounded: the window follows what it opens and starts, at most
// MaxFollowed conversations at once (conversation.Followers decides which stop), and
// StopConversations ends every stream.
func TestConversationsFollowIsBounded(t *testing.T) {
	w := newConvWorld(t)
	cfg := w.svc.cfg
	cfg.MaxFollowed = 2
	w.svc = NewConversations(cfg)
	for i := 0; i < 3; i++ {
		if _, err := w.svc.Start(w.co, "Which jacket is warmer?"); err != nil {
			t.Fatal(err)
		}
		if n, want := ConversationsFollowing(w.svc), min(i+1, 2); n != want {
			t.Errorf("Following() = %d after %d starts, want %d (at most MaxFollowed)", n, i+1, want)
		}
	}
	StopConversations(w.svc)
	if n := ConversationsFollowing(w.svc); n != 0 {
		t.Errorf("Following() after Stop = %d, want 0", n)
	}
}

func TestConversationsUnavailable(t *testing.T) {
	svc := NewConversations(ConversationsConfig{})
	if st := svc.Status(); st.Available || st.Problem == "" {
		t.Errorf("Status() = %+v, want unavailable with a reason", st)
	}
	if _, err := svc.List("x"); err == nil {
		t.Error("List without a Manager succeeded")
	}
	if cs, err := svc.Companies(); err != nil || len(cs) != 0 {
		t.Errorf("Companies() = %v, %v", cs, err)
	}
}
