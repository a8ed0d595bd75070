package app_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
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
