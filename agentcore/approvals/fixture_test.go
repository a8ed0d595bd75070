package approvals_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

const account = "alice"

// fixture: an engine over the reference Company as the Host builds one (poppytest.NewEngine: its
// state database on disk, one clock), with account "alice" signed in, and the approval queue and
// conversation manager over it, wired to each other as the Host wires them. It records the
// queue's changes, and every wait of the transport and the queue, without waiting.
type fixture struct {
	s       *refcompany.Server
	clk     *refcompany.Clock
	eng     *poppytest.Engine
	store   *vault.State
	company string // identifier
	openapi string // apis[].url of the OpenAPI description
	mcp     string // apis[].url of the MCP server
	token   string // the account's access token (the default one) after the sign-in

	e           *engine.Engine
	q           *approvals.Queue
	m           *conversation.Manager
	maxAttempts int

	mu     sync.Mutex
	events []approvals.Event
	sleeps []time.Duration
	// onChange, when set, runs inside the queue's OnChange (to check what is durable then).
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
	f := &fixture{clk: &refcompany.Clock{}, maxAttempts: o.maxAttempts}
	f.s = poppytest.Start(t, refcompany.Options{Faults: o.faults, Now: f.clk.Now})
	if o.edit != nil {
		f.s.EditPoppyJSON(o.edit)
	}
	f.open(t, poppytest.EngineOptions{})
	f.eng.SignIn(t, f.s, account, "orders:read", "orders:write")
	c := f.eng.Discover(t, f.s)
	f.company = c.Identifier
	for _, a := range c.Document.APIs {
		switch a.Type {
		case "openapi":
			f.openapi = a.URL
		case "mcp":
			f.mcp = a.URL
		}
	}
	f.token = f.accessToken(t)
	f.mu.Lock()
	f.sleeps = nil // the sign-in's, if any
	f.mu.Unlock()
	return f
}

// open builds the engine (over the state database and secrets of o, a restart's), and the queue
// and the conversation manager over it as the Host composes them: the manager hands the
// operations it finds to the queue, and the queue sends approvals in conversations through it.
func (f *fixture) open(t testing.TB, o poppytest.EngineOptions) {
	t.Helper()
	o.Clock = f.clk
	o.Transport = func(c *transport.Config) { c.Sleep, c.Observer = f.sleep, f.observe }
	f.eng = poppytest.NewEngine(t, f.s, o)
	f.e, f.store = f.eng.Engine, f.eng.State
	q, err := approvals.New(approvals.Config{Engine: f.e, Store: f.store, Now: f.clk.Now, Sleep: f.sleep, MaxAttempts: f.maxAttempts,
		OnChange: f.changed, Conversations: conversationSender{f}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	m, err := conversation.New(conversation.Config{Engine: f.e, Store: f.store, Now: f.clk.Now, Sleep: f.sleep,
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

// conversationSender sends the queue's approvals in conversations through the fixture's
// current manager, as the Host's does.
type conversationSender struct{ f *fixture }

func (s conversationSender) SendApproval(ctx context.Context, company, id, messageID string, a operations.Approval, wait time.Duration) (*conversation.View, error) {
	return s.f.m.SendApproval(ctx, company, id, messageID, a, wait)
}

// sleep records a wait of the transport or the queue and returns at once.
func (f *fixture) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.sleeps = append(f.sleeps, d)
	f.mu.Unlock()
	return ctx.Err()
}

func (f *fixture) observe(ex transport.Exchange) {
	f.mu.Lock()
	fn := f.onExchange
	f.mu.Unlock()
	if fn != nil {
		fn(ex)
	}
}

func (f *fixture) changed(ev approvals.Event) {
	f.mu.Lock()
	f.events = append(f.events, ev)
	fn := f.onChange
	f.mu.Unlock()
	if fn != nil {
		fn(ev)
	}
}

// restart closes the queue and the engine and builds new ones over the same state database and
// keyring, sending each approval up to maxAttempts times (0: the default), and recovers the
// queue as the Host's start-up work does: what a restart of Poppydesk does (new Sessions).
func (f *fixture) restart(t testing.TB, maxAttempts int) {
	t.Helper()
	f.q.Close()
	f.eng.Close()
	f.maxAttempts = maxAttempts
	f.open(t, poppytest.EngineOptions{Path: f.eng.Path, Secrets: f.eng.Secrets})
	if err := f.q.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// accessToken is the account's default access token in the keyring.
func (f *fixture) accessToken(t testing.TB) string {
	t.Helper()
	b, err := f.eng.Secrets.LoadCompany(context.Background(), f.company, account)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range b.Tokens {
		if tok.Resource == "" && tok.AccessToken != "" {
			return tok.AccessToken
		}
	}
	t.Fatal("the sign-in left no access token")
	return ""
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
func (f *fixture) approvalRequests() []refcompany.Request {
	var out []refcompany.Request
	for _, r := range f.s.Requests() {
		if r.Header.Get("Poppy-Approval") != "" || strings.Contains(string(r.Body), refcompany.ApprovalMetaKey) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fixture) exchangeRequests() []refcompany.Request {
	return f.s.RequestsTo(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges")
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
