package approvals_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestConversationOperations: an operation in a Company message goes to the same queue; a later
// message with a new revision supersedes the earlier one in the dialog; the user's approval is
// sent as a message with extensions.operations.approval (its text approves nothing) and the
// Company performs it once (Operations 4-7, spec 8.4). The conversation manager hands operations
// to the queue, which sends approvals through the manager, as the Host wires them.
func TestConversationOperations(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	m, q := f.m, f.q
	v, err := m.Start(ctx, conversation.Start{Company: f.company, Account: account, Text: "I'd like to exchange my jacket"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, pred func() bool) {
		t.Helper()
		readUntil(t, f, v.ConversationID, what, pred)
	}
	pending := func() []approvals.Item { return pendingItems(t, f) }
	waitFor("the operation in the queue", func() bool { return len(pending()) == 1 })
	if _, err := m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "Size L instead, please"}); err != nil {
		t.Fatal(err)
	}
	waitFor("the new revision", func() bool { p := pending(); return len(p) == 1 && p[0].Previous != nil })
	it := pending()[0]
	if it.Interface != approvals.InterfaceConversation || it.Request.Conversation != v.ConversationID || it.Changes == nil || !it.Changes.Any() {
		t.Fatalf("item = %+v", it)
	}
	if !strings.Contains(it.Current.SummaryText, "(L)") {
		t.Fatalf("the dialog shows %q, not the newer revision", it.Current.SummaryText)
	}
	o, err := q.Approve(ctx, it.ID, it.Current.Revision, it.Current.Digest)
	if err != nil || o.Status != approvals.StatusDone {
		t.Fatalf("approve = %+v, %v", o, err)
	}
	if n := approvalMessages(f, v.ConversationID); n != 1 {
		t.Fatalf("%d approval messages sent, want 1", n)
	}
	// A retry of the same approval (CheckOutcome on a done item changes nothing; a Recover of
	// an outcome_unknown one would send the same message ID): the ledger has one entry.
	waitFor("the confirmation", func() bool {
		_, es, _ := m.Get(ctx, f.company, v.ConversationID)
		return slices.ContainsFunc(es, func(e conversation.Entry) bool { return strings.Contains(e.Text, "Exchange confirmed") })
	})
	if l := f.s.Ledger(); len(l) != 1 || l[0].Interface != refcompany.InterfaceConversation {
		t.Fatalf("ledger = %+v", l)
	}
}

// readUntil reads the conversation until pred holds, failing the test after 10 s.
func readUntil(t *testing.T, f *fixture, id, what string, pred func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !pred() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
		if _, err := f.m.Read(context.Background(), f.company, id, time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// pendingItems are the items waiting for the user's decision.
func pendingItems(t *testing.T, f *fixture) []approvals.Item {
	t.Helper()
	items, err := f.q.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(items, func(it approvals.Item) bool { return it.State != string(operations.StatePending) })
}

// approvalMessages counts the messages of the conversation that carried an approval.
func approvalMessages(f *fixture, id string) int {
	n := 0
	for _, r := range f.s.RequestsTo(refcompany.ShopHost, "/poppy/conversations/"+id+"/messages") {
		if strings.Contains(string(r.Body), `"approval"`) {
			n++
		}
	}
	return n
}
