package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// noSleep is a Tuning.Sleep that does not wait: the approval queue's backoff and polls pass at
// once, so a test sees every attempt without waiting for them.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// exchangeArgs is the exchange of the spec's jacket (order ord_7Hk2, item itm_4Qa) as an MCP
// tool's arguments, and apiExchange the same exchange through the Orders API.
var exchangeArgs = map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}

func apiExchange(f *apptest.Fixture) map[string]any {
	return map[string]any{"company": f.Company.Domain, "account": "personal", "operation_id": "exchangeItem",
		"path_params": map[string]any{"id": "ord_7Hk2"}, "body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}}
}

// TestApprovalAskedThroughAPIThenMCP: the model asks for an exchange through the Company's API,
// then for the same order and item through its MCP tool. The Company says it is the same action
// (the same operation_id, Operations 3 "New terms") with a revision for the tool call, which
// must be approved through the interface that returned it (Operations 6). The model learns that
// its tool call is now the one waiting for the user; the window shows the tool call; Approve sends
// the approval with the tool call and the Company performs the exchange once. Nothing of
// Poppydesk's own goes into the untrusted Company content.
func TestApprovalAskedThroughAPIThenMCP(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Socket: true, Edit: func(c *app.Config) { c.Tuning.Sleep = noSleep }})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	cs := modelClient(t, f.Host)
	first := callTool(t, cs, modelapi.ToolCallAPIOperation, apiExchange(f))
	id, _ := first["approval_id"].(string)
	if first["status"] != "waiting_for_user" || id == "" {
		t.Fatalf("the API call: %v", first)
	}
	second := callTool(t, cs, modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "account": "personal",
		"tool": "exchange_item", "arguments": exchangeArgs})
	msg, _ := second["message"].(string)
	if second["status"] != "waiting_for_user" || second["approval_id"] != id || !strings.Contains(msg, "MCP tool") || !strings.Contains(msg, "same action") {
		t.Fatalf("the MCP call: %v; want the same approval, saying the Company counts the tool call as the same action", second)
	}
	w := f.Fronts().Approvals
	it, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if it.Interface != "mcp" || it.Request.Tool != "exchange_item" {
		t.Fatalf("the window shows interface %q, request %+v; want the MCP tool call the current revision came from", it.Interface, it.Request)
	}
	o, err := w.Approve(id, it.Current.Revision, it.Current.Digest)
	if err != nil || o.Status != "done" {
		t.Fatalf("Approve = %+v, %v; want the exchange performed", o, err)
	}
	if l := f.Company.Ledger(); len(l) != 1 || l[0].Interface != refcompany.InterfaceMCP {
		t.Fatalf("the Company performed %+v; want the exchange once, through its MCP tool", l)
	}
	for _, r := range f.Company.ApprovalsReceived() {
		if r.Interface != refcompany.InterfaceMCP {
			t.Fatalf("an approval went through %s: %+v", r.Interface, r)
		}
	}
	out := callTool(t, cs, modelapi.ToolWaitForApproval, map[string]any{"approval_id": id, "timeout_seconds": 1})
	if out["status"] != "performed" {
		t.Fatalf("wait_for_approval: %v", out)
	}
}

// TestApprovalNotSendableIsNotBlamedOnTheCompany: an approval Poppydesk cannot send at all (here
// the stored request names a Company API it no longer lists) reaches nothing at the Company: the
// item fails, nothing performed, and Poppydesk's own words are its message, never inside the
// untrusted Company content.
func TestApprovalNotSendableIsNotBlamedOnTheCompany(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Socket: true, Edit: func(c *app.Config) { c.Tuning.Sleep = noSleep }})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	cs := modelClient(t, f.Host)
	out := callTool(t, cs, modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "account": "personal",
		"tool": "exchange_item", "arguments": exchangeArgs})
	id, _ := out["approval_id"].(string)
	w := f.Fronts().Approvals
	it, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	// The Company stops listing its MCP server before the user approves, and Poppydesk reads
	// poppy.json again once the copy it cached is stale.
	f.Clock.Advance(6 * time.Minute)
	f.Company.EditPoppyJSON(func(doc map[string]any) {
		var kept []any
		for _, a := range doc["apis"].([]any) {
			if a.(map[string]any)["type"] != "mcp" {
				kept = append(kept, a)
			}
		}
		doc["apis"] = kept
	})
	if _, err := f.Host.Engine().Discover(context.Background(), f.Company.Domain); err != nil {
		t.Fatal(err)
	}
	f.Company.ResetRequests()
	o, err := w.Approve(id, it.Current.Revision, it.Current.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != "failed" {
		t.Fatalf("Approve = %+v; want failed: nothing could be sent", o)
	}
	for _, r := range f.Company.Requests() {
		if r.Path == refcompany.MCPPath {
			t.Fatalf("the Company got %s %s", r.Method, r.Path)
		}
	}
	res := waitRaw(t, cs, id)
	if res["status"] != "failed" {
		t.Fatalf("wait_for_approval: %v", res)
	}
	if data, ok := res["untrusted_company_content"]; ok {
		b, _ := json.Marshal(data)
		t.Fatalf("Poppydesk's own failure is inside the Company's content: %s", b)
	}
}

