package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestRevisionFromAConversationIsApprovedThere: an exchange asked for through the API, whose
// new terms then come in a conversation (the user asks the Company's agent for size L), is
// approved where its current revision came from: in the conversation (Operations 6), and the
// Company performs the revision shown.
func TestRevisionFromAConversationIsApprovedThere(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Demo: true})
	a := f.Fronts().Approvals
	demo, _ := f.Host.Demo()
	if _, err := a.StartDemoExchange("api"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fronts().Conversations.Start(demo.Identifier, "Could I get the jacket on order ord_7Hk2 in size L instead?"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		items, err := a.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == 1 && items[0].Decidable && strings.Contains(items[0].SummaryText, "(L)") {
			it, err := a.Get(items[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			out, err := a.Approve(it.ID, it.Current.Revision, it.Current.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != "done" {
				t.Fatalf("Approve = %+v, want done", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no revision for size L came in the conversation: %+v", items)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for len(f.Company.Ledger()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if l := f.Company.Ledger(); len(l) != 1 || l[0].ReplacementSKU != "stormline-insulated-l" {
		t.Fatalf("the Company performed %+v, want the size L exchange once", l)
	}
}
