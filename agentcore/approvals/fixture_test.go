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
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/vault"
)

const account = "alice"

// fixture: the Host of app/apptest over the reference Company (its state database on disk, one
// clock), with account "alice" signed in through the window's Sign-in service, and the Host's
// engine and approval queue. It records the queue's changes as the window hears them, and every
// wait of the Host (Tuning.Sleep: transport, queue and sign-in), without waiting.
type fixture struct {
	*apptest.Fixture
	s       *refcompany.Server
	clk     *refcompany.Clock
	store   *vault.State
	company string // identifier
	openapi string // apis[].url of the OpenAPI description
	mcp     string // apis[].url of the MCP server
	token   string // the account's access token (the default one) after the sign-in

	e *engine.Engine
	q *approvals.Queue

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
	f := &fixture{}
	f.Fixture = apptest.Start(t, apptest.Options{Faults: o.faults, Edit: func(c *app.Config) {
		c.Tuning.ApprovalAttempts = o.maxAttempts
		c.Tuning.Sleep = func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			f.mu.Unlock()
			return ctx.Err()
		}
		c.Tuning.Observer = func(ex transport.Exchange) {
			f.mu.Lock()
			fn := f.onExchange
			f.mu.Unlock()
			if fn != nil {
				fn(ex)
			}
		}
	}})
	f.s, f.clk = f.Company, f.Clock
	if o.edit != nil {
		f.s.EditPoppyJSON(o.edit)
	}
	f.SignIn(t, account, "orders:read", "orders:write")
	c := f.Discover(t)
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
	f.attach()
	f.mu.Lock()
	f.sleeps = nil // the sign-in's, if any
	f.mu.Unlock()
	return f
}

// attach takes the Host's engine, queue and state database, and listens to the queue's changes
// as the window does (app.EventApprovalsChanged, emitted inside the queue's OnChange).
func (f *fixture) attach() {
	f.e, f.q, f.store = f.Host.Engine(), f.Host.Queue(), f.Host.State()
	f.Host.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if name != app.EventApprovalsChanged || len(data) == 0 {
			return
		}
		c, ok := data[0].(app.ApprovalChange)
		if !ok {
			return
		}
		ev := approvals.Event{Kind: c.Kind, ApprovalID: c.ID, State: c.State}
		f.mu.Lock()
		f.events = append(f.events, ev)
		fn := f.onChange
		f.mu.Unlock()
		if fn != nil {
			fn(ev)
		}
	}))
}

// restart closes the Host and builds a new one over the same folders, state database and
// keyring, sending each approval up to maxAttempts times (0: the default): what a restart of
// Poppydesk does (new Sessions; the start-up work recovers the queue).
func (f *fixture) restart(t testing.TB, maxAttempts int) {
	t.Helper()
	f.Config.Tuning.ApprovalAttempts = maxAttempts
	f.Restart(t)
	f.attach()
}

// accessToken is the account's default access token in the keyring.
func (f *fixture) accessToken(t testing.TB) string {
	t.Helper()
	b, err := f.Host.Secrets().LoadCompany(context.Background(), f.company, account)
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