// waitRaw is wait_for_approval's structured content.
func waitRaw(t *testing.T, cs *mcp.ClientSession, id string) map[string]any {
	t.Helper()
	out, _ := callToolRaw(t, cs, modelapi.ToolWaitForApproval, map[string]any{"approval_id": id, "timeout_seconds": 1})
	return out
}

// TestRefusedApprovalIsFailed: after Poppydesk restarts, the Company can no longer verify its
// Session header and refuses the approved request with HTTP 400 invalid_session (spec 5.3, 7).
// That is a clear answer: the Company handled nothing, so the approval failed and nothing was
// performed (not "outcome unknown"), and it is not sent again.
func TestRefusedApprovalIsFailed(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Socket: true, Edit: func(c *app.Config) { c.Tuning.Sleep = noSleep }})
	f.Company.SetOperationTTL(time.Hour)
	f.SignIn(t, "personal", "orders:read", "orders:write")
	cs := modelClient(t, f.Host)
	out := callTool(t, cs, modelapi.ToolCallAPIOperation, apiExchange(f))
	id, _ := out["approval_id"].(string)
	f.Restart(t)
	// The restarted Poppydesk's client metadata is out of the Company's reach, and the Company's
	// copy of it has expired: its Session check fails (spec 5.3 step 1).
	f.Company.AddHost(refcompany.AgentHost, http.NotFoundHandler())
	f.Clock.Advance(10 * time.Minute)
	w := f.Fronts().Approvals
	it, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	f.Company.ResetRequests()
	o, err := w.Approve(id, it.Current.Revision, it.Current.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != "failed" || o.HTTPStatus != http.StatusBadRequest {
		t.Fatalf("Approve = %+v; want failed with the Company's HTTP 400", o)
	}
	sent := 0
	for _, r := range f.Company.Requests() {
		if r.Header.Get("Poppy-Approval") != "" {
			sent++
		}
	}
	if sent != 1 {
		t.Fatalf("the approval was sent %d times; a clear refusal is not retried", sent)
	}
	if l := f.Company.Ledger(); len(l) != 0 {
		t.Fatalf("the Company performed %+v", l)
	}
}

// TestMCPToolCallBoundOnce: a Company MCP tool call that reached the Company is sent once, and
// the model's answer comes within Poppydesk's one bound. A tool slower than the bound ends the
// model's call with Poppydesk's timeout; an answer that breaks off after the call reached the
// server is not sent again on a new connection. In both, the model's answer does not wait for
// Poppydesk's goodbye to the server (the MCP session's DELETE, which this server holds until the
// model has its answer).
func TestMCPToolCallBoundOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broken bool   // the server drops the connection instead of answering the tool call
		status string // what the model is told ("": not checked here)
	}{
		{name: "slower than the bound", status: modelapi.StatusTimeout},
		{name: "answer broke off", broken: true, status: modelapi.StatusConnectionLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32 // tools/call requests that reached the server
			srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "slow_tool", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				})
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
			answered := make(chan struct{}) // the model has its answer
			deleted := make(chan bool, 1)   // the DELETE was held until the model's answer (true), or Poppydesk gave it up before (false)
			f := apptest.Start(t, apptest.Options{Socket: true, Edit: func(c *app.Config) { c.Tuning.ExchangeTimeout = 500 * time.Millisecond }})
			f.Company.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.Method {
				case http.MethodDelete:
					select {
					case <-answered:
						deleted <- true
					case <-r.Context().Done():
						deleted <- false
						return
					}
				case http.MethodPost:
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					if bytes.Contains(body, []byte(`"tools/call"`)) {
						calls.Add(1)
						if tc.broken {
							panic(http.ErrAbortHandler)
						}
					}
				}
				h.ServeHTTP(w, r)
			}))
			slowURL := f.Company.URL(refcompany.OtherHost, "/mcp")
			f.Company.EditPoppyJSON(func(doc map[string]any) {
				doc["apis"] = append(doc["apis"].([]any), map[string]any{"type": "mcp", "url": slowURL, "description": "A slow MCP server"})
			})
			cs := modelClient(t, f.Host)
			out, _ := callToolRaw(t, cs, modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "server": slowURL, "tool": "slow_tool"})
			close(answered)
			if tc.status != "" && out["status"] != tc.status || out["status"] == modelapi.StatusOK || out["status"] == modelapi.StatusPerformed {
				t.Fatalf("call_mcp_tool = %v; want %q, and never a result", out, tc.status)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("the tool call reached the Company %d times; want once", n)
			}
			select {
			case held := <-deleted:
				if !held {
					t.Fatal("the model's answer waited for the close of the MCP session, which Poppydesk gave up before the answer")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Poppydesk never ended the MCP session whose call failed")
			}
		})
	}
}
