package app

// Demo mode: the Host runs the reference Company (agentcore/poppytest) on loopback and connects
// to it as a Company under development (DESIGN.md "Demo and test networking"): its host names
// map to 127.0.0.1 and its generated CA is trusted for them only; the Personal Agent's client
// metadata and JWKS are served on agent.localhost by the same listener, with client_id
// https://agent.localhost:PORT/agent.json.
//
// The demo is throwaway: its state database lives in a temporary folder and its secrets in
// memory (never in the user's keyring or data folder), and both are removed when it ends. The
// demo account signs in with a real Direct Sign-In at start, the reference Company approving on
// its consent page as the user would.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
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
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/browser"
)

// DemoOptions configure the reference Company of demo mode.
type DemoOptions struct {
	// Listen is its loopback address ("": 127.0.0.1 on a free port).
	Listen string
	// Faults are the reference Company's named faults to switch on (poppytest.Faults).
	Faults []string
}

// DemoAccount is the reference Company's account the demo acts for.
const DemoAccount = poppytest.DefaultAccount

// DemoInfo describes the reference Company the demo runs.
type DemoInfo struct {
	// Name is the Company's verified name; Identifier its Company identifier (spec 3.2), e.g.
	// https://auth.shop.localhost:8443; Domain its organization.domain, e.g. shop.localhost:8443.
	Name, Identifier, Domain string
}

type demoCompany struct {
	srv     *poppytest.Server
	info    DemoInfo
	openAPI string // apis[].url of the Orders API
	mcp     string // apis[].url of the MCP server
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
func (h *Host) DemoCompany() *poppytest.Server {
	if h.demo == nil {
		return nil
	}
	return h.demo.srv
}

func (h *Host) startDemo(ctx context.Context) error {
	if h.cfg.Demo == nil {
		return nil
	}
	// Company Agent faults are switched on after the start (poppytest.SetAnyFault).
	var faults, agentFaults []string
	for _, f := range h.cfg.Demo.Faults {
		if slices.Contains(poppytest.AgentFaults, f) {
			agentFaults = append(agentFaults, f)
		} else {
			faults = append(faults, f)
		}
	}
	srv, err := poppytest.New(poppytest.Options{Logger: h.log, Listen: h.cfg.Demo.Listen, Faults: faults, Now: h.now})
	if err != nil {
		return err
	}
	for _, f := range agentFaults {
		if err := srv.SetAgentFault(f, true); err != nil {
			return err
		}
	}
	// The reference Company stops at its place in Close, after the parts that talk to it (the
	// approval queue ends its MCP sessions there), not when the Host's root context ends.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	if err := srv.Start(sctx); err != nil {
		stop()
		return fmt.Errorf("starting the reference Company failed: %w", err)
	}
	h.onClose("the reference Company", func(context.Context) error { srv.Close(); stop(); return nil })
	dir, err := os.MkdirTemp("", "poppydesk-demo-")
	if err != nil {
		return fmt.Errorf("making the demo's temporary folder failed: %w", err)
	}
	h.onClose("the demo's temporary folder", func(context.Context) error { return os.RemoveAll(dir) })
	h.stateDir = dir
	h.demo = &demoCompany{srv: srv, info: DemoInfo{Domain: srv.Domain}}
	return nil
}

func (d *demoCompany) clientID() string { return d.srv.URL(poppytest.AgentHost, "/agent.json") }

func (d *demoCompany) developer() Developer {
	cc := d.srv.ClientConfig()
	return Developer{Companies: []string{d.srv.Domain}, Hosts: cc.DevHosts, RootCAs: cc.DevRootCAs, CAFile: "(the demo's generated CA)"}
}

// spki is the reference Company's certificate key, which the controlled browser trusts exactly
// (--ignore-certificate-errors-spki-list), never by ignoring certificate errors.
func (d *demoCompany) spki() []string {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.srv.Port)),
		&tls.Config{ServerName: poppytest.ShopHost, RootCAs: d.srv.CA().Pool()})
	if err != nil {
		return nil
	}
	defer conn.Close()
	return []string{browser.SPKIHash(conn.ConnectionState().PeerCertificates[0])}
}

