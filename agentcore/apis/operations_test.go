package apis_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestExchangeApprovedOnce: approval_required → the same request with Poppy-Approval is performed
// once; repeats get the first response and perform nothing (Operations 4, 6, 7).
func TestExchangeApprovedOnce(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.session(t, "alice", opsV2))
	d := f.openAPI(t, c)
	ctx := context.Background()
	first, err := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
	op := approvalRequired(t, first)
	if pe := (*transport.ProtocolError)(nil); !errors.As(err, &pe) || pe.Code != "approval_required" {
		t.Fatalf("err = %v", err)
	}
	if op.Terms["replacement_sku"] != "stormline-insulated-m" || !strings.Contains(op.Summary, "$70.00 more") || len(f.s.Ledger()) != 0 {
		t.Fatalf("operation %+v, ledger %v", op, f.s.Ledger())
	}
	approved := first.Request.WithApproval(approvalHeader(t, op.OperationID, op.Revision))
	if approved.Header.Get("Idempotency-Key") == first.Request.Header.Get("Idempotency-Key") {
		t.Fatal("the approved request reused the first Idempotency-Key")
	}
	res, err := c.Send(ctx, approved)
	if err != nil || res.Status != http.StatusCreated || !strings.Contains(string(res.Body), `"status":"confirmed"`) {
		t.Fatalf("res %+v err %v", res, err)
	}
	l := f.s.Ledger()
	if len(l) != 1 || l[0].OperationID != op.OperationID || l[0].Revision != op.Revision || l[0].Interface != refcompany.InterfaceAPI || l[0].Account != refcompany.DefaultAccount {
		t.Fatalf("ledger = %+v", l)
	}
	for i := range 2 {
		again, err := c.Send(ctx, approved.Again(nil, i == 0))
		if err != nil || again.Status != http.StatusCreated || string(again.Body) != string(res.Body) {
			t.Fatalf("repeat %d: %+v %v", i, again, err)
		}
	}
	if n := len(f.s.Ledger()); n != 1 {
		t.Fatalf("ledger has %d entries after repeats", n)
	}
	sent := f.s.RequestsTo(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges")
	if sent[1].Header.Get("Poppy-Approval") == "" || string(sent[1].Body) != string(sent[0].Body) || sent[0].Header.Get("Poppy-Approval") != "" {
		t.Fatal("the approved request is not the same request with Poppy-Approval")
	}
	if sent[2].Header.Get("Idempotency-Key") == "" || sent[3].Header.Get("Idempotency-Key") != "" {
		t.Fatal("Again without a new key still sent one")
	}
	// A new request for the same item, now exchanged, is refused by the order itself.
	res, err = c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
	if res == nil || res.Status != http.StatusConflict || err == nil {
		t.Fatalf("after the exchange: %+v %v", res, err)
	}
}

// TestApprovalRefused: approvals that fail "What the Company checks" perform nothing and never
// get the revision they name back (Operations 3 "Who can approve it", 6).
func TestApprovalRefused(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, f *fixture) (*apis.Client, string) // client and token of the approving request
		mutate func(op *operation)
		sku    string
		before func(f *fixture)
		status int
	}{
		{name: "unknown revision", mutate: func(op *operation) { op.Revision = "1790000000-forgedRev" }, status: 403},
		{name: "unknown operation", mutate: func(op *operation) { op.OperationID = "exc_forged" }, status: 403},
		{name: "expired", before: func(f *fixture) { f.clk.Advance(refcompany.DefaultOperationTTL + time.Minute) }, status: 403},
		{name: "another request (other sku)", sku: "stormline-insulated-l", status: 403},
		{name: "another Personal Agent, same account", setup: func(t *testing.T, f *fixture) (*apis.Client, string) {
			cid, m2 := f.otherAgent(t)
			f.s.AddAccessToken("tok-other-agent", cid, "orders:read", "orders:write")
			s2, err := m2.Open(context.Background(), f.company.Identifier, session.Options{Account: "alice", Version: f.company.Version, Extensions: opsV2})
			if err != nil {
				t.Fatal(err)
			}
			return f.client(t, s2), "tok-other-agent"
		}, status: 403},
		{name: "signed-out Session of the same agent and User: challenge", setup: func(t *testing.T, f *fixture) (*apis.Client, string) {
			return f.client(t, f.session(t, "", opsV2)), ""
		}, status: 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			c := f.client(t, f.session(t, "alice", opsV2))
			d := f.openAPI(t, c)
			ctx := context.Background()
			first, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
			op := approvalRequired(t, first)
			named := op
			if tc.mutate != nil {
				tc.mutate(&named)
			}
			if tc.before != nil {
				tc.before(f)
			}
			ac, tok := c, tokenRW
			if tc.setup != nil {
				ac, tok = tc.setup(t, f)
			}
			sku := "stormline-insulated-m"
			if tc.sku != "" {
				sku = tc.sku
			}
			req := exchangeRequest(t, d, tok, sku).WithApproval(approvalHeader(t, named.OperationID, named.Revision))
			res, err := ac.Send(ctx, req)
			if res == nil || res.Status != tc.status || err == nil {
				t.Fatalf("res %+v err %v", res, err)
			}
			if tc.status == http.StatusForbidden {
				again := approvalRequired(t, res)
				if again.Revision == named.Revision || again.Revision == op.Revision {
					t.Fatalf("answered with a revision already named: %s", again.Revision)
				}
			}
			if n := len(f.s.Ledger()); n != 0 {
				t.Fatalf("performed %d times", n)
			}
		})
	}
}

