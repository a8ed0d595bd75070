package app

// Demo mode: the Host runs the reference Company (agentcore/poppytest) on loopback and connects
// to it as a Company under development (docs/DESIGN.md "Demo and test networking"): its host names
// map to 127.0.0.1 and its generated CA is trusted for them only; the Personal Agent's client
// metadata and JWKS are served on agent.localhost by the same listener, with client_id
// https://agent.localhost:PORT/agent.json.
//
// The demo is throwaway: its state database lives in a temporary folder and its secrets in
// memory (never in the user's keyring or data folder), and both are removed when it ends. The
// demo account signs in with a real Direct Sign-In at start, the reference Company approving on
// its consent page as the user would.
//
// Faults named at start (DemoOptions.Faults) are switched on once the demo account has signed
// in, so the demo starts with any of them, including those that break discovery or sign-in
// (scope-wider, iss-missing, hang-token, ...): they show in what the window does next, and the
// status line names them. The reference Company then serves its discovery documents with
// Cache-Control: no-cache, so the next discovery sees a discovery fault at once.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/browser"
)

// DemoOptions configure the reference Company of demo mode.
type DemoOptions struct {
	// Listen is its loopback address ("": 127.0.0.1 on a free port).
	Listen string
	// Faults are the reference Company's named faults to switch on (refcompany.Faults).
	Faults []string
	// FromWindow is set when the user started the demo from their Poppydesk's window: the
	// window then offers to leave it for their own Poppydesk ([RestartHome]).
	FromWindow bool
}

// DemoAccount is the reference Company's account the demo acts for.
const DemoAccount = refcompany.DefaultAccount

// DemoInfo describes the reference Company the demo runs.
type DemoInfo struct {
	// Name is the Company's verified name; Identifier its Company identifier (spec 3.2), e.g.
	// https://auth.shop.localhost:8443; Domain its organization.domain, e.g. shop.localhost:8443.
	Name, Identifier, Domain string
}

type demoCompany struct {
	srv     *refcompany.Server
	info    DemoInfo
	openAPI string // apis[].url of the Orders API
	mcp     string // apis[].url of the MCP server

	mu       sync.Mutex
	browsers []*exec.Cmd // the sign-in browsers the demo opened (demoOpener)
	// pending are the faults named at start, switched on once the demo account signed in;
	// started are those switched on then.
	pending, started []string
}

// Demo describes the demo's reference Company (ok false outside demo mode).
func (h *Host) Demo() (DemoInfo, bool) {
	if h == nil || h.demo == nil {
		return DemoInfo{}, false
	}
	return h.demo.info, true
}

// demoOn reports whether the Host runs the demo with its approval queue, so the demo's buttons
// apply (false for a nil Host).
func (h *Host) demoOn() bool { return h != nil && h.demo != nil && h.queue != nil }

// DemoCompany is the running reference Company of demo mode (nil outside it).
func (h *Host) DemoCompany() *refcompany.Server {
	if h == nil || h.demo == nil {
		return nil
	}
	return h.demo.srv
}

func (h *Host) startDemo(ctx context.Context) error {
	if h.cfg.Demo == nil {
		return nil
	}
	// The faults are switched on after the demo account signed in (connect); a name that is
	// not a fault stops the start here, before anything runs.
	for _, f := range h.cfg.Demo.Faults {
		if !slices.Contains(refcompany.AllFaults, f) {
			return fmt.Errorf("the reference Company has no fault %q; its faults are %s", f, strings.Join(refcompany.AllFaults, ", "))
		}
	}
	srv, err := refcompany.New(refcompany.Options{Logger: h.log, Listen: h.cfg.Demo.Listen, Now: h.now})
	if err != nil {
		return err
	}
	if len(h.cfg.Demo.Faults) > 0 {
		srv.SetCacheControl("no-cache")
	}
	// The reference Company stops at its place in Close, after the parts that talk to it (the
	// approval queue ends its MCP sessions there), not when the Host's root context ends.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	if err := srv.Start(sctx); err != nil {
		stop()
		return fmt.Errorf("starting the reference Company failed: %w", err)
	}
	h.onClose("the reference Company", func(context.Context) error {
		if h.demo != nil {
			h.demo.closeBrowsers()
		}
		srv.Close()
		stop()
		return nil
	})
	dir, err := os.MkdirTemp("", "poppydesk-demo-")
	if err != nil {
		return fmt.Errorf("making the demo's temporary folder failed: %w", err)
	}
	h.onClose("the demo's temporary folder", func(context.Context) error { return os.RemoveAll(dir) })
	h.stateDir = dir
	h.demo = &demoCompany{srv: srv, info: DemoInfo{Domain: srv.Domain}, pending: slices.Clone(h.cfg.Demo.Faults)}
	return nil
}

