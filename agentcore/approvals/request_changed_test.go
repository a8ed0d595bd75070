package approvals_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// sameOperationCompany makes the reference Company answer the model's next exchange request
// (without an approval) with exactly the approval_required response it sent before, byte for
// byte: the same operation (operation_id, revision, summary, terms, expiry) for another body. A
// Company may do this when it keys operations on the action and ignores what else changed. It
// returns the function that gives the shop back to the reference Company.
func sameOperationCompany(t *testing.T, f *fixture, answer []byte) (restore func()) {
	t.Helper()
	var once sync.Once
	f.s.AddHost(refcompany.ShopHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/orders/ord_7Hk2/exchanges" || r.Header.Get("Poppy-Approval") != "" {
			t.Errorf("unexpected request to the stand-in Company: %s %s", r.Method, r.URL.Path)
			http.Error(w, "not expected", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		w.Write(answer)
	}))
	return func() { once.Do(func() { f.s.AddHost(refcompany.ShopHost, nil) }) }
}

// TestApprovalNamesTheRequestSeen: the model repeats a call with another body and the Company
// answers with the same operation. The digest the window got for request A covers A, so approving
// with it is refused and nothing is sent; the item warns that the request changed, and approving
// with the new digest sends B, exactly (docs/DESIGN.md invariant 2; Operations 5, 6).
func TestApprovalNamesTheRequestSeen(t *testing.T) {
	tests := []struct {
		name string
		b    func(f *fixture) approvals.APICall
		// performed: the Company performs B (it asks the same action); otherwise B asks for
		// another replacement, which the Company answers with a new revision (check 3).
		performed bool
	}{
		{name: "another replacement", b: func(f *fixture) approvals.APICall { return f.exchange("stormline-insulated-l", nil) }},
		{name: "an extra body member", performed: true, b: func(f *fixture) approvals.APICall {
			c := f.exchange("stormline-insulated-m", nil)
			c.Input.Body = []byte(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","gift_note":"from the model"}`)
			return c
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			ctx := context.Background()
			id, seen, raw := askAndCapture(t, f, f.exchange("stormline-insulated-m", nil))
			restore := sameOperationCompany(t, f, raw)
			b := tc.b(f)
			o, err := f.q.CallAPI(ctx, b)
			restore()
			if checkWaiting(t, o, err) != id {
				t.Fatalf("a second item for the same operation: %+v", o)
			}
			it := f.get(t, id)
			checkRequestChanged(t, it, seen, b)
			checkSeenRefused(t, f, id, seen, it)

			// The user reviewed B: approving it sends B, exactly.
			o, err = f.q.Approve(ctx, id, it.Current.Revision, it.Current.Digest)
			if err != nil {
				t.Fatal(err)
			}
			reqs := f.approvalRequests()
			if len(reqs) != 1 || canonical(t, reqs[0].Body) != canonical(t, b.Input.Body) {
				t.Fatalf("approval requests = %d, body %q, want B %s", len(reqs), firstBody(reqs), b.Input.Body)
			}
			want, wantLedger := approvals.StatusWaitingForUser, 0
			if tc.performed {
				want, wantLedger = approvals.StatusDone, 1
			}
			// B asks another exchange than the revision the Company issued for A: the Company
			// does not perform it and asks again (Operations 6 check 3).
			if o.Status != want || len(f.s.Ledger()) != wantLedger {
				t.Fatalf("outcome = %+v, ledger %v", o, f.s.Ledger())
			}
		})
	}
}

// askAndCapture makes the model's call a, which the Company answers with an operation, and
// returns the item, the dialog the user saw for it, and the Company's answer byte for byte.
func askAndCapture(t *testing.T, f *fixture, a approvals.APICall) (string, *approvals.Item, []byte) {
	t.Helper()
	var mu sync.Mutex
	var answer []byte
	f.onExchange = func(ex transport.Exchange) {
		if ex.Status == http.StatusForbidden && strings.HasSuffix(ex.URL, "/exchanges") {
			mu.Lock()
			answer = append([]byte(nil), ex.ResponseBody...)
			mu.Unlock()
		}
	}
	id := mustWaiting(t)(f.q.CallAPI(context.Background(), a))
	seen := f.get(t, id) // the dialog shows request A with this digest
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(answer, []byte(seen.Current.OperationID)) {
		t.Fatalf("the Company's approval_required answer was not captured: %q", answer)
	}
	return id, seen, answer
}

// checkRequestChanged: the item keeps the Company's operation, shows request B with a new
// digest, the earlier one as what the user saw, and the request_changed warning first.
func checkRequestChanged(t *testing.T, it, seen *approvals.Item, b approvals.APICall) {
	t.Helper()
	if it.Current.Revision != seen.Current.Revision || it.Current.OperationID != seen.Current.OperationID || it.Changes == nil || it.Changes.Any() {
		t.Fatalf("the Company's operation should be unchanged: current %+v changes %+v", it.Current, it.Changes)
	}
	if it.Current.Digest == seen.Current.Digest {
		t.Fatal("the digest did not change although the request did")
	}
	if it.Previous == nil || it.Previous.Digest != seen.Current.Digest {
		t.Fatalf("previous = %+v, want the digest the user saw", it.Previous)
	}
	if len(it.Warnings) == 0 || it.Warnings[0].Code != approvals.WarnRequestChanged || !strings.Contains(it.Warnings[0].Message, "request changed") {
		t.Fatalf("warnings = %+v, want %s first", it.Warnings, approvals.WarnRequestChanged)
	}
	if !bytes.Equal(it.Request.Body, b.Input.Body) {
		t.Fatalf("request shown = %s, want B %s", it.Request.Body, b.Input.Body)
	}
}

// checkSeenRefused: the approval of what the user saw (A), and of the operation alone, are
// refused, and nothing is sent.
func checkSeenRefused(t *testing.T, f *fixture, id string, seen, it *approvals.Item) {
	t.Helper()
	ctx := context.Background()
	_, err := f.q.Approve(ctx, id, seen.Current.Revision, seen.Current.Digest)
	if !errors.Is(err, approvals.ErrRequestChanged) || !errors.Is(err, operations.ErrDigestMismatch) {
		t.Fatalf("approve with A's digest: err = %v, want ErrRequestChanged", err)
	}
	if n := len(f.approvalRequests()); n != 0 || len(f.s.Ledger()) != 0 {
		t.Fatalf("%d approval requests, ledger %v after a refused approval", n, f.s.Ledger())
	}
	if st := f.get(t, id).State; st != "pending" {
		t.Fatalf("state = %s, want pending", st)
	}
	op := &operations.Operation{OperationID: it.Current.OperationID, Revision: it.Current.Revision, Summary: it.Current.SummaryText,
		Terms: it.Current.Terms, ExpiresAt: it.Current.ExpiresAt}
	if _, err := f.q.Approve(ctx, id, it.Current.Revision, operations.Digest(op)); !errors.Is(err, operations.ErrDigestMismatch) {
		t.Fatalf("approve with the operation's digest alone: err = %v", err)
	}
}

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("body %q: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func firstBody(reqs []refcompany.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return string(reqs[0].Body)
}
