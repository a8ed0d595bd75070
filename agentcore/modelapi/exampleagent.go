package modelapi

// The scripted example agent: a small program, no LLM, that uses ONLY this MCP
// interface, as any MCP client would, to walk the jacket exchange of the spec at the reference
// Company: discover, describe, list the operations, ask for the exchange, learn that it waits for
// the user, wait for the user's decision in the window, and report the outcome. It shows what a
// model sees, and that it can ask but never approve. `poppydesk example-agent` runs it over
// `poppydesk mcp` or a socket; the demo window's "Run the example agent" runs it in-process
// against the window's own socket ([RunExampleAgentOnSocket]).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunExampleAgentOnSocket connects an MCP client to the app's model socket and runs
// [ExampleAgent], writing its progress lines to out.
func RunExampleAgentOnSocket(ctx context.Context, socket, company string, maxWait time.Duration, version string, out io.Writer) error {
	conn, err := Dial(ctx, socket)
	if err != nil {
		return fmt.Errorf("no Poppydesk app answers at %s: %w; start Poppydesk first", socket, err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "poppydesk-example-agent", Version: version}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		conn.Close()
		return fmt.Errorf("connecting to Poppydesk's model interface at %s failed: %w", socket, err)
	}
	defer cs.Close()
	return ExampleAgent(ctx, cs, company, maxWait, out)
}

// agentReply is a tool result as the example agent reads it.
type agentReply struct {
	isError bool
	status  string
	message string
	sc      map[string]any
}

func agentCall(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (agentReply, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return agentReply{}, fmt.Errorf("%s: %w", name, err)
	}
	r := agentReply{isError: res.IsError}
	r.sc, _ = res.StructuredContent.(map[string]any)
	r.status, _ = r.sc["status"].(string)
	r.message, _ = r.sc["message"].(string)
	return r, nil
}

// companyData is the Company content of a reply, as JSON (untrusted data).
func (r agentReply) companyData() string {
	env, ok := r.sc[EnvelopeKey].(map[string]any)
	if !ok {
		return ""
	}
	b, _ := json.Marshal(env["data"])
	return string(b)
}

// untrusted is companyData shortened for printing.
func (r agentReply) untrusted() string {
	s := r.companyData()
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// ExampleAgent walks the jacket exchange (spec 7's example; Operations 4-7) using only the tools.
func ExampleAgent(ctx context.Context, cs *mcp.ClientSession, company string, maxWait time.Duration, out io.Writer) error {
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	step := func(name string, args map[string]any) (agentReply, error) {
		r, err := agentCall(ctx, cs, name, args)
		if err != nil {
			return r, err
		}
		say("→ %s: %s — %s", name, r.status, r.message)
		return r, nil
	}
	say("Example agent: exchange the Stormline Jacket (M) on order ord_7Hk2 for the insulated one, at %s.", company)
	r, err := step(ToolDiscoverCompany, map[string]any{"domain": company})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("cannot continue: %s", r.message)
	}
	if r, err = step(ToolDescribeCompany, map[string]any{"company": company}); err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("cannot continue: %s", r.message)
	}
	if r, err = step(ToolListAPIOperations, map[string]any{"company": company, "query": "exchange"}); err != nil {
		return err
	}
	// Each operation is one line, "operationId METHOD /path — summary".
	if r.isError || !strings.Contains(r.companyData(), `"exchangeItem `) {
		return errors.New("the Company lists no exchangeItem operation, so this example cannot continue")
	}
	r, err = step(ToolCallAPIOperation, map[string]any{"company": company, "operation_id": "exchangeItem",
		"path_params": map[string]any{"id": "ord_7Hk2"},
		"body":        map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"},
		"intent":      map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}})
	if err != nil {
		return err
	}
	if r.status == StatusWaitingForSignIn {
		// Poppydesk asked the user to sign in by itself (the Company's need); the agent waits.
		return fmt.Errorf("the exchange needs your account at %s: %s. Sign in there in the Poppydesk window, then run the example again", company, r.message)
	}
	if http, _ := r.sc["http_status"].(float64); r.status == StatusSignInNeeded || http == 401 || http == 403 && r.status == StatusFailed {
		s, err := step(ToolRequestSignIn, map[string]any{"company": company, "scopes": []any{"orders:read", "orders:write"},
			"reason": "To exchange the jacket on order ord_7Hk2 for the insulated one, as you asked."})
		if err != nil {
			return err
		}
		return fmt.Errorf("the exchange needs your account at %s: %s. Sign in there in the Poppydesk window, then run the example again", company, s.message)
	}
	id, _ := r.sc["approval_id"].(string)
	deadline := time.Now().Add(maxWait)
	for r.status == StatusWaitingForUser || r.status == StatusInProgress || r.status == StatusOutcomeUnknown {
		if id == "" {
			return errors.New("Poppydesk reported a wait but gave no approval handle")
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("no decision within %s; the approval %s is still waiting in the Poppydesk window", maxWait, id)
		}
		if r.status == StatusWaitingForUser {
			say("   The exchange was NOT performed: it waits for your decision in the Poppydesk window (approval %s). This agent cannot approve it.", id)
		}
		secs := min(int(left/time.Second)+1, 60)
		if r, err = step(ToolWaitForApproval, map[string]any{"approval_id": id, "timeout_seconds": secs}); err != nil {
			return err
		}
	}
	if c := r.untrusted(); c != "" {
		say("   The Company's answer (untrusted data): %s", c)
	}
	switch r.status {
	case StatusPerformed:
		say("Outcome: the exchange was performed after your approval.")
		return nil
	case StatusDeclined:
		say("Outcome: you declined; nothing was exchanged.")
		return nil
	case StatusExpired:
		say("Outcome: the Company's terms expired before you decided; nothing was exchanged.")
		return nil
	}
	return fmt.Errorf("the exchange ended with %s: %s", r.status, r.message)
}
