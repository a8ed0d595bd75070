package app

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
)

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

// listQueue serves fixed items: the data side of the queue, for the adapter's conversions.
// The real queue is exercised end to end in e2e/approvals_test.go.
type listQueue struct {
	mu    sync.Mutex
	items []approvals.Item
}

func (q *listQueue) List(context.Context) ([]approvals.Item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]approvals.Item(nil), q.items...), nil
}
func (q *listQueue) Get(_ context.Context, id string) (*approvals.Item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.items {
		if q.items[i].ID == id {
			it := q.items[i]
			return &it, nil
		}
	}
	return nil, errors.New("no approval " + id)
}
func (q *listQueue) Approve(context.Context, string, string, string) (*approvals.Outcome, error) {
	return nil, errors.New("not used")
}
func (q *listQueue) Decline(context.Context, string, string) error { return errors.New("not used") }
func (q *listQueue) CheckOutcome(context.Context, string) (*approvals.Outcome, error) {
	return nil, errors.New("not used")
}

func TestApprovalsConvert(t *testing.T) {
	q := &listQueue{items: []approvals.Item{
		sampleItem("a1", "pending", t0.Add(time.Minute)),
		sampleItem("a2", "pending", t0.Add(-time.Second)), // expired: not decidable
		sampleItem("a3", "succeeded", t0.Add(time.Minute)),
	}}
	a := NewApprovals(ApprovalsConfig{Queue: q, Now: func() time.Time { return t0 }})
	items, err := a.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := []bool{items[0].Decidable, items[1].Decidable, items[2].Decidable}; !reflect.DeepEqual(got, []bool{true, false, false}) {
		t.Errorf("decidable = %v", got)
	}
	if n := ApprovalsCounter(a)(SectionApprovals); n != 1 {
		t.Errorf("badge count = %d, want 1", n)
	}
	if n := ApprovalsCounter(a)(SectionInspector); n != 0 {
		t.Errorf("another section's count = %d", n)
	}
	it := items[0]
	if it.CompanyName != "Poppy⟦U+202E⟧ Outfitters" {
		t.Errorf("CompanyName = %q: invisible characters must be made visible", it.CompanyName)
	}
	if it.Current.ExpiresAt != "2026-10-08T19:01:00Z" || it.Created != "2026-10-08T19:00:00Z" {
		t.Errorf("times = %q, %q", it.Current.ExpiresAt, it.Created)
	}
	if it.Current.Digest == "" || it.Current.Digest != q.items[0].Current.Digest {
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

func TestApprovalsWithoutQueue(t *testing.T) {
	a := NewApprovals(ApprovalsConfig{Problem: "The system keyring is unavailable: start a Secret Service."})
	st := a.Status()
	if st.Available || st.Problem == "" || st.Demo {
		t.Errorf("status = %+v", st)
	}
	if items, err := a.List(); err != nil || len(items) != 0 {
		t.Errorf("List = %v, %v; want empty", items, err)
	}
	if _, err := a.Approve("a", "r", "d"); err == nil || !strings.Contains(err.Error(), "Secret Service") {
		t.Errorf("Approve error = %v", err)
	}
	if err := a.Decline("a", "r"); err == nil {
		t.Error("Decline without a queue succeeded")
	}
	if _, err := a.StartDemoExchange("api"); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Errorf("StartDemoExchange outside demo = %v", err)
	}
}

func TestStartDemoExchange(t *testing.T) {
	var got []string
	a := NewApprovals(ApprovalsConfig{Demo: func(_ context.Context, kind string) (string, error) { got = append(got, kind); return "asked", nil }})
	for _, tc := range []struct {
		kind    string
		wantErr bool
	}{{"api", false}, {"mcp", false}, {"approve", true}, {"", true}} {
		msg, err := a.StartDemoExchange(tc.kind)
		if (err != nil) != tc.wantErr || (err == nil && msg != "asked") {
			t.Errorf("StartDemoExchange(%q) = %q, %v", tc.kind, msg, err)
		}
	}
	if !reflect.DeepEqual(got, []string{"api", "mcp"}) {
		t.Errorf("demo calls = %v", got)
	}
}

type recordEmitter struct {
	mu     sync.Mutex
	events []string
}

func (r *recordEmitter) Emit(name string, data ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(data)
	r.events = append(r.events, name+" "+string(b))
}

func (r *recordEmitter) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e == s {
			return true
		}
	}
	return false
}

