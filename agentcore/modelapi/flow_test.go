package modelapi_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestToolsListed: every core tool is listed with a description, an object schema that refuses
// unknown arguments, and annotations that fit what it does; no tool has an approval parameter.
func TestToolsListed(t *testing.T) {
	f := newFixture(t, fopts{})
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type ann struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]ann{
		modelapi.ToolDiscoverCompany:   {true, false, true, true},
		modelapi.ToolDescribeCompany:   {true, false, true, true},
		modelapi.ToolListAPIOperations: {true, false, true, true},
		modelapi.ToolListMCPTools:      {true, false, true, true},
		modelapi.ToolCallAPIOperation:  {false, true, false, true},
		modelapi.ToolCallMCPTool:       {false, true, false, true},
		modelapi.ToolRequestSignIn:     {false, false, true, false},
		modelapi.ToolGetApproval:       {true, false, true, false},
		modelapi.ToolWaitForApproval:   {true, false, true, false},
		modelapi.ToolRecentActivity:    {true, false, true, false},
	}
	got := map[string]bool{}
	for _, tl := range res.Tools {
		got[tl.Name] = true
		// Tools registered by other areas (conversations, browser) get the same checks except
		// the exact annotation values, which their own tests pin.
		w, core := want[tl.Name]
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations incomplete: %+v", tl.Name, a)
			continue
		}
		if core && (ann{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}) != w {
			t.Errorf("%s: annotations %+v, want %+v", tl.Name, a, w)
		}
		if len(tl.Description) < 40 || tl.Title == "" {
			t.Errorf("%s: description %q, title %q", tl.Name, tl.Description, tl.Title)
		}
		schema, _ := json.Marshal(tl.InputSchema)
		var sc struct {
			Type       string                     `json:"type"`
			Additional *bool                      `json:"additionalProperties"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(schema, &sc); err != nil || sc.Type != "object" || sc.Additional == nil || *sc.Additional {
			t.Errorf("%s: schema %s must be an object with additionalProperties false", tl.Name, schema)
		}
		for p := range sc.Properties {
			if l := strings.ToLower(p); p != "approval_id" && strings.Contains(l, "approv") || strings.Contains(l, "decision") || strings.Contains(l, "confirm") || p == "_meta" {
				t.Errorf("%s has a parameter %q that looks like an approval", tl.Name, p)
			}
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("tool %s is not listed", name)
		}
	}
	// No resources or prompts: nothing else the model could use.
	if r, err := f.cs.ListPrompts(context.Background(), nil); err == nil && len(r.Prompts) > 0 {
		t.Errorf("prompts listed: %+v", r.Prompts)
	}
	if r, err := f.cs.ListResources(context.Background(), nil); err == nil && len(r.Resources) > 0 {
		t.Errorf("resources listed: %+v", r.Resources)
	}
}

// TestJacketExchange walks the spec's jacket exchange as a model would, with the user approving
// in the window (queue.Approve, the window's side) while the model waits.
func TestJacketExchange(t *testing.T) {
	f := newFixture(t, fopts{signedIn: true})
	r := f.mustCall(t, modelapi.ToolDiscoverCompany, map[string]any{"domain": f.s.Domain})
	if r.IsError || r.status() != "ok" || r.SC["identifier"] != f.s.Identifier() {
		t.Fatalf("discover: %s", r.Raw)
	}
	checkEnvelope(t, r, f.s.Identifier())
	r = f.mustCall(t, modelapi.ToolDescribeCompany, map[string]any{"company": f.s.Domain})
	if r.IsError || !strings.Contains(r.Raw, "orders:write") || !strings.Contains(r.Raw, `"irreversible"`) || !slices.Equal(strSlice(r.SC["signed_in_accounts"]), []string{account}) {
		t.Fatalf("describe: %s", r.Raw)
	}
	checkEnvelope(t, r, f.s.Identifier())
	r = f.mustCall(t, modelapi.ToolListAPIOperations, map[string]any{"company": f.s.Domain})
	if r.IsError || !strings.Contains(r.Raw, `exchangeItem POST /orders/{id}/exchanges`) {
		t.Fatalf("operations: %s", r.Raw)
	}
	r = f.mustCall(t, modelapi.ToolDescribeAPIOperation, map[string]any{"company": f.s.Domain, "operation_id": "exchangeItem"})
	if r.IsError || !strings.Contains(r.Raw, `"replacement_sku"`) || !strings.Contains(r.Raw, `"orders:write"`) {
		t.Fatalf("describe operation: %s", r.Raw)
	}
	r = f.mustCall(t, modelapi.ToolCallAPIOperation, f.exchangeArgs(nil))
	if r.IsError || r.status() != "waiting_for_user" || r.approvalID() == "" || !strings.Contains(r.message(), "not performed; waiting for the user's decision in Poppydesk") {
		t.Fatalf("exchange: %s", r.Raw)
	}
	if len(f.s.Ledger()) != 0 {
		t.Fatal("performed without the user's approval")
	}
	id := r.approvalID()
	g := f.mustCall(t, modelapi.ToolGetApproval, map[string]any{"approval_id": id})
	if g.status() != "waiting_for_user" || !strings.Contains(g.Raw, "Stormline Insulated Jacket") {
		t.Fatalf("get_approval: %s", g.Raw)
	}
	checkEnvelope(t, g, f.s.Identifier())
	// The model waits; the user approves in the window meanwhile.
	type res struct {
		r   reply
		err error
	}
	done := make(chan res, 1)
	go func() {
		r, err := f.call(t, modelapi.ToolWaitForApproval, map[string]any{"approval_id": id, "timeout_seconds": 30})
		done <- res{r, err}
	}()
	poppytest.BlockedIn(t, "approvals.(*Queue).Wait") // the approval must wake the model's wait, not precede it
	if out := f.approveInWindow(t, id); out.Status != "done" {
		t.Fatalf("approve: %+v", out)
	}
	w := <-done
	if w.err != nil || w.r.status() != "performed" || !strings.Contains(w.r.Raw, "Exchange confirmed") {
		t.Fatalf("wait: %v %s", w.err, w.r.Raw)
	}
	checkEnvelope(t, w.r, f.s.Identifier())
	if l := f.s.Ledger(); len(l) != 1 || l[0].Account != refcompany.DefaultAccount {
		t.Fatalf("ledger %+v", l)
	}
	a := f.mustCall(t, modelapi.ToolRecentActivity, map[string]any{"limit": 10})
	list, _ := a.SC["activity"].([]any)
	if len(list) < 6 {
		t.Fatalf("activity: %s", a.Raw)
	}
	first, _ := list[0].(map[string]any)
	if first["tool"] != modelapi.ToolWaitForApproval || first["status"] != "performed" || first["approvalId"] != id {
		t.Fatalf("newest activity %v", first)
	}
}

// checkEnvelope: Company content is inside the labelled envelope naming the Company, and the
// text starts with the fixed warning line.
func checkEnvelope(t testing.TB, r reply, company string) {
	t.Helper()
	env, ok := r.SC[modelapi.EnvelopeKey].(map[string]any)
	if !ok || env["company_identifier"] != company || env["company"] == "" || env["data"] == nil {
		t.Fatalf("no envelope naming %s: %s", company, r.Raw)
	}
	// Poppydesk's own part first, then the Company's, which starts with the warning.
	own, company, ok := strings.Cut(r.Text, "\n"+modelapi.UntrustedWarning+"\n")
	if !ok || !strings.HasPrefix(own, "Poppydesk: ") || strings.Contains(own, "UNTRUSTED") || company == "" {
		t.Fatalf("the text is not Poppydesk's part then the Company's part starting with the warning: %q", r.Text)
	}
}

func strSlice(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
