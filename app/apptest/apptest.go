// Package apptest is the product's one test fixture, in the spirit of net/http/httptest: one
// call gives the reference Company running on loopback TLS (agentcore/poppytest), a Host built
// by app.New exactly as `poppydesk` builds it — developer mode for the reference Company's hosts
// and its generated CA, the state database on disk — and one clock both of them read. Cleanup
// is registered with the test.
//
// Sign-ins go through the window's own Sign-in service (app/fronts SignIn.StartDirect), with the
// reference Company playing the user's browser on the consent page, so a test signs in the way
// a user does.
package apptest

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// Options configure a Fixture. The zero value is the reference Company without faults and a
// Host with in-memory secrets and no model socket.
type Options struct {
	// Faults are the reference Company's faults switched on at start.
	Faults []string
	// DPoP makes the reference Company's issuer require DPoP-bound tokens (RFC 9449).
	DPoP bool
	// Secrets is the Host's secret store (nil: in memory). A test of the real keyring passes
	// the vault's.
	Secrets store.Secrets
	// Dir holds the Host's folders ("": a new t.TempDir()).
	Dir string
	// Socket makes the Host serve the model's MCP socket under Dir.
	Socket bool
	// Clock is shared by both sides (nil: a new running refcompany.Clock).
	Clock *refcompany.Clock
	// Edit changes the Host's Config last, before app.New.
	Edit func(*app.Config)
	// Company is an already running reference Company to use instead of starting one.
	Company *refcompany.Server
	// Demo builds the Host in demo mode: the Host starts the reference Company itself (with
	// Faults), and Fixture.Company is that one.
	Demo bool
	// NoCompany starts no reference Company: the Host talks to a Company running elsewhere
	// (`poppydesk company serve` in another process, say), named by the developer mode Edit
	// sets, and publishes its own client metadata on loopback as developer mode does.
	// Fixture.Company is nil, and Edit sets the Opener.
	NoCompany bool
}

// Fixture is a running reference Company and a Host connected to it.
type Fixture struct {
	Company *refcompany.Server
	Host    *app.Host
	Clock   *refcompany.Clock
	// Config is what the Host was built from (Restart builds a new Host from it).
	Config app.Config
	// Logs holds the Host's JSON log lines.
	Logs *Buffer

	t      testing.TB
	closed bool
	dpop   bool
}

// Start starts the reference Company and builds a Host over it.
func Start(t testing.TB, o Options) *Fixture {
	t.Helper()
	clk := o.Clock
	if clk == nil {
		clk = &refcompany.Clock{}
	}
	srv := o.Company
	if srv == nil && !o.Demo && !o.NoCompany {
		srv = poppytest.Start(t, refcompany.Options{Faults: o.Faults, Now: clk.Now})
	}
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	secrets := o.Secrets
	if secrets == nil {
		secrets = store.NewSecrets(store.NewMemoryKV())
	}
	f := &Fixture{Company: srv, Clock: clk, Logs: &Buffer{}, t: t, dpop: o.DPoP}
	f.Config = app.Config{
		Version:  "test",
		Paths:    app.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state")},
		Logger:   app.NewLogger(f.Logs, slog.LevelDebug),
		Now:      clk.Now,
		Getenv:   func(string) string { return "" },
		Secrets:  secrets,
		Socket:   app.NoSocket,
		Opener:   app.OpenerFunc(f.approveAsUser),
		Notifier: app.NotifierFunc(func(string, string) {}),
		Tuning:   app.Tuning{DirectTimeout: 30 * time.Second},
	}
	switch {
	case o.Demo:
		f.Config.Demo = &app.DemoOptions{Faults: o.Faults}
	case srv != nil:
		cc := srv.ClientConfig()
		f.Config.ClientID = srv.URL(refcompany.AgentHost, "/agent.json")
		f.Config.Developer = app.Developer{Hosts: cc.DevHosts, RootCAs: cc.DevRootCAs}
	}
	if o.Socket {
		// Unix socket paths are short (108 bytes): a folder of its own under /tmp.
		f.Config.Socket = filepath.Join(shortDir(t), "mcp.sock")
	}
	if o.Edit != nil {
		o.Edit(&f.Config)
	}
	f.start(t)
	t.Cleanup(func() { f.Close() })
	return f
}

