package modelapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// toolCase is one tool call and what the model must get.
type toolCase struct {
	name     string
	opts     fopts
	discover bool                           // discover the Company first (through the tool)
	setup    func(t *testing.T, f *fixture) // before the call
	tool     string
	args     func(f *fixture) any
	status   string
	isError  bool
	contains []string // in the whole result
	envelope bool     // Company content must be in the envelope
	after    func(t *testing.T, f *fixture, r reply)
}

// toolCases covers every tool, its error paths, and the reference Company's faults. The canary
// test runs them all again with secrets planted.
func toolCases() []toolCase {
	company := func(f *fixture) map[string]any { return map[string]any{"company": f.s.Domain} }
	with := func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m }
	return []toolCase{
		{name: "discover", tool: modelapi.ToolDiscoverCompany, args: func(f *fixture) any { return map[string]any{"domain": f.s.Domain} },
			status: "ok", contains: []string{"Shop (reference Company)"}, envelope: true},
		{name: "discover not a domain", tool: modelapi.ToolDiscoverCompany, args: func(f *fixture) any { return map[string]any{"domain": "https://shop.example/x"} },
			status: "refused", isError: true, contains: []string{"is not a domain"}},
		{name: "discover unknown argument", tool: modelapi.ToolDiscoverCompany, args: func(f *fixture) any { return map[string]any{"domain": f.s.Domain, "approved": true} },
			status: "refused", isError: true, contains: []string{`unknown argument \"approved\"`}},
		{name: "discover wrong type", tool: modelapi.ToolDiscoverCompany, args: func(f *fixture) any { return map[string]any{"domain": 7} },
			status: "refused", isError: true, contains: []string{"must be a string"}},
		{name: "discover fault domain-mismatch", opts: fopts{faults: []string{refcompany.FaultDomainMismatch}}, tool: modelapi.ToolDiscoverCompany,
			args: func(f *fixture) any { return map[string]any{"domain": f.s.Domain} }, status: "discovery_failed", isError: true,
			contains: []string{"could not verify", "organization.domain"}, envelope: true},
		{name: "discover fault issuer-mismatch", opts: fopts{faults: []string{refcompany.FaultIssuerMismatch}}, tool: modelapi.ToolDiscoverCompany,
			args: func(f *fixture) any { return map[string]any{"domain": f.s.Domain} }, status: "discovery_failed", isError: true, envelope: true},
		{name: "describe signed out", discover: true, tool: modelapi.ToolDescribeCompany, args: func(f *fixture) any { return company(f) },
			status: "ok", contains: []string{`"signed_in_accounts":[]`, "personal_data", "orders:read"}, envelope: true},
		{name: "describe signed in", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolDescribeCompany, args: func(f *fixture) any { return company(f) },
			status: "ok", contains: []string{`"signed_in_accounts":["alice"]`, "signed in as alice"}, envelope: true},
		{name: "describe unknown identifier", tool: modelapi.ToolDescribeCompany, args: func(f *fixture) any { return map[string]any{"company": "https://nowhere.localhost"} },
			status: "not_found", isError: true, contains: []string{"discover_company"}},
		{name: "describe garbage", tool: modelapi.ToolDescribeCompany, args: func(f *fixture) any { return map[string]any{"company": "a b/c"} },
			status: "refused", isError: true},
		{name: "operations", discover: true, tool: modelapi.ToolListAPIOperations, args: func(f *fixture) any { return company(f) },
			status: "ok", contains: []string{"exchangeItem", "orders:write", "listProducts"}, envelope: true},
		{name: "operations unknown api", discover: true, tool: modelapi.ToolListAPIOperations,
			args: func(f *fixture) any { return with(company(f), "api", "https://other.example/openapi.json") }, status: "not_found", isError: true},
		{name: "mcp tools", discover: true, tool: modelapi.ToolListMCPTools, args: func(f *fixture) any { return company(f) },
			status: "ok", contains: []string{"exchange_item", "search_products", `"given_by_company":true`}, envelope: true},
		{name: "mcp tools unknown account", discover: true, tool: modelapi.ToolListMCPTools, args: func(f *fixture) any { return with(company(f), "account", "bob") },
			status: "not_signed_in", isError: true, contains: []string{"request_sign_in"}},
		{name: "call products signed out", discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listProducts") }, status: "performed", contains: []string{"Stormline jacket"}, envelope: true},
		{name: "call orders signed out", discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listOrders") }, status: modelapi.StatusWaitingForSignIn,
			contains: []string{"not performed; waiting for the user to sign in in Poppydesk (scopes: orders:read)"},
			after: func(t *testing.T, f *fixture, r reply) {
				checkAutoSignIn(t, f, []string{"orders:read"}, "asked for the scope orders:read to call listOrders (you are not signed in there)")
			}},
		{name: "call exchange insufficient scope", opts: fopts{signedIn: true, scopes: []string{"orders:read"}}, discover: true,
			tool: modelapi.ToolCallAPIOperation, args: func(f *fixture) any { return f.exchangeArgs(nil) }, status: modelapi.StatusWaitingForSignIn,
			contains: []string{"not performed; waiting for the user to sign in in Poppydesk (scopes: orders:write)"},
			after: func(t *testing.T, f *fixture, r reply) {
				checkAutoSignIn(t, f, []string{"orders:write"}, "asked for the scope orders:write to call exchangeItem (the sign-in of account \"alice\" does not cover it)")
				if n := len(f.s.RequestsTo(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges")); n == 0 {
					t.Error("the exchange never reached the Company, so the 403 was not tested")
				}
				if len(f.s.Ledger()) != 0 {
					t.Fatal("performed without the scope")
				}
			}},
		{name: "mcp exchange insufficient scope", opts: fopts{signedIn: true, scopes: []string{"orders:read"}}, discover: true, tool: modelapi.ToolCallMCPTool,
			args: func(f *fixture) any {
				return with(with(company(f), "tool", "exchange_item"), "arguments", map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"})
			}, status: modelapi.StatusWaitingForSignIn, contains: []string{"waiting for the user to sign in in Poppydesk (scopes: orders:write)"},
			after: func(t *testing.T, f *fixture, r reply) {
				checkAutoSignIn(t, f, []string{"orders:write"}, "asked for the scope orders:write to call exchange_item")
			}},
		{name: "call orders signed in", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listOrders") }, status: "performed", contains: []string{"ord_7Hk2"}, envelope: true},
		{name: "call exchange", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return f.exchangeArgs(nil) }, status: "waiting_for_user", contains: []string{"not performed; waiting for the user's decision in Poppydesk"},
			after: func(t *testing.T, f *fixture, r reply) {
				if len(f.s.Ledger()) != 0 {
					t.Fatal("performed")
				}
			}},
		{name: "call unknown order", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any {
				return f.exchangeArgs(map[string]any{"path_params": map[string]any{"id": "ord_nope"}})
			}, status: "failed", isError: true,
			contains: []string{"order_not_found"}, envelope: true},
		{name: "call unknown operation", discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "deleteEverything") }, isError: true},
		{name: "call without operation", discover: true, tool: modelapi.ToolCallAPIOperation, args: func(f *fixture) any { return company(f) },
			status: "refused", isError: true},
		{name: "call body with approval", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any {
				return f.exchangeArgs(map[string]any{"body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m",
					modelapi.ApprovalMetaKey: map[string]any{"operation_id": "exc_1", "revision": "1"}}})
			}, status: "refused", isError: true, contains: []string{"approval"}},
		{name: "call fault 429-burst", opts: fopts{faults: []string{refcompany.Fault429Burst}}, discover: true, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listProducts") }, status: "performed"},
		{name: "call fault redirect-protected", opts: fopts{signedIn: true}, discover: true,
			setup: func(t *testing.T, f *fixture) { f.s.SetFault(refcompany.FaultRedirectProtected, true) }, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listOrders") }, isError: true},
		{name: "call fault session-ended", opts: fopts{signedIn: true}, discover: true,
			setup: func(t *testing.T, f *fixture) { f.s.SetFault(refcompany.FaultSessionEnded, true) }, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listOrders") }, isError: true, contains: []string{"session_ended"}},
		{name: "call fault version-unsupported", discover: true,
			setup: func(t *testing.T, f *fixture) { f.s.SetFault(refcompany.FaultVersionUnsupported, true) }, tool: modelapi.ToolCallAPIOperation,
			args: func(f *fixture) any { return with(company(f), "operation_id", "listProducts") }, isError: true},
		{name: "call fault summary-hostile", opts: fopts{signedIn: true, faults: []string{refcompany.FaultSummaryHostile}}, discover: true,
			tool: modelapi.ToolCallAPIOperation, args: func(f *fixture) any { return f.exchangeArgs(nil) }, status: "waiting_for_user"},
		{name: "call fault terms-mismatch", opts: fopts{signedIn: true, faults: []string{refcompany.FaultTermsMismatch}}, discover: true,
			tool: modelapi.ToolCallAPIOperation, args: func(f *fixture) any { return f.exchangeArgs(nil) }, status: "waiting_for_user"},
		{name: "mcp search", discover: true, tool: modelapi.ToolCallMCPTool,
			args: func(f *fixture) any {
				return with(with(company(f), "tool", "search_products"), "arguments", map[string]any{"query": "insulated"})
			}, status: "performed", contains: []string{"Stormline Insulated Jacket"}, envelope: true},
		{name: "mcp exchange", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolCallMCPTool,
			args: func(f *fixture) any {
				return with(with(company(f), "tool", "exchange_item"), "arguments", map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"})
			}, status: "waiting_for_user", contains: []string{"not performed"}},
		{name: "mcp arguments with _meta", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolCallMCPTool,
			args: func(f *fixture) any {
				return with(with(company(f), "tool", "exchange_item"), "arguments", map[string]any{"order_id": "ord_7Hk2", "_meta": map[string]any{modelapi.ApprovalMetaKey: map[string]any{"operation_id": "x", "revision": "y"}}})
			}, status: "refused", isError: true, contains: []string{"_meta"}},
		{name: "mcp arguments not an object", discover: true, tool: modelapi.ToolCallMCPTool,
			args: func(f *fixture) any { return with(with(company(f), "tool", "search_products"), "arguments", []any{1}) }, status: "refused", isError: true},
		{name: "mcp unknown tool", discover: true, tool: modelapi.ToolCallMCPTool,
			args: func(f *fixture) any { return with(company(f), "tool", "drop_tables") }, isError: true},
		{name: "sign-in request", discover: true, tool: modelapi.ToolRequestSignIn,
			args: func(f *fixture) any {
				return with(with(company(f), "scopes", []any{"orders:write"}), "reason", "To exchange the jacket you asked about.")
			}, status: "asked_user", contains: []string{"the user has been asked in Poppydesk"},
			after: func(t *testing.T, f *fixture, r reply) {
				l, _ := f.signins.List(context.Background())
				if len(l) != 1 || l[0].ModelReason != "To exchange the jacket you asked about." || l[0].Company != f.s.Identifier() || l[0].CompanyName == "" {
					t.Fatalf("sign-in requests %+v", l)
				}
			}},
		{name: "sign-in unknown scope", discover: true, tool: modelapi.ToolRequestSignIn,
			args: func(f *fixture) any { return with(with(company(f), "scopes", []any{"admin"}), "reason", "x") }, status: "refused", isError: true},
		{name: "sign-in without reason", discover: true, tool: modelapi.ToolRequestSignIn,
			args: func(f *fixture) any { return with(with(company(f), "scopes", []any{"orders:read"}), "reason", " ") }, status: "refused", isError: true},
		{name: "get approval", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolGetApproval,
			args: nil, status: "waiting_for_user", envelope: true, contains: []string{"Stormline"}},
		{name: "get approval unknown", tool: modelapi.ToolGetApproval, args: func(f *fixture) any { return map[string]any{"approval_id": "apr_nope"} },
			status: "not_found", isError: true},
		{name: "get approval bad handle", tool: modelapi.ToolGetApproval, args: func(f *fixture) any { return map[string]any{"approval_id": "../../etc"} },
			status: "refused", isError: true},
		{name: "wait times out", opts: fopts{signedIn: true}, discover: true, tool: modelapi.ToolWaitForApproval,
			args: nil, status: "waiting_for_user"},
		{name: "wait too long", tool: modelapi.ToolWaitForApproval, args: func(f *fixture) any { return map[string]any{"approval_id": "a", "timeout_seconds": 301} },
			status: "refused", isError: true},
		{name: "activity", tool: modelapi.ToolRecentActivity, args: func(f *fixture) any { return map[string]any{} }, status: "ok"},
		{name: "activity bad limit", tool: modelapi.ToolRecentActivity, args: func(f *fixture) any { return map[string]any{"limit": 0} },
			status: "refused", isError: true},
	}
}

// checkAutoSignIn checks the sign-in request Poppydesk recorded by itself: the Company's need in
// Poppydesk's words (Reason), no model words, the needed scopes, and that nothing was signed in:
// no request reached the issuer (a sign-in only starts from the user's gesture in the window).
func checkAutoSignIn(t *testing.T, f *fixture, scopes []string, reason string) {
	t.Helper()
	l, _ := f.signins.List(context.Background())
	if len(l) != 1 {
		t.Fatalf("sign-in requests = %+v, want exactly one", l)
	}
	r := l[0]
	if r.ModelReason != "" || !strings.Contains(r.Reason, reason) || r.Company != f.s.Identifier() || r.CompanyName == "" ||
		strings.Join(r.Scopes, " ") != strings.Join(scopes, " ") {
		t.Fatalf("sign-in request %+v, want Poppydesk's reason containing %q and scopes %v", r, reason, scopes)
	}
	for _, q := range f.s.RequestsTo(refcompany.AuthHost, "") {
		// Discovery reads the issuer's metadata; a signed-in account's refresh gets a token for
		// another resource (spec 4.4, 4.5). Neither is a sign-in.
		refresh := q.Path == "/oauth/token" && strings.Contains(string(q.Body), "grant_type=refresh_token")
		if !strings.HasPrefix(q.Path, "/.well-known/") && !refresh {
			t.Fatalf("%s %s reached the issuer: Poppydesk must never start a sign-in by itself", q.Method, q.Path)
		}
	}
}

// runCase runs one case on a fresh fixture and returns everything the model received.
func runCase(t *testing.T, tc toolCase) (*fixture, []reply) {
	f := newFixture(t, tc.opts)
	var got []reply
	if tc.discover {
		r := f.mustCall(t, modelapi.ToolDiscoverCompany, map[string]any{"domain": f.s.Domain})
		got = append(got, r)
	}
	if tc.setup != nil {
		tc.setup(t, f)
	}
	var args any
	if tc.args != nil {
		args = tc.args(f)
	} else { // approval tools: a pending approval first
		r := f.mustCall(t, modelapi.ToolCallAPIOperation, f.exchangeArgs(nil))
		got = append(got, r)
		if r.approvalID() == "" {
			t.Fatalf("no approval: %s", r.Raw)
		}
		args = map[string]any{"approval_id": r.approvalID()}
		if tc.tool == modelapi.ToolWaitForApproval {
			args = map[string]any{"approval_id": r.approvalID(), "timeout_seconds": 1}
		}
	}
	r, err := f.call(t, tc.tool, args)
	if err != nil {
		t.Fatalf("%s: JSON-RPC error %v", tc.tool, err)
	}
	got = append(got, r)
	t.Logf("%s -> %s: %s", tc.tool, r.status(), r.message())
	if r.IsError != tc.isError || tc.status != "" && r.status() != tc.status {
		t.Fatalf("%s: isError %v status %q, want %v %q: %s", tc.tool, r.IsError, r.status(), tc.isError, tc.status, r.Raw)
	}
	if r.message() == "" || !strings.Contains(r.Text, "Poppydesk: ") {
		t.Fatalf("no Poppydesk message: %s", r.Raw)
	}
	for _, s := range tc.contains {
		if !strings.Contains(r.Raw, s) {
			t.Errorf("result lacks %q: %s", s, r.Raw)
		}
	}
	if tc.envelope {
		who := f.s.Identifier()
		if strings.HasPrefix(tc.name, "discover fault") {
			who = f.s.Domain // not verified, so named by the domain the model gave
		}
		checkEnvelope(t, r, who)
	}
	if tc.after != nil {
		tc.after(t, f, r)
	}
	return f, got
}

// TestTools runs every tool, its error paths and the reference Company's faults over the socket.
func TestTools(t *testing.T) {
	for _, tc := range toolCases() {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}
