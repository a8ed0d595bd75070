package approvals_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// clock is a test clock shared by the reference Company and the engine: real time plus an offset.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }

const (
	account = "alice"
	token   = "tok-alice-rw"
)

// fixture: a running reference Company, an engine discovered it and signed in to account
// "alice" (a token in the keyring bundle), and a Queue over a store.MemoryApprovals.
type fixture struct {
	s       *poppytest.Server
	clk     *clock
	secrets store.Secrets
	store   store.Approvals
	company string // identifier
	openapi string // apis[].url of the OpenAPI description
	mcp     string // apis[].url of the MCP server

	e *engine.Engine
	q *approvals.Queue

	mu     sync.Mutex
	events []approvals.Event
	sleeps []time.Duration
	// onChange, when set, runs inside OnChange (to check what is durable at that moment).
	onChange func(approvals.Event)
	// onExchange, when set, sees every exchange when its response was read (timings).
	onExchange func(transport.Exchange)
}

type fixtureOptions struct {
	faults      []string
	maxAttempts int
	edit        func(doc map[string]any) // poppy.json edit before discovery
}

func newFixture(t testing.TB, o fixtureOptions) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{clk: &clock{}, secrets: store.NewSecrets(store.NewMemoryKV()), store: store.NewMemoryApprovals()}
	s, err := poppytest.New(poppytest.Options{Faults: o.faults, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.s = s
	if o.edit != nil {
		s.EditPoppyJSON(o.edit)
	}
	f.start(t, o.maxAttempts)
	c, err := f.e.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	f.company = c.Identifier
	for _, a := range c.Document.APIs {
		switch a.Type {
		case "openapi":
			f.openapi = a.URL
		case "mcp":
			f.mcp = a.URL
		}
	}
	s.AddAccessToken(token, f.e.Agent().ClientID(), "orders:read", "orders:write")
	if _, err := f.secrets.UpdateCompany(ctx, f.company, account, func(b *store.CompanyBundle) error {
		b.Tokens = []store.Token{{AccessToken: token, TokenType: "Bearer", Scopes: []string{"orders:read", "orders:write"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// start builds a new engine and Queue over the same secrets and store: what a restart of
// Poppydesk does (new Sessions, the same keyring and state database).
func (f *fixture) start(t testing.TB, maxAttempts int) {
	t.Helper()
	tc := f.s.ClientConfig()
	tc.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	tc.Observer = func(ex transport.Exchange) {
		f.mu.Lock()
		fn := f.onExchange
		f.mu.Unlock()
		if fn != nil {
			fn(ex)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(engine.Config{Transport: tc, Identity: identity.Config{ClientID: f.s.URL(poppytest.AgentHost, "/agent.json"), ClientName: "approvals test"},
		Secrets: f.secrets, State: store.NewMemoryEngineState(), Logger: logger, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	f.s.AddHost(poppytest.AgentHost, e.Agent().Handler(logger))
	if f.company != "" {
		if _, err := e.Discover(context.Background(), f.s.Domain); err != nil {
			t.Fatal(err)
		}
	}
	q, err := approvals.New(approvals.Config{Engine: e, Store: f.store, Now: f.clk.Now, Logger: logger, MaxAttempts: maxAttempts,
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			f.mu.Unlock()
			return ctx.Err()
		},
		OnChange: func(ev approvals.Event) {
			f.mu.Lock()
			f.events = append(f.events, ev)
			fn := f.onChange
			f.mu.Unlock()
			if fn != nil {
				fn(ev)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	f.e, f.q = e, q
}

// exchange is the model's call of the spec's exchange on order ord_7Hk2, item itm_4Qa.
func (f *fixture) exchange(sku string, intent map[string]string) approvals.APICall {
	body, _ := json.Marshal(map[string]string{"item_id": "itm_4Qa", "replacement_sku": sku})
	return approvals.APICall{Company: f.company, Account: account, API: f.openapi, OperationID: "exchangeItem",
		Input: inputFor("ord_7Hk2", body), Intent: intent}
}

func inputFor(orderID string, body []byte) apis.Input {
	return apis.Input{Path: map[string]string{"id": orderID}, Body: body}
}

func (f *fixture) exchangeTool(sku string) approvals.ToolCall {
	args, _ := json.Marshal(map[string]string{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": sku})
	return approvals.ToolCall{Company: f.company, Account: account, Server: f.mcp, Tool: "exchange_item", Arguments: args}
}

// approvalRequests are the requests that reached the Company carrying an approval (header or
// _meta), in order.
func (f *fixture) approvalRequests() []poppytest.Request {
	var out []poppytest.Request
	for _, r := range f.s.Requests() {
		if r.Header.Get("Poppy-Approval") != "" || strings.Contains(string(r.Body), poppytest.ApprovalMetaKey) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fixture) exchangeRequests() []poppytest.Request {
	return f.s.RequestsTo(poppytest.ShopHost, "/api/orders/ord_7Hk2/exchanges")
}

func (f *fixture) eventList() []approvals.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]approvals.Event(nil), f.events...)
}

func (f *fixture) sleepList() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

func (f *fixture) decisions(t testing.TB, id string) []string {
	t.Helper()
	ds, err := f.store.Decisions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.Decision+":"+d.To)
	}
	return out
}

func (f *fixture) get(t testing.TB, id string) *approvals.Item {
	t.Helper()
	it, err := f.q.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func mustWaiting(t testing.TB) func(*approvals.Outcome, error) string {
	return func(o *approvals.Outcome, err error) string {
		t.Helper()
		return checkWaiting(t, o, err)
	}
}

func checkWaiting(t testing.TB, o *approvals.Outcome, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != approvals.StatusWaitingForUser || o.ApprovalID == "" {
		t.Fatalf("outcome = %+v, want waiting_for_user", o)
	}
	return o.ApprovalID
}
