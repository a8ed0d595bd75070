package main

// The example-agent subcommand: a scripted agent (no LLM) that uses ONLY Poppydesk's model
// interface, as any MCP client would, to walk the jacket exchange of the spec at the reference
// Company: discover, describe, list the operations, ask for the exchange, learn that it waits for
// the user, wait for the user's decision in the window, and report the outcome. It shows what a
// model sees, and that it can ask but never approve.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

func init() {
	var (
		company, socket string
		maxWait         time.Duration
	)
	register(&command{
		name:    "example-agent",
		summary: "Run a scripted agent (no LLM) that asks the reference Company for the jacket exchange through Poppydesk's model interface; you decide in the window.",
		usage:   "--company DOMAIN [--socket PATH] [--wait 5m]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&company, "company", "", "the Company's domain; for `poppydesk demo`, the reference Company's shop.localhost:PORT shown in the window")
			fs.StringVar(&socket, "socket", "", "connect to the app's model socket directly instead of launching `poppydesk mcp`")
			fs.DurationVar(&maxWait, "wait", 5*time.Minute, "how long to wait for your decision in the window")
		},
		run: func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
			if len(args) > 0 {
				return usageError{fmt.Sprintf("takes no arguments, got %q", args)}
			}
			if company == "" {
				return usageError{"give the Company with --company DOMAIN; with `poppydesk demo` running, that is the reference Company's shop.localhost:PORT shown in the window's status line"}
			}
			var t mcp.Transport
			if socket != "" {
				conn, err := modelapi.Dial(ctx, socket)
				if err != nil {
					return fmt.Errorf("no Poppydesk app answers at %s: %w; start Poppydesk first", socket, err)
				}
				t = &mcp.IOTransport{Reader: conn, Writer: conn}
			} else {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding this program to launch `poppydesk mcp`: %w", err)
				}
				cmd := exec.CommandContext(ctx, exe, "mcp")
				cmd.Stderr = stderr
				t = &mcp.CommandTransport{Command: cmd}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "poppydesk-example-agent", Version: version}, nil)
			cs, err := c.Connect(ctx, t, nil)
			if err != nil {
				return fmt.Errorf("connecting to Poppydesk's model interface failed: %w", err)
			}
			defer cs.Close()
			return exampleAgent(ctx, cs, company, maxWait, stdout)
		},
	})
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
	env, ok := r.sc[modelapi.EnvelopeKey].(map[string]any)
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

// exampleAgent walks the jacket exchange (spec 7's example; Operations 4-7) using only the tools.
func exampleAgent(ctx context.Context, cs *mcp.ClientSession, company string, maxWait time.Duration, out io.Writer) error {
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
	r, err := step(modelapi.ToolDiscoverCompany, map[string]any{"domain": company})
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("cannot continue: %s", r.message)
	}
	if r, err = step(modelapi.ToolDescribeCompany, map[string]any{"company": company}); err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("cannot continue: %s", r.message)
	}
	if r, err = step(modelapi.ToolListAPIOperations, map[string]any{"company": company}); err != nil {
		return err
	}
	if r.isError || !strings.Contains(r.companyData(), `"exchangeItem"`) {
		return errors.New("the Company lists no exchangeItem operation, so this example cannot continue")
	}
	r, err = step(modelapi.ToolCallAPIOperation, map[string]any{"company": company, "operation_id": "exchangeItem",
		"path_params": map[string]any{"id": "ord_7Hk2"},
		"body":        map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"},
		"intent":      map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}})
	if err != nil {
		return err
	}
	if http, _ := r.sc["http_status"].(float64); r.status == "sign_in_needed" || http == 401 || http == 403 && r.status == "failed" {
		s, err := step(modelapi.ToolRequestSignIn, map[string]any{"company": company, "scopes": []any{"orders:read", "orders:write"},
			"reason": "To exchange the jacket on order ord_7Hk2 for the insulated one, as you asked."})
		if err != nil {
			return err
		}
		return fmt.Errorf("the exchange needs your account at %s: %s. Sign in there in the Poppydesk window, then run the example again", company, s.message)
	}
	id, _ := r.sc["approval_id"].(string)
	deadline := time.Now().Add(maxWait)
	for r.status == "waiting_for_user" || r.status == "in_progress" || r.status == "outcome_unknown" {
		if id == "" {
			return errors.New("Poppydesk reported a wait but gave no approval handle")
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("no decision within %s; the approval %s is still waiting in the Poppydesk window", maxWait, id)
		}
		if r.status == "waiting_for_user" {
			say("   The exchange was NOT performed: it waits for your decision in the Poppydesk window (approval %s). This agent cannot approve it.", id)
		}
		secs := min(int(left/time.Second)+1, 60)
		if r, err = step(modelapi.ToolWaitForApproval, map[string]any{"approval_id": id, "timeout_seconds": secs}); err != nil {
			return err
		}
	}
	if c := r.untrusted(); c != "" {
		say("   The Company's answer (untrusted data): %s", c)
	}
	switch r.status {
	case "done":
		say("Outcome: the exchange was performed after your approval.")
		return nil
	case "declined":
		say("Outcome: you declined; nothing was exchanged.")
		return nil
	case "expired":
		say("Outcome: the Company's terms expired before you decided; nothing was exchanged.")
		return nil
	}
	return fmt.Errorf("the exchange ended with %s: %s", r.status, r.message)
}
