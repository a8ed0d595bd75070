package refcompany

import "testing"

// TestForgetFinished: forgetting a finished order drops its operation, its ledger entry and the
// approvals received for it, and keeps another order's.
func TestForgetFinished(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := s.ops()
	c := caller{ClientID: "client", UserID: "user", SID: "sid", Account: DefaultAccount}
	ops := map[string]string{} // order → operation ID
	for _, order := range []string{"ord_a", "ord_b"} {
		s.AddOrder("", order, "stormline-m")
		ask := exchangeAsk{OrderID: order, ItemID: order + "_item0", ReplacementSKU: "stormline-insulated-m"}
		first := st.exchange(c, InterfaceAPI, ask, nil)
		if first.kind != outNeedApproval {
			t.Fatalf("first answer for %s: %+v", order, first)
		}
		for range 2 {
			if o := st.exchange(c, InterfaceAPI, ask, &approvalRef{first.op.OperationID, first.op.Revision}); o.kind != outPerformed && o.kind != outReplay {
				t.Fatalf("approved answer for %s: %+v", order, o)
			}
		}
		ops[order] = first.op.OperationID
	}
	if len(s.ApprovalsReceived()) != 4 || len(s.Ledger()) != 2 {
		t.Fatalf("before: %d received, %d in the ledger", len(s.ApprovalsReceived()), len(s.Ledger()))
	}
	// The order, its operation, its ledger entry and its two received approvals.
	if n := s.ForgetFinished("ord_a"); n != 5 {
		t.Fatalf("ForgetFinished = %d, want 5", n)
	}
	for _, r := range s.ApprovalsReceived() {
		if r.OperationID != ops["ord_b"] {
			t.Fatalf("kept %+v of the forgotten order", r)
		}
	}
	if got := len(s.ApprovalsReceived()); got != 2 {
		t.Fatalf("%d received kept, want ord_b's 2", got)
	}
	if l := s.Ledger(); len(l) != 1 || l[0].OrderID != "ord_b" {
		t.Fatalf("ledger after: %+v", l)
	}
}
