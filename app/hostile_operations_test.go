package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// callToolRaw calls a model tool and returns its structured content and whether it is a tool
// error, without failing on one.
func callToolRaw(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out, res.IsError
}

// TestUndeclaredOperationIsTheCompanysError: a Company that returns an operation to a request
// that did not declare the Operations extension version 2 — it lists no operations extension in
// poppy.json, or only another version — breaks Operations 2. Through the model's MCP interface,
// over the API and over MCP, the operation never becomes a pending approval or a dialog, nothing
// is performed, no request carries Poppy-Approval or the approval _meta, and the model is told in
// Poppydesk's own words that the Company asked for an approval it may not ask for here.
func TestUndeclaredOperationIsTheCompanysError(t *testing.T) {
	for _, fault := range []string{refcompany.FaultOperationsUnlisted, refcompany.FaultOperationsOtherVersion} {
		t.Run(fault, func(t *testing.T) {
			f := apptest.Start(t, apptest.Options{Faults: []string{fault}, Socket: true})
			f.SignIn(t, "personal", "orders:read", "orders:write")
			cs := modelClient(t, f.Host)
			f.Company.ResetRequests()
			calls := []struct {
				tool string
				args map[string]any
			}{
				{modelapi.ToolCallAPIOperation, map[string]any{"company": f.Company.Domain, "account": "personal", "operation_id": "exchangeItem",
					"path_params": map[string]any{"id": "ord_7Hk2"}, "body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}}},
				{modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "account": "personal", "tool": "exchange_item",
					"arguments": map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_9Zt", "replacement_sku": "stormline-m"}}},
			}
			for _, c := range calls {
				out, isErr := callToolRaw(t, cs, c.tool, c.args)
				msg, _ := out["message"].(string)
				if !isErr || out["status"] != "company_error" || out["approval_id"] != nil {
					t.Fatalf("%s: status %v (error %v), approval %v: %v", c.tool, out["status"], isErr, out["approval_id"], out)
				}
				for _, want := range []string{"may not ask for an approval here", "Operations 2", "Company's error, not yours"} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s: the model's message %q does not say %q", c.tool, msg, want)
					}
				}
			}
			items, err := f.Fronts().Approvals.List()
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 0 {
				t.Fatalf("the window shows %d approvals: %+v", len(items), items)
			}
			if n := len(f.Company.Ledger()); n != 0 {
				t.Fatalf("the Company performed %d operations", n)
			}
			for _, r := range f.Company.Requests() {
				if r.Header.Get("Poppy-Approval") != "" || strings.Contains(string(r.Body), refcompany.ApprovalMetaKey) {
					t.Fatalf("%s %s carried an approval", r.Method, r.Path)
				}
				if strings.Contains(r.Header.Get("Poppy-Extensions"), "operations") {
					t.Fatalf("%s %s declared operations although the Company does not list version 2", r.Method, r.Path)
				}
			}
		})
	}
}

// TestApprovalNotSentWithoutTheExtension: an approval the user gives for an operation returned
// while the Company listed the Operations extension version 2 is not sent once the Company no
// longer lists it: the Session Poppydesk would send it in does not declare the extension, and an
// approval travels only on requests that do (Operations 2). The window is told nothing was sent.
func TestApprovalNotSentWithoutTheExtension(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Socket: true})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	cs := modelClient(t, f.Host)
	out := callTool(t, cs, modelapi.ToolCallAPIOperation, map[string]any{"company": f.Company.Domain, "account": "personal", "operation_id": "exchangeItem",
		"path_params": map[string]any{"id": "ord_7Hk2"}, "body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}})
	id, _ := out["approval_id"].(string)
	if out["status"] != "waiting_for_user" || id == "" {
		t.Fatalf("the exchange did not wait for the user: %v", out)
	}
	w := f.Fronts().Approvals
	it, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	// The Company stops listing version 2; discovery sees it once the cached poppy.json is stale.
	if err := f.Company.SetFault(refcompany.FaultOperationsOtherVersion, true); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(301 * time.Second)
	f.Discover(t)
	f.Company.ResetRequests()
	if _, err := w.Approve(id, it.Current.Revision, it.Current.Digest); err == nil || !strings.Contains(err.Error(), "Operations 2") {
		t.Fatalf("Approve = %v; want a refusal naming Operations 2", err)
	}
	for _, r := range f.Company.Requests() {
		if r.Header.Get("Poppy-Approval") != "" {
			t.Fatalf("%s %s carried Poppy-Approval", r.Method, r.Path)
		}
	}
	if n := len(f.Company.Ledger()); n != 0 {
		t.Fatalf("the Company performed %d operations", n)
	}
}
