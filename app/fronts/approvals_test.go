package fronts

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// The queue's conversions for the window. The real queue behind the window's Approvals service
// is exercised in services_test.go and end to end in e2e/approvals_test.go.

var t0 = time.Date(2026, 10, 8, 19, 0, 0, 0, time.UTC)

func sampleItem(id, state string, expires time.Time) approvals.Item {
	op := &operations.Operation{OperationID: "exc_5Rt2", Revision: "r1", Summary: "Exchange **it**", Terms: json.RawMessage(`{"order_id":"ord_7Hk2"}`), ExpiresAt: expires}
	return approvals.Item{
		ID: id, Company: "https://auth.shop.localhost:8443", CompanyName: "Poppy\u202e Outfitters", CompanyDomain: "shop.localhost:8443",
		Account: "acct_demo", SID: "sid1", Interface: "api", State: state,
		Current: approvals.OperationView{OperationID: op.OperationID, Revision: op.Revision, Summary: operations.RenderSummary(op.Summary), SummaryText: op.Summary,
			Terms: op.Terms, ExpiresAt: op.ExpiresAt, Digest: operations.Digest(op)},
		Request: approvals.RequestView{Method: "POST", URL: "https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges", Body: json.RawMessage(`{"item_id":"itm_4Qa"}`)},
		Result:  &approvals.Outcome{Status: "done", HTTPStatus: 201, Body: json.RawMessage(`{"message":"<b>ok</b>"}`), Text: "Exchange confirmed."},
		Created: t0, Updated: t0,
	}
}

func TestApprovalsConvert(t *testing.T) {
	src := []approvals.Item{
		sampleItem("a1", "pending", t0.Add(time.Minute)),
		sampleItem("a2", "pending", t0.Add(-time.Second)), // expired: not decidable
		sampleItem("a3", "succeeded", t0.Add(time.Minute)),
	}
	var items []ApprovalItem
	for i := range src {
		items = append(items, approvalItemOf(&src[i], t0))
	}
	if got := []bool{items[0].Decidable, items[1].Decidable, items[2].Decidable}; !reflect.DeepEqual(got, []bool{true, false, false}) {
		t.Errorf("decidable = %v", got)
	}
	var rows []approvals.Row
	for i := range src {
		rows = append(rows, approvals.Row{ID: src[i].ID, CompanyName: src[i].CompanyName, State: src[i].State,
			SummaryText: "Exchange\u200b it", ExpiresAt: src[i].Current.ExpiresAt, Created: t0, Updated: t0})
	}
	listed := approvalRowsOf(rows, t0)
	if got := []bool{listed[0].Decidable, listed[1].Decidable, listed[2].Decidable}; !reflect.DeepEqual(got, []bool{true, false, false}) {
		t.Errorf("rows decidable = %v: a row must say what the item says", got)
	}
	if r := listed[0]; r.CompanyName != "Poppy⟦U+202E⟧ Outfitters" || r.SummaryText != "Exchange⟦U+200B⟧ it" || r.ExpiresAt != "2026-10-08T19:01:00Z" || r.Decided != "" {
		t.Errorf("row = %+v: invisible characters must be made visible, times in RFC 3339", r)
	}
	if n := sectionsOf(map[string]int{SectionApprovals: 1}); n[0].Count != 1 || n[5].Count != 0 {
		t.Errorf("sections = %+v: the badge is on Approvals only", n)
	}
	it := items[0]
	if it.CompanyName != "Poppy⟦U+202E⟧ Outfitters" {
		t.Errorf("CompanyName = %q: invisible characters must be made visible", it.CompanyName)
	}
	if it.Current.ExpiresAt != "2026-10-08T19:01:00Z" || it.Created != "2026-10-08T19:00:00Z" {
		t.Errorf("times = %q, %q", it.Current.ExpiresAt, it.Created)
	}
	if it.Current.Digest == "" || it.Current.Digest != src[0].Current.Digest {
		t.Errorf("digest not passed through: %q", it.Current.Digest)
	}
	if !reflect.DeepEqual(it.Current.Terms, []TermRow{{"/order_id", `"ord_7Hk2"`}}) {
		t.Errorf("terms = %v", it.Current.Terms)
	}
	if it.Request.Body != "{\n  \"item_id\": \"itm_4Qa\"\n}" {
		t.Errorf("request body = %q", it.Request.Body)
	}
	if it.Result == nil || it.Result.Text != "Exchange confirmed." || !strings.Contains(it.Result.Body, `"<b>ok</b>"`) {
		t.Errorf("result = %+v", it.Result)
	}
	if it.Warnings == nil {
		t.Error("warnings must be an empty list, not null")
	}
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"companyName"`, `"decidable":true`, `"blocks"`, `"digest"`, `"terms":[{"path":"/order_id"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

// TestExampleAgentRunOf: the window gets the example agent's lines with invisible characters made
// visible, and the reason a run stopped in plain words. (The Host's keeping of the lines:
// app/host_approvals_test.go.)
func TestExampleAgentRunOf(t *testing.T) {
	r := exampleAgentRunOf(app.AgentRun{Running: true, Lines: []string{"→ discover_company: done", "evil\u202etext"}})
	if !r.Running || len(r.Lines) != 2 || r.Lines[0] != "→ discover_company: done" || r.Lines[1] != "evil⟦U+202E⟧text" || r.Error != "" {
		t.Fatalf("run = %+v", r)
	}
	stopped := exampleAgentRunOf(app.AgentRun{Err: errors.New("no\u202esocket")})
	if stopped.Error != "The example agent stopped: no⟦U+202E⟧socket" || stopped.Lines == nil {
		t.Errorf("stopped run = %+v", stopped)
	}
}

// BenchmarkApprovalsList measures converting 50 items for the window against copying them
// (what the queue's own List does).
func BenchmarkApprovalsList(b *testing.B) {
	var src []approvals.Item
	for i := range 50 {
		src = append(src, sampleItem("a"+strconv.Itoa(i), "pending", t0.Add(time.Minute)))
	}
	benchratio.RunCPU(b, "convert", "copy", func(*testing.B) {
		out := make([]ApprovalItem, 0, len(src))
		for i := range src {
			out = append(out, approvalItemOf(&src[i], t0))
		}
	}, func(*testing.B) {
		_ = append([]approvals.Item(nil), src...)
	})
}
