package apis_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// fixture: a running reference Company, a discovered Company, a real test agent (identity,
// delegated keys, Session JWT signer) and the engine's dev-mode transport.
type fixture struct {
	s       *refcompany.Server
	clk     *refcompany.Clock
	tr      *transport.Transport
	company *discovery.Company
	cache   *discovery.MemoryCache // the discovery's cache, with the description it read
	dest    *transport.Destinations
	agent   *refcompany.TestAgent

	mu     sync.Mutex
	sleeps []time.Duration
}

const (
	tokenRW   = "tok-read-write"
	tokenRead = "tok-read-only"
)

var opsV2 = []session.Extension{{Name: "operations", Version: "2"}}

func newFixture(t testing.TB, faults ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clk: &refcompany.Clock{}}
	s := poppytest.Start(t, refcompany.Options{Faults: faults, Now: f.clk.Now})
	f.s = s
	f.tr = poppytest.Transport(t, s, func(cfg *transport.Config) {
		cfg.Now = f.clk.Now
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			f.mu.Unlock()
			return ctx.Err()
		}
	})
	f.cache = discovery.NewMemoryCache()
	disc, err := discovery.New(discovery.Config{Transport: f.tr, Now: f.clk.Now, Cache: f.cache})
	if err != nil {
		t.Fatal(err)
	}
	if f.company, err = disc.Discover(ctx, s.Domain); err != nil {
		t.Fatal(err)
	}
	if f.dest, err = f.company.SessionDestinations(); err != nil {
		t.Fatal(err)
	}
	if f.agent, err = s.NewTestAgent(ctx, f.clk.Now); err != nil {
		t.Fatal(err)
	}
	s.AddAccessToken(tokenRW, f.agent.ClientID, "orders:read", "orders:write")
	s.AddAccessToken(tokenRead, f.agent.ClientID, "orders:read")
	return f
}

// session opens a Session of the test agent (account "" for signed out) declaring exts.
func (f *fixture) session(t testing.TB, account string, exts []session.Extension) *session.Session {
	t.Helper()
	sess, err := f.agent.Sessions.Open(context.Background(), f.company.Identifier, session.Options{Account: account, Version: f.company.Version, Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// client is an apis.Client for a Session, signed out unless a request carries a token.
func (f *fixture) client(t testing.TB, signer transport.Signer) *apis.Client {
	t.Helper()
	return f.clientOver(t, f.tr, signer, f.dest, transport.Hooks{}, nil)
}

// clientFor is client with every request that carries no token sent with token (the pipeline's
// Token hook, as the engine gives each service's token).
func (f *fixture) clientFor(t testing.TB, signer transport.Signer, token string) *apis.Client {
	t.Helper()
	return f.clientOver(t, f.tr, signer, f.dest, transport.Hooks{Token: func(context.Context, *url.URL) (string, error) { return token, nil }}, nil)
}

// clientOver is an apis.Client over the signed-request pipeline of a Session (signer) on tr,
// with dest and hooks.
func (f *fixture) clientOver(t testing.TB, tr *transport.Transport, signer transport.Signer, dest *transport.Destinations, hooks transport.Hooks, described *apis.Described) *apis.Client {
	t.Helper()
	sc, err := tr.Session(transport.SessionConfig{Signer: signer, Destinations: dest, Version: f.company.Version, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	c, err := apis.New(apis.Config{Session: sc, Described: described, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// otherAgent is a second Personal Agent (another client_id) served on agent.localhost next to
// the first, with its own Sessions.
func (f *fixture) otherAgent(t testing.TB) (string, *session.Manager) {
	t.Helper()
	secrets := store.NewSecrets(store.NewMemoryKV())
	cid := f.s.URL(refcompany.AgentHost, "/other/agent.json")
	a2, err := identity.New(identity.Config{ClientID: cid, ClientName: "another agent"}, identity.NewLocalOperator(secrets, f.clk.Now), f.clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := session.NewManager(session.Config{Secrets: secrets, Delegator: a2, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/other/", a2.Handler(nil))
	mux.Handle("/", f.agent.Identity.Handler(nil))
	f.s.AddHost(refcompany.AgentHost, mux)
	return cid, m2
}

func (f *fixture) openAPI(t testing.TB, c *apis.Client) *apis.Description {
	t.Helper()
	sel := apis.Select(f.company.Document.APIs)
	if len(sel.OpenAPI) != 1 {
		t.Fatalf("selection = %+v", sel)
	}
	d, err := c.FetchOpenAPI(context.Background(), sel.OpenAPI[0])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// exchangeRequest is the spec's exchange: itm_4Qa of ord_7Hk2 for stormline-insulated-m.
func exchangeRequest(t testing.TB, d *apis.Description, token, sku string) *apis.Request {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"item_id": "itm_4Qa", "replacement_sku": sku})
	r, err := d.NewRequest("exchangeItem", apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: body, AccessToken: token})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// operation is the operation object the tests read (Operations 3).
type operation struct {
	OperationID string         `json:"operation_id"`
	Revision    string         `json:"revision"`
	Summary     string         `json:"summary"`
	Terms       map[string]any `json:"terms"`
	ExpiresAt   string         `json:"expires_at"`
}

// approvalRequired reads a 403 approval_required body (Operations 4).
func approvalRequired(t testing.TB, res *apis.Result) operation {
	t.Helper()
	if res == nil || res.Status != http.StatusForbidden {
		t.Fatalf("want 403 approval_required, got %+v", res)
	}
	var b struct {
		Error     string    `json:"error"`
		Operation operation `json:"operation"`
	}
	if err := res.JSON(&b); err != nil || b.Error != "approval_required" {
		t.Fatalf("body %s: %v", res.Body, err)
	}
	if b.Operation.OperationID == "" || b.Operation.Revision == "" || b.Operation.Summary == "" || b.Operation.ExpiresAt == "" {
		t.Fatalf("incomplete operation %s", res.Body)
	}
	return b.Operation
}

// approvalHeader serializes Poppy-Approval (RFC 9651 Dictionary, Operations 6).
func approvalHeader(t testing.TB, id, rev string) string {
	t.Helper()
	v, err := headers.FormatApproval(id, rev)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
