package apptest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault/vaulttest"
)

// A long-used Poppydesk: 200 discovered Companies, 10,000 decided approvals and 100,000 recorded
// exchanges spread over 45 days (the exchange log keeps 30 days and 200 MiB).
const (
	LongCompanies = 200
	LongApprovals = 10000
	LongExchanges = 100000
	LongSpan      = 45 * 24 * time.Hour
)

// LongHistory runs the product once for real (sign in, the model's request for the spec's jacket
// exchange, the user's approval in the window's Approvals service, so the records are the
// product's own), closes the Host and grows its state database to the scale above
// (vaulttest.Grow). The returned fixture's Host is closed; its Config opens the long history.
func LongHistory(tb testing.TB) *Fixture { return LongHistoryTimes(tb, 1) }

// LongHistoryTimes is LongHistory at times the scale: with 10, 2,000 Companies, 100,000 decided
// approvals and 1,000,000 exchanges over the same 45 days.
func LongHistoryTimes(tb testing.TB, times int) *Fixture {
	tb.Helper()
	f := Start(tb, Options{})
	f.SignIn(tb, "personal", "orders:read", "orders:write")
	co := f.Discover(tb)
	out := RequestExchange(tb, f, co, "personal")
	a := f.Fronts().Approvals
	it, err := a.Get(out.ApprovalID)
	if err != nil {
		tb.Fatal(err)
	}
	if res, err := a.Approve(it.ID, it.Current.Revision, it.Current.Digest); err != nil || res.Status != "done" {
		tb.Fatalf("Approve = %+v, %v", res, err)
	}
	if err := f.Host.Engine().FlushExchanges(context.Background()); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	if err := vaulttest.Grow(context.Background(), f.StatePath(), vaulttest.Scale{Companies: times * LongCompanies, Approvals: times * LongApprovals,
		Exchanges: times * LongExchanges, Now: f.Clock.Now(), Span: LongSpan}); err != nil {
		tb.Fatal(err)
	}
	return f
}

// StatePath is the fixture's state database.
func (f *Fixture) StatePath() string { return filepath.Join(f.Config.Paths.Data, app.StateFile) }

// RequestExchange asks for the spec's jacket exchange through co's Orders API for account, as
// the model would, and checks that it waits for the user.
func RequestExchange(tb testing.TB, f *Fixture, co *discovery.Company, account string) *approvals.Outcome {
	tb.Helper()
	var api string
	for _, a := range co.Document.APIs {
		if a.Type == "openapi" {
			api = a.URL
		}
	}
	out, err := f.Host.Queue().CallAPI(context.Background(), approvals.APICall{Company: co.Identifier, Account: account, API: api, OperationID: "exchangeItem",
		Input:  apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)},
		Intent: map[string]string{"replacement_sku": "stormline-insulated-m", "price_difference": "70.00"}})
	if err != nil || out.Status != "waiting_for_user" || out.ApprovalID == "" {
		tb.Fatalf("the exchange request: %+v, %v", out, err)
	}
	return out
}

// CatchUp opens a Host over cfg, waits until its start-up catch-up has kept the exchange log
// within its window (Host.WaitCaughtUp), and closes it: a long history's first start, after which
// a start has nothing to catch up.
func CatchUp(tb testing.TB, cfg app.Config) {
	tb.Helper()
	h := Open(tb, cfg)
	if err := h.WaitCaughtUp(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := h.CloseWithin(app.ShutdownGrace); err != nil {
		tb.Fatal(err)
	}
}
