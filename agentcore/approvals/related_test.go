package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// readCounter is the state database, counting the approvals its lists return.
type readCounter struct {
	*vault.State
	read atomic.Int64
}

func (c *readCounter) ListApprovals(ctx context.Context, states ...string) ([]store.Approval, error) {
	out, err := c.State.ListApprovals(ctx, states...)
	c.read.Add(int64(len(out)))
	return out, err
}

func (c *readCounter) ListApprovalsPage(ctx context.Context, q store.ApprovalQuery) ([]store.Approval, error) {
	out, err := c.State.ListApprovalsPage(ctx, q)
	c.read.Add(int64(len(out)))
	return out, err
}

// TestProposeReadsItsOwnHistory: proposing an operation and approving it read the queue's active
// approvals and the finished ones of that operation, not every finished approval (Operations 3
// needs only those), so their cost does not grow with the history: with 200 succeeded approvals
// of other operations at the same Company, the proposal and the approval read fewer than 10.
func TestProposeReadsItsOwnHistory(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	at := f.clk.Now().Add(-time.Hour)
	for i := range 200 {
		a := store.Approval{ID: fmt.Sprintf("old-%03d", i), Company: f.company, Account: account, Interface: "api",
			Request: json.RawMessage(`{}`), State: "succeeded", Created: at, Updated: at}
		op := json.RawMessage(fmt.Sprintf(`{"operation":{"operation_id":"op_old_%03d","revision":"1"},"request":{}}`, i))
		if err := f.store.CreateApproval(ctx, a, store.Revision{Revision: 1, Operation: op, Received: at}); err != nil {
			t.Fatal(err)
		}
	}
	counted := &readCounter{State: f.store}
	q, err := approvals.New(approvals.Config{Engine: f.e, Store: counted, Now: f.clk.Now, Sleep: f.sleep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	out, err := q.CallAPI(ctx, f.exchange("stormline-insulated-m", nil))
	if err != nil || out.Status != approvals.StatusWaitingForUser {
		t.Fatalf("the exchange: %+v, %v", out, err)
	}
	if n := counted.read.Load(); n >= 10 {
		t.Fatalf("proposing read %d approvals, want fewer than 10 (200 finished ones are of other operations)", n)
	}
	it, err := q.Get(ctx, out.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	counted.read.Store(0)
	if res, err := q.Approve(ctx, it.ID, it.Current.Revision, it.Current.Digest); err != nil || res.Status != approvals.StatusDone {
		t.Fatalf("Approve = %+v, %v", res, err)
	}
	if n := counted.read.Load(); n >= 10 {
		t.Fatalf("approving read %d approvals, want fewer than 10", n)
	}
	// The store finds the approval by the operation in the queue's record of it.
	done, err := counted.ListApprovalsPage(ctx, store.ApprovalQuery{States: []string{"succeeded"}, Company: f.company, OperationID: it.Current.OperationID, Limit: 5})
	if err != nil || len(done) != 1 || done[0].ID != it.ID {
		t.Fatalf("the succeeded approvals of %s: %+v, %v; want %s", it.Current.OperationID, done, err, it.ID)
	}
}