// connect publishes the demo client's metadata on agent.localhost, discovers the reference
// Company and signs the demo account in.
func (d *demoCompany) connect(ctx context.Context, h *Host) error {
	d.srv.AddHost(poppytest.AgentHost, h.engine.Agent().Handler(h.log))
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
	return d.signIn(ctx, h, co)
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

// demoAccount is the account the window's conversations act for at a Company: the demo
// account at the demo's reference Company, signed out elsewhere.
func (h *Host) demoAccount(_ context.Context, company string) string {
	if h.demo != nil && company == h.demo.info.Identifier {
		return DemoAccount
	}
	return ""
}

// demoRequest is the demo buttons' action: ask the reference Company for the spec's jacket
// exchange through its API ("api") or its MCP server ("mcp"), as the model would (a request,
// never an approval). The Company answers with an operation and the dialog opens.
func (h *Host) demoRequest(ctx context.Context, kind string) (string, error) {
	d := h.demo
	intent := map[string]string{"replacement_sku": "stormline-insulated-m", "price_difference": "70.00"}
	var out *approvals.Outcome
	var err error
	switch kind {
	case "api":
		out, err = h.queue.CallAPI(ctx, approvals.APICall{Company: d.info.Identifier, Account: DemoAccount, API: d.openAPI, OperationID: "exchangeItem",
			Input:  apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)},
			Intent: intent})
	case "mcp":
		out, err = h.queue.CallTool(ctx, approvals.ToolCall{Company: d.info.Identifier, Account: DemoAccount, Server: d.mcp, Tool: "exchange_item",
			Arguments: json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`), Intent: intent})
	default:
		return "", fmt.Errorf("unknown demo kind %q", kind)
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

// maxAgentLines bounds the example agent's transcript.
const maxAgentLines = 200

// exampleAgent is the example agent's last run in demo mode.
type exampleAgent struct {
	mu  sync.Mutex
	run agentRun
}

// agentRun is one run of the example agent: its lines (its own words), whether it still runs,
// and why it stopped early.
type agentRun struct {
	running bool
	lines   []string
	err     error
}

// runExampleAgent starts the scripted example agent (modelapi.ExampleAgent) against the Host's
// own model socket, through the same MCP client code as `poppydesk example-agent --socket`, so
// it reaches Poppydesk exactly as a model does: it can ask, and it waits for the user's
// decision in the window. One run at a time; it returns at once, and each line and the end are
// announced to the window (EventExampleAgent).
func (h *Host) runExampleAgent() error {
	if !h.demoOn() {
		return errors.New("the example agent runs from the window only in demo mode (`poppydesk demo`); otherwise run `poppydesk example-agent --company DOMAIN`")
	}
	h.agent.mu.Lock()
	if h.agent.run.running {
		h.agent.mu.Unlock()
		return errors.New("the example agent is already running; decide its approval, or wait for its report")
	}
	h.agent.run = agentRun{running: true}
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
		h.agent.run.running, h.agent.run.err = false, err
		h.agent.mu.Unlock()
		if err != nil {
			h.log.Info("the example agent stopped", "err", err)
		}
		h.emitAgent()
	})
	if err != nil {
		h.agent.mu.Lock()
		h.agent.run = agentRun{err: err}
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
	h.agent.run.lines = append(h.agent.run.lines, line)
	if n := len(h.agent.run.lines); n > maxAgentLines {
		h.agent.run.lines = h.agent.run.lines[n-maxAgentLines:]
	}
	h.agent.mu.Unlock()
	h.emitAgent()
}

// exampleAgentRun returns a copy of the example agent's last run.
func (h *Host) exampleAgentRun() agentRun {
	h.agent.mu.Lock()
	defer h.agent.mu.Unlock()
	r := h.agent.run
	r.lines = slices.Clone(r.lines)
	return r
}

func (h *Host) emitAgent() { h.relay.Emit(EventExampleAgent, exampleAgentRunOf(h.exampleAgentRun())) }

// lineWriter is an io.Writer that passes each complete line to say.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}
