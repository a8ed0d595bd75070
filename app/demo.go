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
	"strconv"
	"strings"
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
	if h.demo == nil {
		return DemoInfo{}, false
	}
	return h.demo.info, true
}

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
	srv, err := poppytest.New(poppytest.Options{Logger: h.log, Listen: h.cfg.Demo.Listen, Faults: h.cfg.Demo.Faults, Now: h.now})
	if err != nil {
		return err
	}
	if err := srv.Start(h.life.Context()); err != nil {
		return fmt.Errorf("starting the reference Company failed: %w", err)
	}
	h.onClose("the reference Company", func(context.Context) error { srv.Close(); return nil })
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
	return Developer{Hosts: cc.DevHosts, RootCAs: cc.DevRootCAs}
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
// never an approval). The Company answers with an operation and the dialog opens. The kind
// DemoKindAgent runs the scripted example agent instead, which asks for the same exchange
// through the Host's model interface.
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
	case DemoKindAgent:
		return "", h.runExampleAgent(ctx)
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

// runExampleAgent runs the scripted example agent (modelapi.ExampleAgent) against the Host's own
// model socket, through the same MCP client code as `poppydesk example-agent --socket`, so it
// reaches Poppydesk exactly as a model does: it can ask, and it waits for the user's decision in
// the window. Its lines go to AgentOutput(ctx) (the window).
func (h *Host) runExampleAgent(ctx context.Context) error {
	socket := h.Socket()
	if socket == "" {
		return errors.New("the model interface is not listening (the Inspector says why), so the example agent has nothing to talk to")
	}
	return modelapi.RunExampleAgentOnSocket(ctx, socket, h.demo.srv.Domain, 5*time.Minute, h.cfg.Version, lineWriter(AgentOutput(ctx)))
}

// lineWriter is an io.Writer that passes each complete line to say.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(l)
	}
	return len(p), nil
}
