package refcompany

import (
	"slices"
	"testing"
)

// TestNoReplay: with replay (the default) a repeated approval gets the first response and the
// ledger has the operation once (Operations 7); with SetNoReplay every approved request is
// performed again. ApprovalsReceived lists each request that carried the approval either way.
func TestNoReplay(t *testing.T) {
	for _, tc := range []struct {
		noReplay   bool
		wantLedger int
		want       []string
	}{
		{false, 1, []string{ReceivedPerformed, ReceivedReplayed, ReceivedReplayed}},
		{true, 3, []string{ReceivedPerformed, ReceivedPerformed, ReceivedPerformed}},
	} {
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.AddOrder("", "ord_nr", "stormline-m")
		s.SetNoReplay(tc.noReplay)
		var hooked []string
		s.OnApproval(func(r ApprovalReceived) { hooked = append(hooked, r.Result) })
		st := s.ops()
		c := caller{ClientID: "client", UserID: "user", SID: "sid", Account: DefaultAccount}
		ask := exchangeAsk{OrderID: "ord_nr", ItemID: "ord_nr_item0", ReplacementSKU: "stormline-insulated-m"}
		first := st.exchange(c, InterfaceAPI, ask, nil)
		if first.kind != outNeedApproval {
			t.Fatalf("first answer %+v", first)
		}
		for range 3 {
			if o := st.exchange(c, InterfaceAPI, ask, &approvalRef{first.op.OperationID, first.op.Revision}); o.kind != outPerformed && o.kind != outReplay {
				t.Fatalf("no replay %v: answer %+v", tc.noReplay, o)
			}
		}
		var got []string
		for _, r := range s.ApprovalsReceived() {
			if r.OperationID != first.op.OperationID || r.Revision != first.op.Revision {
				t.Fatalf("received %+v", r)
			}
			got = append(got, r.Result)
		}
		if n := len(s.Ledger()); n != tc.wantLedger || !slices.Equal(got, tc.want) || !slices.Equal(hooked, tc.want) {
			t.Fatalf("no replay %v: ledger %d, received %v, hook saw %v", tc.noReplay, n, got, hooked)
		}
	}
}
