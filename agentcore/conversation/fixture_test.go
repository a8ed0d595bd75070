package conversation_test

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

const (
	account = "alice"
	token   = "tok-alice-conv"
)

type fixture struct {
	s       *poppytest.Server
	secrets store.Secrets
	store   *store.MemoryConversations
	company string
	e       *engine.Engine
	m       *conversation.Manager

	mu      sync.Mutex
	updates []conversation.Update
	ops     []conversation.OperationFound
	context map[string]any
}

type fixtureOptions struct {
	noOperations bool
	newID        func() string
	// editPoppy edits poppy.json before the engine discovers the Company.
	editPoppy func(s *poppytest.Server, doc map[string]any)
}

func newFixture(t testing.TB, o fixtureOptions) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{secrets: store.NewSecrets(store.NewMemoryKV()), store: store.NewMemoryConversations()}
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.s = s
	if o.noOperations {
		s.EditPoppyJSON(func(doc map[string]any) { delete(doc["extensions"].(map[string]any), "operations") })
	}
	if o.editPoppy != nil {
		s.EditPoppyJSON(func(doc map[string]any) { o.editPoppy(s, doc) })
	}
	f.start(t, o.newID)
	s.AddAccessToken(token, f.e.Agent().ClientID(), "orders:read", "orders:write")
	return f
}

// start builds a new engine and Manager over the same secrets and Store: what a restart does.
func (f *fixture) start(t testing.TB, newID func() string) {
	t.Helper()
	tc := f.s.ClientConfig()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(engine.Config{Transport: tc, Identity: identity.Config{ClientID: f.s.URL(poppytest.AgentHost, "/agent.json"), ClientName: "conversation test"},
		Secrets: f.secrets, State: store.NewMemoryEngineState(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	f.s.AddHost(poppytest.AgentHost, e.Agent().Handler(logger))
	c, err := e.Discover(context.Background(), f.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	f.company = c.Identifier
	m, err := conversation.New(conversation.Config{Engine: e, Store: f.store, Logger: logger, NewMessageID: newID,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		Context: func() map[string]any {
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
		},
		OnUpdate: func(u conversation.Update) {
			f.mu.Lock()
			f.updates = append(f.updates, u)
			f.mu.Unlock()
		},
		OnOperation: func(ctx context.Context, op conversation.OperationFound) {
			f.mu.Lock()
			f.ops = append(f.ops, op)
			f.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.e, f.m = e, m
}

// signIn puts account's access token in the keyring bundle (what a finished sign-in leaves).
func (f *fixture) signIn(t testing.TB) {
	t.Helper()
	if _, err := f.secrets.UpdateCompany(context.Background(), f.company, account, func(b *store.CompanyBundle) error {
		b.Tokens = []store.Token{{AccessToken: token, TokenType: "Bearer", Scopes: []string{"orders:read", "orders:write"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
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
func (f *fixture) posts(suffix string) []poppytest.Request {
	var out []poppytest.Request
	for _, r := range f.s.RequestsTo(poppytest.ShopHost, "") {
		if r.Method == "POST" && strings.HasPrefix(r.Path, "/poppy/conversations") && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}
