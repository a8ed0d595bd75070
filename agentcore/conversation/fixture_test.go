package conversation_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/vault"
)

const account = "alice"

// fixture: the Host of app/apptest over the reference Company (its state database on disk, one
// clock), and the conversation Manager under test: the Host's own, which hands operations to
// the Host's approval queue, or, with fixtureOptions.newID or context, one built over the
// Host's engine and state database with those knobs. Updates are recorded as the window hears
// them (app.EventConversationsChanged), or from the built Manager's OnUpdate.
type fixture struct {
	*apptest.Fixture
	s       *refcompany.Server
	store   *vault.State
	company string
	e       *engine.Engine
	m       *conversation.Manager

	mu      sync.Mutex
	updates []conversation.Update
	context map[string]any
	newID   func() string
}

type fixtureOptions struct {
	noOperations bool
	// newID and context, when set, make the fixture build its own Manager with them.
	newID   func() string
	context map[string]any
	// editPoppy edits poppy.json before the engine discovers the Company.
	editPoppy func(s *refcompany.Server, doc map[string]any)
}

func newFixture(t testing.TB, o fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{context: o.context, newID: o.newID}
	f.Fixture = apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Tuning.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	}})
	f.s = f.Company
	if o.noOperations {
		f.s.EditPoppyJSON(func(doc map[string]any) { delete(doc["extensions"].(map[string]any), "operations") })
	}
	if o.editPoppy != nil {
		f.s.EditPoppyJSON(func(doc map[string]any) { o.editPoppy(f.s, doc) })
	}
	f.company = f.Discover(t).Identifier
	f.attach(t)
	return f
}

// attach takes the Host's engine, state database and Manager (or builds the fixture's own),
// and records the Manager's updates.
func (f *fixture) attach(t testing.TB) {
	t.Helper()
	f.e, f.store, f.m = f.Host.Engine(), f.Host.State(), f.Host.Conversations()
	if f.newID != nil || f.context != nil {
		m, err := conversation.New(conversation.Config{Engine: f.e, Store: f.store, Logger: f.Host.Logger(), NewMessageID: f.newID,
			Sleep:   func(ctx context.Context, d time.Duration) error { return ctx.Err() },
			Context: f.contextNow, OnUpdate: f.record})
		if err != nil {
			t.Fatal(err)
		}
		f.m = m
		return
	}
	f.Host.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if c, ok := first(data).(app.ConversationChange); ok && name == app.EventConversationsChanged {
			f.record(conversation.Update{Kind: c.Kind, Company: c.Company, ConversationID: c.ConversationID, MessageID: c.MessageID, Text: c.Text})
		}
	}))
}

func first(data []any) any {
	if len(data) == 0 {
		return nil
	}
	return data[0]
}

func (f *fixture) record(u conversation.Update) {
	f.mu.Lock()
	f.updates = append(f.updates, u)
	f.mu.Unlock()
}

// contextNow is a copy of the context fields the User's device would report now (spec 8.4).
func (f *fixture) contextNow() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.context == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range f.context {
		out[k] = v
	}
	return out
}

// restart closes the Host and builds a new one over the same folders, state database and
// keyring: new engine, new Manager (the start-up work resends what was persisted but not
// accepted, spec 8.3).
func (f *fixture) restart(t testing.TB) {
	t.Helper()
	f.Restart(t)
	f.attach(t)
}

// queued are the Host's approval queue items (the operations the Host's Manager found).
func (f *fixture) queued(t testing.TB) []approvals.Item {
	t.Helper()
	items, err := f.Host.Queue().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// signIn signs account in through the window's Sign-in service.
func (f *fixture) signIn(t testing.TB) {
	t.Helper()
	f.SignIn(t, account, "orders:read", "orders:write")
}

func (f *fixture) updateList() []conversation.Update {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]conversation.Update(nil), f.updates...)
}

func (f *fixture) kinds(kind string) []conversation.Update {
	var out []conversation.Update
	for _, u := range f.updateList() {
		if u.Kind == kind {
			out = append(out, u)
		}
	}
	return out
}

// readUntil reads (with wait) until pred holds for the transcript, or fails after 10 s.
func (f *fixture) readUntil(t testing.TB, id string, what string, pred func([]conversation.Entry) bool) []conversation.Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, es, err := f.m.Get(context.Background(), f.company, id)
		if err != nil {
			t.Fatal(err)
		}
		if pred(es) {
			return es
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened; transcript: %s", what, dump(es))
		}
		if _, err := f.m.Read(context.Background(), f.company, id, time.Second); err != nil {
			t.Fatalf("%s: read: %v", what, err)
		}
	}
}

func dump(es []conversation.Entry) string {
	b, _ := json.MarshalIndent(es, "", " ")
	return string(b)
}

func companyMessages(es []conversation.Entry) []conversation.Entry {
	var out []conversation.Entry
	for _, e := range es {
		if e.Type == conversation.EventMessage && e.Role == "company" {
			out = append(out, e)
		}
	}
	return out
}

func hasCompanyText(sub string) func([]conversation.Entry) bool {
	return func(es []conversation.Entry) bool {
		for _, e := range companyMessages(es) {
			if strings.Contains(e.Text, sub) {
				return true
			}
		}
		return false
	}
}

func hasType(typ string) func([]conversation.Entry) bool {
	return func(es []conversation.Entry) bool {
		for _, e := range es {
			if e.Type == typ {
				return true
			}
		}
		return false
	}
}

// postsTo returns the bodies of the POSTs to a conversation URL suffix ("" = the endpoint).
func (f *fixture) posts(suffix string) []refcompany.Request {
	var out []refcompany.Request
	for _, r := range f.s.RequestsTo(refcompany.ShopHost, "") {
		if r.Method == "POST" && strings.HasPrefix(r.Path, "/poppy/conversations") && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}
