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
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

const account = "alice"

// fixture: an engine over the reference Company as the Host builds one (poppytest.NewEngine: its
// state database on disk, one clock), and the conversation Manager under test over it, wired to
// an approval queue as the Host wires them (the operations it finds go to the queue). Waits pass
// at once, and the Manager's updates are recorded.
type fixture struct {
	s       *refcompany.Server
	clk     *refcompany.Clock
	eng     *poppytest.Engine
	store   *vault.State
	company string
	e       *engine.Engine
	m       *conversation.Manager
	q       *approvals.Queue

	mu      sync.Mutex
	updates []conversation.Update
	context map[string]any
	newID   func() string
}

type fixtureOptions struct {
	noOperations bool
	// newID and context, when set, are the Manager's NewMessageID and the device's context.
	newID   func() string
	context map[string]any
	// editPoppy edits poppy.json before the engine discovers the Company.
	editPoppy func(s *refcompany.Server, doc map[string]any)
}

func newFixture(t testing.TB, o fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{clk: &refcompany.Clock{}, context: o.context, newID: o.newID}
	f.s = poppytest.Start(t, refcompany.Options{Now: f.clk.Now})
	f.open(t, poppytest.EngineOptions{})
	if o.noOperations {
		f.s.EditPoppyJSON(func(doc map[string]any) { delete(doc["extensions"].(map[string]any), "operations") })
	}
	if o.editPoppy != nil {
		f.s.EditPoppyJSON(func(doc map[string]any) { o.editPoppy(f.s, doc) })
	}
	f.company = f.eng.Discover(t, f.s).Identifier
	return f
}

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// open builds the engine (over the state database and secrets of o, a restart's), the approval
// queue and the Manager under test.
func (f *fixture) open(t testing.TB, o poppytest.EngineOptions) {
	t.Helper()
	o.Clock = f.clk
	o.Transport = func(c *transport.Config) { c.Sleep = noWait }
	f.eng = poppytest.NewEngine(t, f.s, o)
	f.e, f.store = f.eng.Engine, f.eng.State
	q, err := approvals.New(approvals.Config{Engine: f.e, Store: f.store, Now: f.clk.Now, Sleep: noWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	m, err := conversation.New(conversation.Config{Engine: f.e, Store: f.store, Now: f.clk.Now, NewMessageID: f.newID, Sleep: noWait,
		Context: f.contextNow, OnUpdate: f.record,
		OnOperation: func(ctx context.Context, found conversation.OperationFound) {
			if _, err := q.ProposeFromConversation(ctx, found); err != nil {
				t.Errorf("the queue refused the conversation's operation: %v", err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.q, f.m = q, m
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

// restart closes the engine and builds a new one over the same state database and keyring, with
// a new queue and Manager: what a restart of Poppydesk does (new Sessions; what was persisted
// but not accepted is sent again by Resume, spec 8.3).
func (f *fixture) restart(t testing.TB) {
	t.Helper()
	f.q.Close()
	f.eng.Close()
	f.open(t, poppytest.EngineOptions{Path: f.eng.Path, Secrets: f.eng.Secrets})
}

// queued are the approval queue's items (the operations the Manager found).
func (f *fixture) queued(t testing.TB) []approvals.Item {
	t.Helper()
	items, err := f.q.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// signIn signs account in with Direct Sign-In, the Company approving as the user would.
func (f *fixture) signIn(t testing.TB) {
	t.Helper()
	f.eng.SignIn(t, f.s, account, "orders:read", "orders:write")
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
