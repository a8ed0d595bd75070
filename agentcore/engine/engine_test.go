package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

// fixture is the reference Company and an engine over it, with its state in an SQLite file
// (vault.State) and its secrets in memory, for the engine's own tests; the signed-in tests use
// the Host (signin_test.go).
type fixture struct {
	s         *refcompany.Server
	e         *engine.Engine
	state     *vault.State
	statePath string
	secrets   store.Secrets
	clock     *refcompany.Clock
	logs      *poppytest.Buffer

	mu      sync.Mutex
	onExchg func(transport.Exchange)
}

type options struct {
	faults   []string
	versions []string
	// restart, when set, is an earlier fixture: the new engine reaches its Company, reads its
	// clock and opens its state file and keyring again, as a restart of Poppydesk does.
	restart *fixture
	// state, when set, is what the engine gets as its state store, made from the fixture's
	// vault.State (to hold up its writes, say); the fixture still reads the vault.State.
	state func(*vault.State) store.EngineState
}

func newFixture(t testing.TB, o options) *fixture {
	t.Helper()
	f := &fixture{logs: &poppytest.Buffer{}}
	if r := o.restart; r != nil {
		f.s, f.clock, f.statePath, f.secrets = r.s, r.clock, r.statePath, r.secrets
	} else {
		f.clock = &refcompany.Clock{}
		f.s = poppytest.Start(t, refcompany.Options{Faults: o.faults, Now: f.clock.Now})
		f.statePath = filepath.Join(t.TempDir(), "state.sqlite")
		f.secrets = store.NewSecrets(store.NewMemoryKV())
	}
	var err error
	if f.state, err = vault.OpenState(context.Background(), f.statePath, vault.StateOptions{Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.state.Close() })
	tc := f.s.ClientConfig()
	tc.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	tc.Observer = func(ex transport.Exchange) {
		f.mu.Lock()
		fn := f.onExchg
		f.mu.Unlock()
		if fn != nil {
			fn(ex)
		}
	}
	// A handler WITHOUT ReplaceAttr: the engine must redact by itself.
	level := slog.LevelDebug
	if _, bench := t.(*testing.B); bench {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: level}))
	var st store.EngineState = f.state
	if o.state != nil {
		st = o.state(f.state)
	}
	e, err := engine.New(engine.Config{
		Transport: tc,
		Identity:  identityFor(f.s),
		Secrets:   f.secrets,
		State:     st,
		Logger:    logger,
		Now:       f.clock.Now,
		Versions:  o.versions,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	f.s.AddHost(refcompany.AgentHost, e.Agent().Handler(logger))
	f.e = e
	return f
}

// sessions are the signed-out Sessions with the reference Company recorded in the state
// database, oldest first.
func (f *fixture) sessions(t testing.TB) []store.Session {
	t.Helper()
	ss, err := f.state.ListSessions(context.Background(), f.s.Identifier(), "")
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// whenResponse calls fn once, from the transport's observer, when an exchange with this status
// is observed (before the engine reacts to it).
func (f *fixture) whenResponse(status int, fn func()) {
	var once sync.Once
	f.mu.Lock()
	f.onExchg = func(ex transport.Exchange) {
		if ex.Status == status {
			once.Do(fn)
		}
	}
	f.mu.Unlock()
}

func (f *fixture) discover(t *testing.T) *discovery.Company {
	t.Helper()
	c, err := f.e.Discover(context.Background(), f.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) get(t testing.TB, c *engine.Client, path string) (*transport.Response, error) {
	t.Helper()
	return get(t, f.s, c, path)
}

// get sends GET path on the reference Company's shop host through c and reads the body.
func get(t testing.TB, s *refcompany.Server, c *engine.Client, path string) (*transport.Response, error) {
	t.Helper()
	resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: s.URL(refcompany.ShopHost, path)})
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func sidsSent(t *testing.T, s *refcompany.Server, path string) []string {
	t.Helper()
	var out []string
	for _, r := range s.RequestsTo(refcompany.ShopHost, path) {
		out = append(out, poppytest.Claims(t, r.Header.Get("Poppy-Session"))["sid"].(string))
	}
	return out
}

// TestDiscoverAndSignedRequest: discovery → a signed request verified by the reference Company
// (its sessioncheck fetches the engine's client metadata and JWKS on agent.localhost); the
// Company and the Session are stored; the exchange log has the request with Poppy-Session masked.
func TestDiscoverAndSignedRequest(t *testing.T) {
	f := newFixture(t, options{})
	ctx := context.Background()
	c := f.discover(t)
	if c.Identifier != f.s.Identifier() {
		t.Fatalf("identifier = %s, want %s", c.Identifier, f.s.Identifier())
	}
	cl, err := f.e.Client(ctx, c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.get(t, cl, "/api/products")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	h := reqs[0].Header
	if h.Get("Poppy-Version") != "0.4" || h.Get("Poppy-Extensions") != `"operations";v="2"` || h.Get("Authorization") != "" {
		t.Fatalf("headers: version %q extensions %q authorization %q", h.Get("Poppy-Version"), h.Get("Poppy-Extensions"), h.Get("Authorization"))
	}
	claims := poppytest.Claims(t, h.Get("Poppy-Session"))
	if claims["aud"] != c.Identifier || claims["iss"] != f.e.Agent().ClientID() || claims["sid"] != cl.SID() {
		t.Fatalf("claims %v", claims)
	}

	// The Company is stored, and a second engine over the same state finds it without network.
	rec, err := f.state.GetCompany(ctx, c.Identifier)
	if err != nil || rec.Domain != f.s.Domain || !strings.Contains(string(rec.Document), "Shop (reference Company)") {
		t.Fatalf("stored company %+v, %v", rec, err)
	}
	// The Session is recorded, without the User ID.
	ss := f.sessions(t)
	if len(ss) != 1 || ss[0].SID != cl.SID() || ss[0].Company != c.Identifier || ss[0].Version != "0.4" ||
		strings.Join(ss[0].Extensions, ",") != `"operations";v="2"` || !ss[0].Ended.IsZero() {
		t.Fatalf("sessions %+v", ss)
	}
	sub := claims["sub"].(string)
	if b, _ := json.Marshal(f.sessions(t)); bytes.Contains(b, []byte(sub)) {
		t.Fatal("the User ID reached a Session record")
	}
	// The exchange log has the request, with Poppy-Session masked.
	if err := f.e.FlushExchanges(ctx); err != nil {
		t.Fatal(err)
	}
	var found bool
	exs, err := f.state.ListExchanges(ctx, vault.ExchangeQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exs {
		if strings.HasSuffix(ex.URL, "/api/products") {
			found = true
			if ex.RequestHeaders.Get("Poppy-Session") != redact.Mask || ex.Company != c.Identifier || ex.Status != 200 || ex.ID == 0 {
				t.Fatalf("exchange %+v", ex)
			}
		}
		if bytes.Contains([]byte(ex.RequestHeaders.Get("Poppy-Session")), []byte("eyJ")) {
			t.Fatal("a Session JWT reached the exchange log")
		}
	}
	if !found {
		t.Fatal("the request is not in the exchange log")
	}
	// Close records the end of the Session.
	if err := f.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ss := f.sessions(t); ss[0].Ended.IsZero() {
		t.Fatal("Close did not record the end of the Session")
	}
}

// TestExtensionsDeclared: "operations";v="2" is declared only when the Company lists version 2.
func TestExtensionsDeclared(t *testing.T) {
	tests := []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"operations 2 listed", nil, `"operations";v="2"`},
		{"operations 1 only", func(doc map[string]any) {
			doc["extensions"].(map[string]any)["operations"] = []any{map[string]any{"version": "1"}}
		}, ""},
		{"operations not listed", func(doc map[string]any) { delete(doc["extensions"].(map[string]any), "operations") }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			f.s.EditPoppyJSON(tc.edit)
			c := f.discover(t)
			cl, err := f.e.Client(context.Background(), c.Identifier, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.get(t, cl, "/api/products"); err != nil {
				t.Fatal(err)
			}
			reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
			if got := reqs[0].Header.Get("Poppy-Extensions"); got != tc.want {
				t.Fatalf("Poppy-Extensions = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSessionEnded: session_ended → a new Session with a new sid, the request sent again once;
// both Sessions recorded, the first one ended (spec 5.5).
func TestSessionEnded(t *testing.T) {
	tests := []struct {
		name         string
		endsNewToo   bool
		wantSessions int
	}{
		{"new Session succeeds", false, 2},
		{"new Session ended too: stop", true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{faults: []string{refcompany.FaultSessionEnded}})
			c := f.discover(t)
			if !tc.endsNewToo {
				f.whenResponse(400, func() { f.s.SetFault(refcompany.FaultSessionEnded, false) })
			}
			cl, err := f.e.Client(context.Background(), c.Identifier, "")
			if err != nil {
				t.Fatal(err)
			}
			first := cl.SID()
			resp, err := f.get(t, cl, "/api/products")
			if tc.endsNewToo {
				if !transport.IsCode(err, transport.CodeSessionEnded) {
					t.Fatalf("err = %v, want session_ended", err)
				}
			} else if err != nil || !resp.Renewed {
				t.Fatalf("resp %+v, err %v", resp, err)
			}
			sids := sidsSent(t, f.s, "/api/products")
			if len(sids) != 2 || sids[0] != first || sids[1] == first || sids[1] != cl.SID() {
				t.Fatalf("sids sent %v (first %s, now %s)", sids, first, cl.SID())
			}
			ss := f.sessions(t)
			if len(ss) != tc.wantSessions || ss[0].SID != sids[0] || ss[1].SID != sids[1] || ss[0].Ended.IsZero() || !ss[1].Ended.IsZero() {
				t.Fatalf("recorded sessions %+v", ss)
			}
		})
	}
}

// TestVersionUnsupported: version_unsupported → poppy.json again without cache; the same
// version stops; a changed version continues in a new Session, once (spec 3.4).
func TestVersionUnsupported(t *testing.T) {
	t.Run("same version stops", func(t *testing.T) {
		f := newFixture(t, options{faults: []string{refcompany.FaultVersionUnsupported}})
		c := f.discover(t)
		cl, err := f.e.Client(context.Background(), c.Identifier, "")
		if err != nil {
			t.Fatal(err)
		}
		before := len(f.s.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json"))
		_, err = f.get(t, cl, "/api/products")
		var pe *transport.ProtocolError
		if !errors.As(err, &pe) || pe.Code != transport.CodeVersionUnsupported || !strings.Contains(pe.Note, "still chooses version 0.4") {
			t.Fatalf("err = %v", err)
		}
		if after := len(f.s.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json")); after != before+1 {
			t.Fatalf("poppy.json fetched %d more times, want 1 (fresh cache entry bypassed)", after-before)
		}
		if n := len(f.s.RequestsTo(refcompany.ShopHost, "/api/products")); n != 1 || len(f.sessions(t)) != 1 {
			t.Fatalf("sent %d times, %d sessions", n, len(f.sessions(t)))
		}
	})
	t.Run("changed version continues in a new Session", func(t *testing.T) {
		// The engine implements 0.3 and 0.4; the Company first serves only 0.3 (so the engine
		// chooses it) and then drops it: its Session check serves 0.4 only, so the first
		// request gets version_unsupported, and poppy.json fetched again offers 0.4.
		f := newFixture(t, options{versions: []string{"0.3", "0.4"}})
		f.s.EditPoppyJSON(func(doc map[string]any) {
			doc["protocol_version"] = "0.3"
			delete(doc, "supported_versions")
		})
		c := f.discover(t)
		if c.Version != "0.3" {
			t.Fatalf("chose %s", c.Version)
		}
		f.whenResponse(400, func() { f.s.EditPoppyJSON(nil) })
		cl, err := f.e.Client(context.Background(), c.Identifier, "")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := f.get(t, cl, "/api/products")
		if err != nil || !resp.Renewed {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
		if len(reqs) != 2 || reqs[0].Header.Get("Poppy-Version") != "0.3" || reqs[1].Header.Get("Poppy-Version") != "0.4" {
			t.Fatalf("%d requests", len(reqs))
		}
		ss := f.sessions(t)
		if len(ss) != 2 || ss[0].Version != "0.3" || ss[0].Ended.IsZero() || ss[1].Version != "0.4" || ss[1].SID != cl.SID() || cl.Version() != "0.4" {
			t.Fatalf("sessions %+v", ss)
		}
		if got, _ := f.e.Company(context.Background(), c.Identifier); got.Version != "0.4" {
			t.Fatalf("stored Company version %s", got.Version)
		}
	})
}

// TestRestartUsesStoredState: a second engine over the same state and keyring finds the
// Company without fetching, keeps the User ID, starts a new sid, and remembers the issuer so a
// 404 for the protected resource metadata is not taken as "no issuer" (spec 3.2).
func TestRestartUsesStoredState(t *testing.T) {
	f := newFixture(t, options{})
	ctx := context.Background()
	c := f.discover(t)
	cl, err := f.e.Client(ctx, c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.get(t, cl, "/api/products"); err != nil {
		t.Fatal(err)
	}
	f.e.Close(ctx)

	g := newFixture(t, options{restart: f})
	f.s.ResetRequests()
	got, err := g.e.Company(ctx, c.Identifier)
	if err != nil || got.Organization.Name != c.Organization.Name || got.Document == nil {
		t.Fatalf("Company after restart: %+v, %v", got, err)
	}
	cl2, err := g.e.Client(ctx, c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.get(t, cl2, "/api/products"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.s.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json")); n != 0 {
		t.Fatalf("poppy.json fetched %d times after restart", n)
	}
	reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
	first := sidsSent(t, f.s, "/api/products")
	if cl2.SID() == cl.SID() || first[0] != cl2.SID() {
		t.Fatal("the restarted engine reused a sid")
	}
	sub := poppytest.Claims(t, reqs[0].Header.Get("Poppy-Session"))["sub"]
	if b, _ := f.secrets.LoadCompany(ctx, c.Identifier, ""); b.UserID != sub {
		t.Fatal("the User ID changed across a restart")
	}
	// The known issuer is remembered in the state: a 404 is not "no issuer".
	f.s.SetIssuerMode(refcompany.IssuerNone404)
	g.clock.Advance(10 * time.Minute) // the cached metadata (max-age=300) is stale
	_, err = g.e.Discover(ctx, f.s.Domain)
	if ce, ok := discovery.AsCheckError(err); !ok || ce.Check != discovery.CheckKnownIssuer {
		t.Fatalf("err = %v, want the known-issuer check", err)
	}
	if _, err := g.e.Company(ctx, "https://never.example"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unknown Company: %v", err)
	}
}

// TestDelegationRotation: past the rotation point a new delegated key signs; the Company still
// verifies; both keys are in the keyring bundle (spec 5.2).
func TestDelegationRotation(t *testing.T) {
	f := newFixture(t, options{})
	ctx := context.Background()
	c := f.discover(t)
	cl, err := f.e.Client(ctx, c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.get(t, cl, "/api/products"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(11*time.Hour + 30*time.Minute) // default lifetime 12 h, rotate 1 h before
	if _, err := f.get(t, cl, "/api/products"); err != nil {
		t.Fatal(err)
	}
	b, err := f.secrets.LoadCompany(ctx, c.Identifier, "")
	if err != nil || len(b.Delegated) != 2 {
		t.Fatalf("bundle has %d delegated keys, %v", len(b.Delegated), err)
	}
	reqs := f.s.RequestsTo(refcompany.ShopHost, "/api/products")
	kid := func(r refcompany.Request) string {
		h, _ := base64.RawURLEncoding.DecodeString(strings.Split(r.Header.Get("Poppy-Session"), ".")[0])
		var v struct{ Kid string }
		json.Unmarshal(h, &v)
		return v.Kid
	}
	if kid(reqs[0]) == kid(reqs[1]) || kid(reqs[1]) != b.Delegated[1].Thumbprint {
		t.Fatal("the delegated key did not rotate")
	}
}

// TestLoggerRedacts: the engine redacts attributes even when the caller's handler does not.
func TestLoggerRedacts(t *testing.T) {
	f := newFixture(t, options{})
	f.discover(t)
	jwt := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		leak string
	}{
		{"secret key", func(l *slog.Logger) { l.Info("x", "refresh_token", "RT-leak-1") }, "RT-leak-1"},
		{"secret key in a group", func(l *slog.Logger) { l.Info("x", slog.Group("tok", "access_token", "AT-leak-2")) }, "AT-leak-2"},
		{"JWT in a message and a value", func(l *slog.Logger) { l.Info("got "+jwt, "header", jwt) }, jwt},
		{"WithAttrs", func(l *slog.Logger) { l.With("user_id", "UID-leak-3").Info("x") }, "UID-leak-3"},
		{"LogValuer resolved first", func(l *slog.Logger) { l.Info("x", "v", redact.Secret("S-leak-4")) }, "S-leak-4"},
		{"error with a JWT", func(l *slog.Logger) { l.Info("x", "err", errors.New("bad "+jwt)) }, jwt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.log(f.e.Logger())
			if strings.Contains(f.logs.String(), tc.leak) {
				t.Fatalf("%q reached the log", tc.leak)
			}
		})
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "poppy exchange") || !strings.Contains(logs, redact.Mask) {
		t.Fatalf("the log lacks the exchange lines or masks: %s", logs)
	}
}

func identityFor(s *refcompany.Server) identity.Config {
	return identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json"), ClientName: "Poppydesk engine test"}
}

// TestRedirectedDocumentCached: poppy.json reached through a redirect is cached with its final
// URL (spec 3: the final URL's path is checked), so a restarted engine discovers from the
// persistent cache without any request.
func TestRedirectedDocumentCached(t *testing.T) {
	f := newFixture(t, options{})
	ctx := context.Background()
	www := strings.Replace(f.s.Domain, refcompany.ShopHost, refcompany.WWWHost, 1)
	tests := []struct{ name, domain string }{{"redirected", www}, {"direct", f.s.Domain}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.e.Discover(ctx, tc.domain); err != nil {
				t.Fatal(err)
			}
			g := newFixture(t, options{restart: f})
			f.s.ResetRequests()
			c, err := g.e.Discover(ctx, tc.domain)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.s.Requests()); n != 0 {
				t.Fatalf("%d requests; the persistent cache was not used", n)
			}
			if c.PoppyJSONURL != f.s.PoppyJSONURL() {
				t.Fatalf("final URL %s", c.PoppyJSONURL)
			}
		})
	}
}

// TestCompanyNames: a list names its Companies from the engine's memory, after a restart from the
// state database's name column (no document is read), and from the stored document for a Company
// stored before that column; unknown identifiers are left out.
func TestCompanyNames(t *testing.T) {
	f := newFixture(t, options{})
	ctx := context.Background()
	c := f.discover(t)
	want := store.CompanyName{Name: c.Organization.Name, Domain: c.Organization.Domain}
	check := func(e *engine.Engine, name string, wantOrg store.CompanyName) {
		t.Helper()
		got, err := e.CompanyNames(ctx, []string{c.Identifier, "https://none.example", c.Identifier})
		if err != nil || len(got) != 1 || got[c.Identifier] != wantOrg {
			t.Fatalf("%s: CompanyNames = %+v, %v; want %s: %+v", name, got, err, c.Identifier, wantOrg)
		}
	}
	check(f.e, "after discovery", want)
	rec, err := f.state.GetCompany(ctx, c.Identifier)
	ep, _ := c.AgentEndpoint()
	if err != nil || rec.Name != c.Organization.Name || rec.Agent != ep || ep == "" {
		t.Fatalf("stored Company: name %q, agent %q, %v; want %q, %q", rec.Name, rec.Agent, err, c.Organization.Name, ep)
	}
	f.e.Close(ctx)

	// After a restart the name column answers: a column that says otherwise than the document
	// is what is listed.
	rec.Name = "Named by the column"
	if err := f.state.PutCompany(ctx, rec); err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, options{restart: f})
	check(g.e, "after a restart", store.CompanyName{Name: "Named by the column", Domain: rec.Domain})
	g.e.Close(ctx)

	// Stored before the column: the document's organization.
	rec.Name = ""
	if err := g.state.PutCompany(ctx, rec); err != nil {
		t.Fatal(err)
	}
	h := newFixture(t, options{restart: g})
	check(h.e, "stored without a name", want)
}

// TestRediscoveryKeepsTheClient: discovering a Company again that has not changed (from the
// cache, and fetched anew) keeps the Company in use and so its Clients, whose Session
// destinations are built once (thousands of templates for a big API, which every model tool
// call that names the Company by its domain would otherwise build again); a Company that
// changed gets a new Client, so its Session destinations follow what it now lists (spec 5.2).
func TestRediscoveryKeepsTheClient(t *testing.T) {
	f := newFixture(t, options{})
	ctx := context.Background()
	c := f.discover(t)
	cl, err := f.e.Client(ctx, c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		discover func(context.Context, string) (*discovery.Company, error)
	}{{"from the cache", f.e.Discover}, {"fetched anew", f.e.DiscoverAnew}} {
		again, err := tc.discover(ctx, f.s.Domain)
		if err != nil {
			t.Fatal(err)
		}
		if again != c {
			t.Errorf("%s: the unchanged Company is a new object", tc.name)
		}
		if cl2, err := f.e.Client(ctx, c.Identifier, ""); err != nil || cl2 != cl {
			t.Errorf("%s: the unchanged Company's Client was built again (%v)", tc.name, err)
		}
	}
	f.s.EditPoppyJSON(func(doc map[string]any) { doc["organization"].(map[string]any)["name"] = "Shop, renamed" })
	changed, err := f.e.DiscoverAnew(ctx, f.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if changed == c || changed.Organization.Name != "Shop, renamed" {
		t.Fatalf("the renamed Company: %q (a new object: %v)", changed.Organization.Name, changed != c)
	}
	cl3, err := f.e.Client(ctx, c.Identifier, "")
	if err != nil || cl3 == cl {
		t.Fatalf("the changed Company kept its old Client (%v)", err)
	}
	if resp, err := f.get(t, cl3, "/api/products"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a request through the new Client: %v %v", resp, err)
	}
}
