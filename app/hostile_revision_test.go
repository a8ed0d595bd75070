package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// blame are words that would put a Company's violation on the model or the user.
var blame = []string{"the model", "repeated the call", "request changed", "you changed"}

func noBlame(t *testing.T, where, text string) {
	t.Helper()
	for _, b := range blame {
		if strings.Contains(strings.ToLower(text), b) {
			t.Errorf("%s blames someone else than the Company (%q): %s", where, b, text)
		}
	}
}

// TestReusedRevisionIsTheCompanysViolation: a Company that sends other terms under a revision it
// already used (FaultReusedRevision) breaks Operations 3. The pending approval the user was
// reading can no longer be approved: the window's item says in plain words that the Company
// changed the terms without a new revision, Approve is refused for the old terms and the new
// ones alike, nothing is sent or performed, and neither the model's message nor the window's
// words blame the model.
func TestReusedRevisionIsTheCompanysViolation(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultReusedRevision}, Socket: true})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	cs := modelClient(t, f.Host)
	exchange := func(sku string) (map[string]any, bool) {
		return callToolRaw(t, cs, modelapi.ToolCallAPIOperation, map[string]any{"company": f.Company.Domain, "account": "personal",
			"operation_id": "exchangeItem", "path_params": map[string]any{"id": "ord_7Hk2"},
			"body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": sku}})
	}
	out, _ := exchange("stormline-insulated-m")
	id, _ := out["approval_id"].(string)
	if out["status"] != "waiting_for_user" || id == "" {
		t.Fatalf("first call: %v", out)
	}
	w := f.Fronts().Approvals
	seen, err := w.Get(id) // what the user is reading
	if err != nil {
		t.Fatal(err)
	}
	f.Company.ResetRequests()

	// The model asks for another size of the same exchange; the Company answers with other terms
	// under the revision it already used.
	out, isErr := exchange("stormline-insulated-l")
	msg, _ := out["message"].(string)
	if !isErr || out["status"] != approvals.StatusCompanyError || !strings.Contains(msg, "Operations 3") || !strings.Contains(msg, "Company's error, not yours") {
		t.Fatalf("second call: %v", out)
	}
	noBlame(t, "the model's message", msg)

	it, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if it.Decidable || it.State != "failed" || !strings.Contains(it.Violation, "changed the terms without giving them a new version") ||
		!strings.Contains(it.Violation, seen.Current.Revision) || len(it.Warnings) == 0 || it.Warnings[0].Code != approvals.WarnRevisionReused {
		t.Fatalf("the window's item: decidable %v, state %s, violation %q, warnings %+v", it.Decidable, it.State, it.Violation, it.Warnings)
	}
	if it.Current.Revision != seen.Current.Revision || it.Current.Digest == seen.Current.Digest {
		t.Fatalf("the item does not show the other terms under the same revision: %+v", it.Current)
	}
	noBlame(t, "the window's violation", it.Violation)
	checkRow(t, w, id)
	for _, wn := range it.Warnings {
		noBlame(t, "the window's warning "+wn.Code, wn.Message)
	}
	for _, d := range []string{seen.Current.Digest, it.Current.Digest} {
		_, err := w.Approve(id, it.Current.Revision, d)
		if err == nil || !strings.Contains(err.Error(), "without giving them a new revision") {
			t.Fatalf("Approve with digest %s: err = %v", d, err)
		}
		noBlame(t, "the refusal", err.Error())
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

// TestReusedRevisionAfterApprovalSendsNothingMore: the user approved the first terms and the
// approval went out, but the Company is still performing it (503). When the Company then sends
// other terms under the approved revision, Poppydesk sends that approval no more (it could now
// mean the other terms), keeps the outcome unknown so nobody is asked about the same action
// again, and the window says the Company broke the rules after the approval was sent.
func TestReusedRevisionAfterApprovalSendsNothingMore(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultReusedRevision, refcompany.FaultInProgress503}, Socket: true,
		Edit: func(c *app.Config) {
			c.Tuning.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
		}})
	f.Company.SetInProgressTries(1 << 20)
	f.SignIn(t, "personal", "orders:read", "orders:write")
	cs := modelClient(t, f.Host)
	out := callTool(t, cs, modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "account": "personal", "tool": "exchange_item",
		"arguments": map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}})
	id, _ := out["approval_id"].(string)
	if out["status"] != "waiting_for_user" || id == "" {
		t.Fatalf("first call: %v", out)
	}
	w := f.Fronts().Approvals
	seen, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := w.Approve(id, seen.Current.Revision, seen.Current.Digest)
	if err != nil || o.Status != "in_progress" {
		t.Fatalf("Approve = %+v, %v; want the Company still performing it", o, err)
	}
	// Another size: another tool call, so not held; the Company reuses the approved revision.
	out, _ = callToolRaw(t, cs, modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "account": "personal", "tool": "exchange_item",
		"arguments": map[string]any{"order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-l"}})
	msg, _ := out["message"].(string)
	if out["status"] != approvals.StatusCompanyError || !strings.Contains(msg, "Operations 3") || !strings.Contains(msg, "Do not request the same action again") {
		t.Fatalf("second call: %v", out)
	}
	noBlame(t, "the model's message", msg)
	it, err := w.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if it.State != "outcome_unknown" || !strings.Contains(it.Violation, "already been sent") {
		t.Fatalf("state %s, violation %q", it.State, it.Violation)
	}
	checkRow(t, w, id)
	f.Company.ResetRequests()
	if _, err := w.CheckOutcome(id); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Company.Requests() {
		if strings.Contains(string(r.Body), refcompany.ApprovalMetaKey) || r.Header.Get("Poppy-Approval") != "" {
			t.Fatalf("the approval of the reused revision was sent again: %s %s", r.Method, r.Path)
		}
	}
	if n := len(f.Company.Ledger()); n != 0 {
		t.Fatalf("the Company performed %d operations", n)
	}
}