// switchFaults switches on the faults named at start (DemoOptions.Faults), after the demo
// account signed in.
func (d *demoCompany) switchFaults(h *Host) error {
	for _, f := range d.pending {
		if err := d.srv.SetAnyFault(f, true); err != nil {
			return err
		}
		h.log.Info("demo: reference Company fault switched on", "fault", f)
	}
	d.started, d.pending = d.pending, nil
	return nil
}

// status is the window's status line in the demo: the Company, and the faults switched on at
// start.
func (d *demoCompany) status() string {
	s := "Demo: connected to the reference Company " + d.info.Name + "."
	if len(d.started) > 0 {
		s += " Faults switched on after the demo account signed in: " + strings.Join(d.started, ", ") + "."
	}
	return s
}

func (d *demoCompany) clientID() string { return d.srv.URL(refcompany.AgentHost, "/agent.json") }

func (d *demoCompany) developer() Developer {
	cc := d.srv.ClientConfig()
	return Developer{Companies: []string{d.srv.Domain}, Hosts: cc.DevHosts, RootCAs: cc.DevRootCAs, CAFile: "(the demo's generated CA)"}
}

// spki is the reference Company's certificate key, which the controlled browser trusts exactly
// (--ignore-certificate-errors-spki-list), never by ignoring certificate errors.
func (d *demoCompany) spki() []string {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.srv.Port)),
		&tls.Config{ServerName: refcompany.ShopHost, RootCAs: d.srv.CA().Pool()})
	if err != nil {
		return nil
	}
	defer conn.Close()
	return []string{browser.SPKIHash(conn.ConnectionState().PeerCertificates[0])}
}

// connect publishes the demo client's metadata on agent.localhost, discovers the reference
// Company and signs the demo account in.
func (d *demoCompany) connect(ctx context.Context, h *Host) error {
	d.srv.AddHost(refcompany.AgentHost, h.engine.Agent().Handler(h.log))
	co, err := h.engine.Discover(ctx, d.srv.Domain)
	if err != nil {
		return fmt.Errorf("discovering the reference Company failed: %w", err)
	}
	d.info.Name, d.info.Identifier = co.Organization.Name, co.Identifier
	for _, a := range co.Document.APIs {
		switch a.Type {
		case "openapi":
			d.openAPI = a.URL
		case "mcp":
			d.mcp = a.URL
		}
	}
	if err := d.signIn(ctx, h, co); err != nil {
		return err
	}
	return d.switchFaults(h)
}

// demoScopes are the scopes the demo account holds.
var demoScopes = []string{"orders:read", "orders:write"}