func TestApprovalChanges(t *testing.T) {
	q := &listQueue{items: []approvals.Item{sampleItem("a1", "pending", t0.Add(time.Minute))}}
	em := &recordEmitter{}
	notes := make(chan [2]string, 4)
	a := NewApprovals(ApprovalsConfig{Queue: q, Emitter: em, Now: func() time.Time { return t0 },
		Notifier: NotifierFunc(func(title, body string) { notes <- [2]string{title, body} })})
	on := ApprovalChanges(a)
	on(approvals.Event{Kind: "created", ApprovalID: "a1", State: "pending"})
	if !em.has(`approvals:changed [{"kind":"created","id":"a1","state":"pending"}]`) {
		t.Errorf("events = %v", em.events)
	}
	select {
	case n := <-notes:
		if n[0] != "Approval needed: Poppy⟦U+202E⟧ Outfitters" || !strings.Contains(n[1], "Open Poppydesk") {
			t.Errorf("notification = %q", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification for a new approval")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !em.has("shell:sections null") {
		if time.Now().After(deadline) {
			t.Fatalf("the badge was not refreshed: %v", em.events)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := ApprovalsCounter(a)(SectionApprovals); n != 1 {
		t.Errorf("count = %d", n)
	}
	// A state change refreshes the badge but shows no notification.
	on(approvals.Event{Kind: "state", ApprovalID: "a1", State: "succeeded"})
	select {
	case n := <-notes:
		t.Errorf("notification for a state change: %q", n)
	case <-time.After(100 * time.Millisecond):
	}
}

// BenchmarkApprovalsList measures converting 50 items for the window against copying them
// (the queue's own list is the baseline).
func BenchmarkApprovalsList(b *testing.B) {
	q := &listQueue{}
	for i := range 50 {
		q.items = append(q.items, sampleItem("a"+strconv.Itoa(i), "pending", t0.Add(time.Minute)))
	}
	a := NewApprovals(ApprovalsConfig{Queue: q, Now: func() time.Time { return t0 }})
	b.Run("baseline queue List", func(b *testing.B) {
		for b.Loop() {
			_, _ = q.List(context.Background())
		}
	})
	b.Run("Approvals.List", func(b *testing.B) {
		for b.Loop() {
			_, _ = a.List()
		}
	})
}

// RunExampleAgent: demo only, one run at a time, the agent's lines (made visible) in the
// transcript and events, and its failure as the run's error.
func TestRunExampleAgent(t *testing.T) {
	if err := NewApprovals(ApprovalsConfig{}).RunExampleAgent(); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Fatalf("outside demo mode: %v", err)
	}
	cases := []struct {
		name    string
		fail    error
		wantErr string
	}{
		{"finishes", nil, ""},
		{"fails", errors.New("no socket"), "The example agent stopped: no socket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var kinds []string
			a := NewApprovals(ApprovalsConfig{Demo: func(ctx context.Context, kind string) (string, error) {
				kinds = append(kinds, kind)
				say := AgentOutput(ctx)
				say("→ discover_company: done\n")
				say("evil\u202etext")
				<-release
				return "", tc.fail
			}})
			if err := a.RunExampleAgent(); err != nil {
				t.Fatal(err)
			}
			if err := a.RunExampleAgent(); err == nil || !strings.Contains(err.Error(), "already running") {
				t.Fatalf("second run: %v", err)
			}
			close(release)
			var r ExampleAgentRun
			for i := 0; i < 500; i++ {
				if r = a.ExampleAgent(); !r.Running {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			if r.Running || len(r.Lines) != 2 || r.Lines[0] != "→ discover_company: done" || strings.ContainsRune(r.Lines[1], '\u202e') || r.Error != tc.wantErr {
				t.Fatalf("run = %+v", r)
			}
			if len(kinds) != 1 || kinds[0] != DemoKindAgent {
				t.Fatalf("demo kinds = %v", kinds)
			}
		})
	}
}
