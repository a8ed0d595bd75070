package app_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/vault"
)

// TestGetStartedWithTheDefaultOperator is the first run of a build that names an operator, through
// the window's Shell service: with no identity the window says which operator Get started uses;
// one call enrolls this device with it (open enrollment, a real operator over loopback TLS) and
// returns the name and logo Companies will see; the restart it asks for starts the engine signing
// as the operator, and a Company (the reference Company, which reads the operator's metadata and
// keys as any Company does) accepts its signed request. A second Get started enrolls no second
// device; a build without a default operator, or a Poppydesk that cannot restart itself, says so.
func TestGetStartedWithTheDefaultOperator(t *testing.T) {
	ctx := context.Background()
	clk := &refcompany.Clock{}
	op := apptest.StartOperator(t, apptest.OperatorOptions{ClientName: "Acme Agents", Enrollment: identity.EnrollmentOpen, Clock: clk})
	company := poppytest.Start(t, refcompany.Options{Now: clk.Now, AgentHosts: []string{apptest.OperatorHost}, AgentRootCAs: []*x509.Certificate{op.CA}})
	secrets := testSecrets(t)
	var restarts []app.RestartTo
	f := apptest.Start(t, apptest.Options{Clock: clk, Secrets: secrets, Company: company, Edit: func(c *app.Config) {
		op.Trust(c)
		c.ClientID, c.DefaultOperator = "", op.URL
		c.Restart = func(to app.RestartTo) error { restarts = append(restarts, to); return nil }
	}})
	shell := f.Fronts().Shell
	info := shell.Info()
	if info.Problem != app.ProblemNoIdentity || info.DefaultOperator != op.URL || info.Welcome {
		t.Fatalf("at the first run Info = problem %q, default operator %q, welcome %v", info.Problem, info.DefaultOperator, info.Welcome)
	}
	// Restarting "ready" before Get started has nothing to restart with.
	if err := shell.RestartReady(); err == nil || !strings.Contains(err.Error(), "Choose Get started first") {
		t.Errorf("RestartReady before Get started: %v", err)
	}

	st, err := shell.GetStarted()
	if err != nil {
		t.Fatalf("GetStarted: %v", err)
	}
	wantLogo := "data:image/png;base64," + base64.StdEncoding.EncodeToString(identity.DefaultLogoPNG())
	if !st.Reachable || st.Error != "" || st.ClientName != "Acme Agents" || st.ClientID != op.URL+"/agent.json" || st.Logo != wantLogo {
		t.Fatalf("GetStarted shows %+v; want the operator's name, client_id and logo", st)
	}
	dev, err := secrets.LoadDevice(ctx)
	if err != nil || dev.Operator != op.URL {
		t.Fatalf("the enrollment in the keyring: %+v, %v", dev, err)
	}
	if v, err := f.Host.State().GetSetting(ctx, app.SettingOperator); err != nil || v != op.URL {
		t.Fatalf("the recorded operator = %q, %v", v, err)
	}
	// Clicked twice (say, the restart did not happen): the same enrollment, no second device.
	if _, err := shell.GetStarted(); err != nil {
		t.Fatalf("GetStarted again: %v", err)
	}
	if again, _ := secrets.LoadDevice(ctx); again.DeviceID != dev.DeviceID || op.Server.Stats().Enrolled != 1 {
		t.Errorf("a second Get started enrolled again: device %s (was %s), %d enrolled", again.DeviceID, dev.DeviceID, op.Server.Stats().Enrolled)
	}
	if err := shell.RestartReady(); err != nil || len(restarts) != 1 || restarts[0] != app.RestartReady {
		t.Fatalf("RestartReady: %v; restarts asked %v", err, restarts)
	}

	// The restart the composition performs: the next start, ready to act as the operator.
	f.Config.Welcome = true
	f.Restart(t)
	if p := f.Host.Problem(); p != nil || f.Host.ClientID() != op.URL+"/agent.json" {
		t.Fatalf("after the restart: problem %v, signing as %q", p, f.Host.ClientID())
	}
	if info := f.Fronts().Shell.Info(); !info.Welcome || info.IdentityMode != app.IdentityOperator || info.Problem != "" {
		t.Errorf("after the restart Info = welcome %v, mode %q, problem %q", info.Welcome, info.IdentityMode, info.Problem)
	}
	if st, err := f.Fronts().Shell.Operator(); err != nil || st.ClientName != "Acme Agents" || st.Logo != wantLogo || !st.InUse {
		t.Errorf("Operator after the restart = %+v, %v", st, err)
	}
	co, err := f.Host.Engine().Discover(ctx, company.Domain)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Host.Engine().Client(ctx, co.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: "https://" + company.Domain + "/api/products"})
	if err != nil {
		t.Fatalf("a signed request after Get started: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the Company answered %d to a request signed through the operator", resp.StatusCode)
	}
	if _, err := f.Fronts().Shell.GetStarted(); err == nil || !strings.Contains(err.Error(), "already has an identity") {
		t.Errorf("GetStarted with an identity: %v", err)
	}
}

// TestFirstRunWithoutADefaultOperator: a build that names no operator offers no Get started, and
// one that cannot restart itself (here: no Config.Restart) says to quit and start again.
func TestFirstRunWithoutADefaultOperator(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.ClientID = "" }})
	shell := f.Fronts().Shell
	if info := shell.Info(); info.Problem != app.ProblemNoIdentity || info.DefaultOperator != "" {
		t.Fatalf("Info = problem %q, default operator %q", info.Problem, info.DefaultOperator)
	}
	_, err := shell.GetStarted()
	var e *app.Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "names no default operator") || !strings.Contains(e.Hint, "try the demo") {
		t.Errorf("GetStarted without a default operator: %v", err)
	}
	if _, err := f.Host.Secrets().LoadDevice(context.Background()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an enrollment was kept: %v", err)
	}
	if err := shell.TryDemo(); err == nil || !strings.Contains(err.Error(), "cannot restart itself from the window. Quit Poppydesk and start it again") {
		t.Errorf("TryDemo without a restart: %v", err)
	}
	if err := shell.LeaveDemo(); err == nil {
		t.Errorf("LeaveDemo outside the demo succeeded")
	}
}

