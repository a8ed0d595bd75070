package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// exchangeOn is the model's exchange call for a fresh order made for one benchmark iteration.
func (f *fixture) exchangeOn(i int) approvals.APICall {
	order := fmt.Sprintf("ord_b%06d", i)
	f.s.AddOrder("", order, "stormline-m")
	body, _ := json.Marshal(map[string]string{"item_id": order + "_item0", "replacement_sku": "stormline-insulated-m"})
	return approvals.APICall{Company: f.company, Account: account, API: f.openapi, OperationID: "exchangeItem", Input: inputFor(order, body)}
}

// BenchmarkPlainCall is the baseline: a model call without an operation (GET listOrders) through
// the queue, on loopback TLS.
func BenchmarkPlainCall(b *testing.B) {
	f := newFixture(b, fixtureOptions{})
	ctx := context.Background()
	c := approvals.APICall{Company: f.company, Account: account, API: f.openapi, OperationID: "listOrders"}
	for b.Loop() {
		if o, err := f.q.CallAPI(ctx, c); err != nil || o.Status != approvals.StatusDone {
			b.Fatalf("%+v %v", o, err)
		}
	}
}

// BenchmarkApprovalRequired: the model's call that gets 403 approval_required, up to the pending
// item stored and OnChange emitted (ns/op, including the HTTP round trip), and the part from the
// Company's response read to OnChange ("store+emit-ns").
func BenchmarkApprovalRequired(b *testing.B) {
	f := newFixture(b, fixtureOptions{})
	ctx := context.Background()
	var respAt, total, n atomic.Int64
	f.onExchange = func(ex transport.Exchange) {
		if ex.Status == http.StatusForbidden {
			respAt.Store(time.Now().UnixNano())
		}
	}
	f.onChange = func(ev approvals.Event) {
		if ev.Kind == approvals.EventCreated {
			total.Add(time.Now().UnixNano() - respAt.Load())
			n.Add(1)
		}
	}
	i := 0
	for b.Loop() {
		b.StopTimer()
		c := f.exchangeOn(i)
		i++
		b.StartTimer()
		if o, err := f.q.CallAPI(ctx, c); err != nil || o.Status != approvals.StatusWaitingForUser {
			b.Fatalf("%+v %v", o, err)
		}
	}
	if n.Load() > 0 {
		b.ReportMetric(float64(total.Load())/float64(n.Load()), "store+emit-ns")
	}
}

// BenchmarkApproveToResponse: Approve (checks, the decision written before sending, the send, the
// Company's response, the final state written) on loopback.
func BenchmarkApproveToResponse(b *testing.B) {
	f := newFixture(b, fixtureOptions{})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		b.StopTimer()
		o, err := f.q.CallAPI(ctx, f.exchangeOn(i))
		i++
		if err != nil {
			b.Fatal(err)
		}
		it := f.get(b, o.ApprovalID)
		b.StartTimer()
		if r, err := f.q.Approve(ctx, it.ID, it.Current.Revision, it.Current.Digest); err != nil || r.Status != approvals.StatusDone {
			b.Fatalf("%+v %v", r, err)
		}
	}
}