// signIn signs the demo account in with a real Direct Sign-In (spec 4.2): the reference Company
// plays the user's browser and approves on its consent page, so the demo account holds real
// tokens (refresh, per-service tokens, DPoP when the issuer asks) and can be signed out.
func (d *demoCompany) signIn(ctx context.Context, h *Host, co *discovery.Company) error {
	open := func(authURL string) error {
		go func() {
			if err := d.srv.ApproveSignIn(ctx, authURL, "demo@shop.example", demoScopes); err != nil {
				h.log.Warn("the reference Company did not approve the demo's sign-in", "err", err)
			}
		}()
		return nil
	}
	flow, err := h.oauth.StartDirect(ctx, oauth.SignInRequest{Company: co, Account: DemoAccount, Scopes: demoScopes, Open: open})
	if err != nil {
		return fmt.Errorf("signing the demo account in failed: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := flow.Wait(wctx); err != nil {
		return fmt.Errorf("signing the demo account in failed: %w", err)
	}
	return nil
}

// demoRequester is who asks when the user presses a demo button: the window itself, for the user.
const demoRequester = "the demo's request button in this window"

// DemoRequest is the demo buttons' action, in demo mode only: ask the reference Company for the
// spec's jacket exchange through its API ("api") or its MCP server ("mcp"), as the model would (a
// request, never an approval). The Company answers with an operation and the dialog opens; the
// result is Poppydesk's words for what happened.
func (h *Host) DemoRequest(ctx context.Context, kind string) (string, error) {
	if !h.demoOn() {
		return "", errors.New("the demo exchange exists only in demo mode (`poppydesk demo`)")
	}
	d := h.demo
	intent := map[string]string{"replacement_sku": "stormline-insulated-m", "price_difference": "70.00"}
	var out *approvals.Outcome
	var err error
	switch kind {
	case "api":
		out, err = h.queue.CallAPI(ctx, approvals.APICall{Company: d.info.Identifier, Account: DemoAccount, API: d.openAPI, OperationID: "exchangeItem",
			Input:  apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)},
			Intent: intent, Requester: demoRequester})
	case "mcp":
		out, err = h.queue.CallTool(ctx, approvals.ToolCall{Company: d.info.Identifier, Account: DemoAccount, Server: d.mcp, Tool: "exchange_item",
			Arguments: json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`), Intent: intent,
			Requester: demoRequester})
	default:
		return "", fmt.Errorf("unknown demo kind %q: use \"api\" or \"mcp\" (the example agent runs with RunExampleAgent)", kind)
	}
	if err != nil {
		return "", err
	}
	msg := "Poppydesk: " + out.Message
	if out.Message == "" {
		msg = "Poppydesk: status " + out.Status + "."
	}
	if out.Text != "" {
		msg += " The Company said: " + operations.Visible(out.Text)
	}
	return msg, nil
}

// EventExampleAgent tells the window that the example agent said something or finished; its
// data is an [AgentRun], which the window shows as the agent's words.
const EventExampleAgent = "approvals:example-agent"

// maxAgentLines bounds the example agent's transcript.
const maxAgentLines = 200

// exampleAgent is the example agent's last run in demo mode.
type exampleAgent struct {
	mu  sync.Mutex
	run AgentRun
}

// AgentRun is one run of the example agent: its lines, one per step (discover, describe, call,
// waiting for your decision, outcome: its own words, never Poppydesk's decisions), whether it
// still runs, and why it stopped early (Err, nil when it finished).
type AgentRun struct {
	Running bool
	Lines   []string
	Err     error
}

// RunExampleAgent starts the scripted example agent (modelapi.ExampleAgent) against the Host's
// own model socket, through the same MCP client code as `poppydesk example-agent --socket`, so
// it reaches Poppydesk exactly as a model does: it can ask, and it waits for the user's
// decision in the window. One run at a time; it returns at once, and each line and the end are
// announced to the window (EventExampleAgent). It runs only in demo mode, as the user's gesture
// (the window's "Run the example agent" button).
func (h *Host) RunExampleAgent() error {
	if !h.demoOn() {
		return errors.New("the example agent runs from the window only in demo mode (`poppydesk demo`); otherwise run `poppydesk example-agent --company DOMAIN`")
	}
	h.agent.mu.Lock()
	if h.agent.run.Running {
		h.agent.mu.Unlock()
		return errors.New("the example agent is already running; decide its approval, or wait for its report")
	}
	h.agent.run = AgentRun{Running: true}
	h.agent.mu.Unlock()
	h.emitAgent()
	err := h.life.Go("the example agent", func(ctx context.Context) {
		// The agent waits for the user's decision (at most 5 minutes).
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		err := errors.New("the model interface is not listening (the Inspector says why), so the example agent has nothing to talk to")
		if socket := h.Socket(); socket != "" {
			err = modelapi.RunExampleAgentOnSocket(ctx, socket, h.demo.srv.Domain, 5*time.Minute, h.cfg.Version, lineWriter(h.agentSaid))
		}
		h.agent.mu.Lock()
		h.agent.run.Running, h.agent.run.Err = false, err
		h.agent.mu.Unlock()
		if err != nil {
			h.log.Info("the example agent stopped", "err", err)
		}
		h.emitAgent()
	})
	if err != nil {
		h.agent.mu.Lock()
		h.agent.run = AgentRun{Err: err}
		h.agent.mu.Unlock()
		return err
	}
	return nil
}

// agentSaid adds one of the agent's lines to the transcript (blank lines are dropped; the last
// maxAgentLines are kept).
func (h *Host) agentSaid(line string) {
	line = strings.TrimRight(line, "\n")
	if strings.TrimSpace(line) == "" {
		return
	}
	h.agent.mu.Lock()
	h.agent.run.Lines = append(h.agent.run.Lines, line)
	if n := len(h.agent.run.Lines); n > maxAgentLines {
		h.agent.run.Lines = h.agent.run.Lines[n-maxAgentLines:]
	}
	h.agent.mu.Unlock()
	h.emitAgent()
}

// ExampleAgent returns a copy of the example agent's last run (a zero AgentRun before the first,
// and for a nil Host).
func (h *Host) ExampleAgent() AgentRun {
	if h == nil {
		return AgentRun{}
	}
	h.agent.mu.Lock()
	defer h.agent.mu.Unlock()
	r := h.agent.run
	r.Lines = slices.Clone(r.Lines)
	return r
}

func (h *Host) emitAgent() { h.relay.Emit(EventExampleAgent, h.ExampleAgent()) }

// lineWriter is an io.Writer that passes each complete line to say.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}

// demoOpener opens the demo's Direct Sign-In in Poppydesk's own Chromium, in a visible window
// that trusts exactly the reference Company's certificate key (--ignore-certificate-errors-
// spki-list, never by ignoring certificate errors) and uses a profile of its own under the data
// folder, so the demo never shows a certificate warning to click through. The user's own
// browser would not trust the demo's CA. Without Chromium the sign-in screen shows the link to
// copy, and says why.
func (h *Host) demoOpener() URLOpener {
	return OpenerFunc(func(url string) error {
		opts := h.cfg.Browser
		opts.Visible = true
		opts.TrustSPKI = append(slices.Clone(opts.TrustSPKI), h.demo.spki()...)
		path := opts.ExecPath
		if path == "" {
			p, err := browser.Find()
			if err != nil {
				return fmt.Errorf("the demo opens its sign-in page in Chromium, which trusts the demo's certificate, and none is installed (%w); copy the link instead", err)
			}
			path = p
		}
		profile := filepath.Join(h.cfg.Paths.Data, "browser", "demo-sign-in")
		if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o700); err != nil {
			return fmt.Errorf("making the demo browser's profile folder failed: %w", err)
		}
		// The demo's sign-in page is no place to save a password: the profile starts with
		// Chromium's password manager off.
		prefs := filepath.Join(profile, "Default", "Preferences")
		if _, err := os.Stat(prefs); errors.Is(err, os.ErrNotExist) {
			_ = os.WriteFile(prefs, []byte(`{"credentials_enable_service":false,"profile":{"password_manager_enabled":false}}`), 0o600)
		}
		args := append(opts.Flags(), "--user-data-dir="+profile, "--new-window", url)
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting Chromium for the demo's sign-in failed: %w; copy the link instead", err)
		}
		h.log.Info("the demo's sign-in page opened in Poppydesk's Chromium", "pid", cmd.Process.Pid)
		h.demo.trackBrowser(cmd)
		return nil
	})
}

// trackBrowser keeps the demo's sign-in browser so that it ends with the demo.
func (d *demoCompany) trackBrowser(cmd *exec.Cmd) {
	d.mu.Lock()
	d.browsers = append(d.browsers, cmd)
	d.mu.Unlock()
	go func() { _ = cmd.Wait() }()
}

// closeBrowsers ends the demo's sign-in browsers (Close).
func (d *demoCompany) closeBrowsers() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.browsers {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	d.browsers = nil
}

// ResetDemo, in demo mode, puts the demo back as it was at start so its flows can be tried
// again: the reference Company's orders, ledger, operations, tokens and conversations are
// restored (refcompany.Server.Reset), the approvals still waiting in the demo's queue are
// declined (their operations no longer exist at the Company; they stay listed as records), and
// the demo account signs in again with a real Direct Sign-In. It is the user's gesture: the
// window's "Reset demo" button.
func (h *Host) ResetDemo(ctx context.Context) error {
	if !h.demoOn() {
		return &Error{Message: "Reset demo exists only in demo mode (`poppydesk demo`)"}
	}
	d := h.demo
	items, err := h.queue.List(ctx)
	if err != nil {
		return fmt.Errorf("reading the demo's approvals failed, so nothing was reset: %w", err)
	}
	d.srv.Reset()
	now := h.now()
	for i := range items {
		it := &items[i]
		if Decidable(it.State, it.Current.ExpiresAt, now) {
			if err := h.queue.Decline(ctx, it.ID, it.Current.Revision); err != nil {
				h.log.Warn("resetting the demo: an approval could not be declined", "approval", it.ID, "err", err)
			}
		}
	}
	co, err := h.engine.Company(ctx, d.info.Identifier)
	if err != nil {
		return fmt.Errorf("the reference Company is reset, but reading it again failed: %w", err)
	}
	if err := d.signIn(ctx, h, co); err != nil {
		return fmt.Errorf("the reference Company is reset, but %w", err)
	}
	h.log.Info("the demo was reset")
	h.relay.Emit(EventCompaniesChanged)
	h.countApprovals(ctx)
	return nil
}