// userState is what the user's Poppydesk keeps: the state database's files, byte for byte, and
// every keyring item under service, read afresh from the Secret Service.
func userState(t *testing.T, data, service string) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, err := filepath.Glob(filepath.Join(data, app.StateFile+"*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no state database in %s (%v)", data, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out["file "+filepath.Base(f)] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	kr := vault.NewKeyring(vault.KeyringOptions{Service: service})
	names, err := kr.Names(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		v, err := kr.Get(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		out["keyring "+n] = fmt.Sprintf("%x", sha256.Sum256(v))
	}
	return out
}

// TestDemoFromTheWindowLeavesTheUserStateUntouched: the user's Poppydesk (signed in at a
// Company, its keys and tokens in the real Secret Service) starts the demo from the window; the
// demo runs in the same folders, signs in and acts at its reference Company, offers to leave,
// and leaving asks for the user's own Poppydesk. The user's state database and every keyring
// item are then byte for byte what they were, and the user's Poppydesk starts as it was.
func TestDemoFromTheWindowLeavesTheUserStateUntouched(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" || os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatal("no D-Bus session: run through scripts/with-keyring.sh")
		}
		t.Skip("the user's keyring items need the Secret Service: run through scripts/with-keyring.sh")
	}
	ctx := context.Background()
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	service := "poppydesk-test-" + hex.EncodeToString(buf)
	kr := vault.NewKeyring(vault.KeyringOptions{Service: service})
	t.Cleanup(func() { _ = kr.DeleteAll(context.Background()) })
	dir := t.TempDir()
	var restarts []app.RestartTo
	record := func(c *app.Config) {
		c.Restart = func(to app.RestartTo) error { restarts = append(restarts, to); return nil }
	}
	user := apptest.Start(t, apptest.Options{Dir: dir, Secrets: store.NewSecrets(kr), Edit: record})
	user.SignIn(t, "personal", "orders:read")
	own := user.Host.ClientID()
	if err := user.Fronts().Shell.LeaveDemo(); err == nil {
		t.Errorf("LeaveDemo outside the demo succeeded")
	}
	if err := user.Fronts().Shell.TryDemo(); err != nil || len(restarts) != 1 || restarts[0] != app.RestartDemo {
		t.Fatalf("TryDemo: %v; restarts asked %v", err, restarts)
	}
	user.Close()
	data := user.Config.Paths.Data
	before := userState(t, data, service)
	if len(before) < 3 {
		t.Fatalf("the user's state is too thin to tell anything: %v", before)
	}

	// The demo, started as the restart does: the same folders and keyring service.
	demo := apptest.Start(t, apptest.Options{Demo: true, Dir: dir, Secrets: store.NewSecrets(kr), Edit: func(c *app.Config) {
		c.Demo.FromWindow = true
		record(c)
	}})
	if info := demo.Fronts().Shell.Info(); !info.DemoFromWindow || info.Demo == "" || info.IdentityMode != app.IdentityDemo {
		t.Fatalf("the demo's Info = demo %q, from the window %v, mode %q", info.Demo, info.DemoFromWindow, info.IdentityMode)
	}
	demo.SignIn(t, "personal", "orders:read")
	if err := demo.Fronts().Shell.TryDemo(); err == nil {
		t.Errorf("TryDemo inside the demo succeeded")
	}
	if err := demo.Fronts().Shell.LeaveDemo(); err != nil || len(restarts) != 2 || restarts[1] != app.RestartHome {
		t.Fatalf("LeaveDemo: %v; restarts asked %v", err, restarts)
	}
	demo.Close()

	after := userState(t, data, service)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("the demo changed the user's %s", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("the demo added the user's %s", k)
		}
	}
	back := apptest.Start(t, apptest.Options{Dir: dir, Secrets: store.NewSecrets(kr), Company: user.Company})
	if back.Host.Problem() != nil || back.Host.ClientID() != own {
		t.Fatalf("back from the demo: problem %v, identity %q (was %q)", back.Host.Problem(), back.Host.ClientID(), own)
	}
	if st, err := back.Host.OAuth().Status(ctx, back.Discover(t).Identifier, "personal"); err != nil || !st.SignedIn {
		t.Errorf("back from the demo, the user's sign-in: %+v, %v", st, err)
	}
}

// TestDemoFromATerminal: a demo started as `poppydesk demo` has no Poppydesk of the user's to go
// back to; the window says to close it, and LeaveDemo refuses.
func TestDemoFromATerminal(t *testing.T) {
	var restarts []app.RestartTo
	f := apptest.Start(t, apptest.Options{Demo: true, Edit: func(c *app.Config) {
		c.Restart = func(to app.RestartTo) error { restarts = append(restarts, to); return nil }
	}})
	if info := f.Fronts().Shell.Info(); info.Demo == "" || info.DemoFromWindow {
		t.Errorf("Info = demo %q, from the window %v", info.Demo, info.DemoFromWindow)
	}
	if err := f.Fronts().Shell.LeaveDemo(); err == nil || !strings.Contains(err.Error(), "Close this window to leave the demo") || len(restarts) != 0 {
		t.Errorf("LeaveDemo in a demo from a terminal: %v; restarts asked %v", err, restarts)
	}
}