func (f *Fixture) start(t testing.TB) {
	t.Helper()
	h, err := app.New(context.Background(), f.Config)
	if err != nil {
		t.Fatal(err)
	}
	f.Host, f.closed = h, false
	if f.Config.Demo != nil {
		f.Company = h.DemoCompany()
	} else if f.Company != nil && h.Engine() != nil { // a Host without an engine (app.Problem) publishes no agent
		f.Company.AddHost(refcompany.AgentHost, h.Engine().Agent().Handler(h.Logger()))
	}
	if f.dpop && f.Company != nil {
		f.Company.SetDPoP(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitStarted(ctx); err != nil {
		t.Fatalf("the Host's start-up work did not finish: %v", err)
	}
}

// Open builds a Host from cfg as `poppydesk` does (app.New) and waits for its start-up work to
// finish, for a test that times a start; the caller closes the Host.
func Open(tb testing.TB, cfg app.Config) *app.Host {
	tb.Helper()
	h, err := app.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.WaitStarted(ctx); err != nil {
		tb.Fatalf("the Host's start-up work did not finish: %v", err)
	}
	return h
}

// Close closes the Host (the reference Company stops at the test's cleanup).
func (f *Fixture) Close() {
	if f.closed || f.Host == nil {
		return
	}
	f.closed = true
	if err := f.Host.CloseWithin(app.ShutdownGrace); err != nil {
		f.t.Errorf("closing the Host: %v", err)
	}
}

// Restart closes the Host and builds a new one from the same Config: the same folders, state
// database and secrets, new Sessions — what a restart of Poppydesk does.
func (f *Fixture) Restart(t testing.TB) {
	t.Helper()
	f.Close()
	f.start(t)
}

// Fronts are the window's services over the fixture's Host, as the window calls them.
func (f *Fixture) Fronts() *fronts.Services { return fronts.New(f.Host) }

// Discover discovers the reference Company through the Host's engine.
func (f *Fixture) Discover(t testing.TB) *discovery.Company {
	t.Helper()
	co, err := f.Host.Engine().Discover(context.Background(), f.Company.Domain)
	if err != nil {
		t.Fatal(err)
	}
	return co
}

// SignIn signs account in to the reference Company with Direct Sign-In through the window's
// Sign-in service, approving scopes on the Company's consent page as the user would.
func (f *Fixture) SignIn(t testing.TB, account string, scopes ...string) {
	t.Helper()
	co := f.Discover(t)
	signIn := f.Fronts().SignIn
	view, err := signIn.StartDirect(co.Identifier, account, scopes, "")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, err := signIn.Flow(view.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch v.State {
		case fronts.FlowWaiting:
			time.Sleep(10 * time.Millisecond)
			continue
		case fronts.FlowSucceeded:
			return
		}
		t.Fatalf("the sign-in ended %s: %s (%s)", v.State, v.Message, v.Detail)
	}
	t.Fatal("the sign-in did not finish within 30 s")
}

// approveAsUser is the Host's opener: the reference Company plays the user's browser and
// approves every scope the authorization URL asks for.
func (f *Fixture) approveAsUser(authURL string) error {
	if f.Company == nil {
		return errors.New("apptest: no reference Company runs in this process to answer the consent page; set the Opener in Options.Edit")
	}
	u, err := url.Parse(authURL)
	if err != nil {
		return err
	}
	scopes := strings.Fields(u.Query().Get("scope"))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Company.ApproveSignIn(ctx, authURL, "user@shop.example", scopes); err != nil && !errors.Is(err, context.Canceled) {
			f.t.Logf("the reference Company could not approve the sign-in: %v", err)
		}
	}()
	return nil
}

// Buffer is a goroutine-safe log buffer (poppytest's).
type Buffer = poppytest.Buffer

// shortDir is a temporary folder with a short path, for Unix sockets.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ppd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Model connects the official MCP client, named name, to the fixture's model server ([Model]).
func (f *Fixture) Model(t testing.TB, name string) *mcp.ClientSession {
	t.Helper()
	return Model(t, f.Host, name)
}

// Model connects the official MCP client, named name, to h's model server in memory, as a
// model's MCP client would reach it over the socket; both ends close when the test ends.
func Model(t testing.TB, h *app.Host, name string) *mcp.ClientSession {
	t.Helper()
	return ModelWith(t, h, name, nil)
}

// ModelWith is [Model] with the client's options (its handlers of notifications).
func ModelWith(t testing.TB, h *app.Host, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.ModelServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("connecting to the model server: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("the MCP client's initialize: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