// TestApproveInAnotherSession: a signed-in operation belongs to the account: another Session of
// the same Personal Agent and User, signed in to it, can approve it (Operations 3).
func TestApproveInAnotherSession(t *testing.T) {
	f := newFixture(t)
	s1 := f.session(t, "alice", opsV2)
	c := f.client(t, s1)
	d := f.openAPI(t, c)
	ctx := context.Background()
	first, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
	op := approvalRequired(t, first)
	s2, err := f.agent.Sessions.Renew(ctx, s1)
	if err != nil || s2.SID == s1.SID {
		t.Fatalf("renew: %v", err)
	}
	res, err := f.client(t, s2).Send(ctx, first.Request.WithApproval(approvalHeader(t, op.OperationID, op.Revision)))
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("res %+v err %v", res, err)
	}
	if l := f.s.Ledger(); len(l) != 1 || l[0].SID != s2.SID {
		t.Fatalf("ledger = %+v", l)
	}
}

// TestOperationFaults: the reference Company's operation faults, seen through the engine side.
func TestOperationFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("lose-response-after-perform: the retry gets the first response", func(t *testing.T) {
		f := newFixture(t, refcompany.FaultLoseResponse)
		c := f.client(t, f.session(t, "alice", opsV2))
		d := f.openAPI(t, c)
		first, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
		op := approvalRequired(t, first)
		approved := first.Request.WithApproval(approvalHeader(t, op.OperationID, op.Revision))
		if res, err := c.Send(ctx, approved); err == nil {
			t.Fatalf("the lost response arrived: %+v", res)
		}
		res, err := c.Send(ctx, approved)
		if err != nil || res.Status != http.StatusCreated || !strings.Contains(string(res.Body), op.OperationID) {
			t.Fatalf("retry: %+v %v", res, err)
		}
		if n := len(f.s.Ledger()); n != 1 {
			t.Fatalf("ledger has %d entries", n)
		}
	})
	t.Run("in-progress-503: 503 with Retry-After, then performed once", func(t *testing.T) {
		f := newFixture(t, refcompany.FaultInProgress503)
		f.s.SetInProgressTries(2)
		c := f.client(t, f.session(t, "alice", opsV2))
		d := f.openAPI(t, c)
		first, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
		op := approvalRequired(t, first)
		approved := first.Request.WithApproval(approvalHeader(t, op.OperationID, op.Revision))
		for i := range 2 {
			res, err := c.Send(ctx, approved)
			var pe *transport.ProtocolError
			if res == nil || res.Status != http.StatusServiceUnavailable || !errors.As(err, &pe) || pe.RetryAfter != time.Second {
				t.Fatalf("try %d: %+v %v", i, res, err)
			}
			if len(f.s.Ledger()) != 0 {
				t.Fatal("performed while in progress")
			}
		}
		res, err := c.Send(ctx, approved)
		if err != nil || res.Status != http.StatusCreated || len(f.s.Ledger()) != 1 {
			t.Fatalf("third try: %+v %v", res, err)
		}
	})
	t.Run("new-revision-on-retry", func(t *testing.T) {
		f := newFixture(t, refcompany.FaultNewRevisionOnRetry)
		c := f.client(t, f.session(t, "alice", opsV2))
		d := f.openAPI(t, c)
		first, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
		op := approvalRequired(t, first)
		res, _ := c.Send(ctx, first.Request.WithApproval(approvalHeader(t, op.OperationID, op.Revision)))
		again := approvalRequired(t, res)
		if again.OperationID != op.OperationID || again.Revision == op.Revision || len(f.s.Ledger()) != 0 {
			t.Fatalf("again = %+v", again)
		}
	})
	t.Run("reused-revision: new terms under the old revision", func(t *testing.T) {
		f := newFixture(t, refcompany.FaultReusedRevision)
		c := f.client(t, f.session(t, "alice", opsV2))
		d := f.openAPI(t, c)
		r1, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
		r2, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-l"))
		a, b := approvalRequired(t, r1), approvalRequired(t, r2)
		if a.OperationID != b.OperationID || a.Revision != b.Revision || a.Terms["replacement_sku"] == b.Terms["replacement_sku"] {
			t.Fatalf("a = %+v b = %+v", a, b)
		}
	})
	t.Run("terms-mismatch", func(t *testing.T) {
		f := newFixture(t, refcompany.FaultTermsMismatch)
		c := f.client(t, f.session(t, "alice", opsV2))
		d := f.openAPI(t, c)
		r, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
		op := approvalRequired(t, r)
		if op.Terms["replacement_sku"] == "stormline-insulated-m" || !strings.Contains(op.Summary, "Insulated Jacket (M)") {
			t.Fatalf("op = %+v", op)
		}
	})
	t.Run("summary-hostile", func(t *testing.T) {
		f := newFixture(t, refcompany.FaultSummaryHostile)
		c := f.client(t, f.session(t, "alice", opsV2))
		d := f.openAPI(t, c)
		r, _ := c.Send(ctx, exchangeRequest(t, d, tokenRW, "stormline-insulated-m"))
		op := approvalRequired(t, r)
		for _, want := range []string{"](https://", "![", "<script>", "<img", "\u202E"} {
			if !strings.Contains(op.Summary, want) {
				t.Fatalf("summary lacks %q", want)
			}
		}
		if len(op.Summary) < 10000 {
			t.Fatalf("summary is only %d bytes", len(op.Summary))
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal(r.Body, &raw) != nil {
			t.Fatal("hostile body is not JSON")
		}
	})
}
