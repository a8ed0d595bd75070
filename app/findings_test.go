package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
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

// TestMissingFieldsFindings: a Company answer without a field the specification requires is a
// finding in the Inspector, with its section, although Poppydesk reads past it: a conversation
// read without has_more and a Company message without author.type (spec 8.5, 8.7), and a
// scope hint without personal_data (spec 4.7), which Poppydesk then shows as unknown, never as
// "no personal data".
func TestMissingFieldsFindings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultScopeHintPartial}})
	f.Company.SetAgentFault(refcompany.AgentFaultMissingFields, true)
	co := f.Discover(t)
	for _, s := range co.Scopes {
		if s.Name == "orders:write" && s.PersonalData != nil {
			t.Errorf("orders:write's hint has no personal_data, yet discovery says personal_data=%v", *s.PersonalData)
		}
	}
	m := f.Host.Conversations()
	v, err := m.Start(ctx, conversation.Start{Company: co.Identifier, Text: "Which jacket is the warmest?"})
	if err != nil {
		t.Fatal(err)
	}
	// Reads until the Company Agent's reply has been read (it answers within the read's wait).
	for i := 0; i < 10; i++ {
		replied := len(f.Company.AgentMessageIDs(v.ConversationID)) > 0
		if _, err := m.Read(ctx, co.Identifier, v.ConversationID, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if replied {
			break
		}
	}
	if err := f.Host.Engine().FlushExchanges(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rule, section, words string }{
		{inspect.RuleConvFields, "spec 8.5, 8.7", "has no has_more"},
		{inspect.RuleConvFields, "spec 8.5, 8.7", `has author.type "", not agent or human`},
		{inspect.RuleScopeHints, "spec 4.7", `the scope hint of "orders:write" has no personal_data`},
	} {
		found := false
		for _, x := range findingsOf(t, f, tc.rule) {
			found = found || x.Company != "" && x.Section == tc.section && x.Level == inspect.MUST && strings.Contains(x.Seen, tc.words) && x.Exchange != 0
		}
		if !found {
			t.Errorf("no %s finding (%s) that says %q: %#v", tc.rule, tc.section, tc.words, findingsOf(t, f, tc.rule))
		}
	}
}
