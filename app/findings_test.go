package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// findingsOf returns the Inspector's findings of rule, as the window lists them.
func findingsOf(t *testing.T, f *apptest.Fixture, rule string) []inspect.Finding {
	t.Helper()
	all, err := f.Fronts().Inspector.Findings()
	if err != nil {
		t.Fatal(err)
	}
	var out []inspect.Finding
	for _, x := range all {
		if x.Rule == rule {
			out = append(out, x)
		}
	}
	return out
}

// exchangeCalls are the spec's jacket exchange through the Orders API and through the MCP tool,
// for replacement sku, as the model asks for them.
func exchangeCalls(t *testing.T, f *apptest.Fixture, sku string) (api, mcp *approvals.Outcome) {
	t.Helper()
	co := f.Discover(t)
	var desc, server string
	for _, a := range co.Document.APIs {
		switch a.Type {
		case "openapi":
			desc = a.URL
		case "mcp":
			server = a.URL
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := f.Host.Queue()
	api, err := q.CallAPI(ctx, approvals.APICall{Company: co.Identifier, Account: "personal", API: desc, OperationID: "exchangeItem",
		Input: apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"` + sku + `"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	mcp, err = q.CallTool(ctx, approvals.ToolCall{Company: co.Identifier, Account: "personal", Server: server, Tool: "exchange_item",
		Arguments: json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"` + sku + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return api, mcp
}

// TestUndeclaredOperationFinding: an operation returned to a request that did not declare the
// Operations extension (Operations 2) is refused by the approval queue, which reports it: the
// Inspector's findings name the rule, the Company and the interface, for the API and the MCP
// tool alike (the exchange log sees only the API's JSON body).
func TestUndeclaredOperationFinding(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultOperationsUnlisted}})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	api, mcp := exchangeCalls(t, f, "stormline-insulated-m")
	if api.Status != approvals.StatusCompanyError || mcp.Status != approvals.StatusCompanyError {
		t.Fatalf("outcomes %s and %s, want %s", api.Status, mcp.Status, approvals.StatusCompanyError)
	}
	co := f.Discover(t)
	for _, iface := range []string{"api", "mcp"} {
		found := false
		for _, x := range findingsOf(t, f, inspect.RuleOpsUndeclared) {
			if x.Company == co.Identifier && x.Section == "Operations 2" && x.Level == inspect.MUST && strings.Contains(x.Seen, "its "+iface+" interface") {
				found = true
			}
		}
		if !found {
			t.Errorf("no Operations 2 finding for the %s interface in the Inspector: %+v", iface, findingsOf(t, f, inspect.RuleOpsUndeclared))
		}
	}
}

// TestReusedRevisionFinding: a revision reused for other terms (Operations 3) is reported by the
// approval queue where it detects it, and the Inspector lists it with the Company.
func TestReusedRevisionFinding(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultReusedRevision}})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	if api, _ := exchangeCalls(t, f, "stormline-insulated-m"); api.Status != "waiting_for_user" {
		t.Fatalf("first call: %+v", api)
	}
	if len(findingsOf(t, f, inspect.RuleOpsReusedRevision)) != 0 {
		t.Fatal("a reused revision was reported before any was sent")
	}
	if api, _ := exchangeCalls(t, f, "stormline-insulated-l"); api.Status != approvals.StatusCompanyError {
		t.Fatalf("second call: %+v", api)
	}
	co := f.Discover(t)
	fs := findingsOf(t, f, inspect.RuleOpsReusedRevision)
	if len(fs) == 0 || fs[0].Company != co.Identifier || fs[0].Section != "Operations 3" || !strings.Contains(fs[0].Seen, "under revision") {
		t.Fatalf("findings: %+v", fs)
	}
}
