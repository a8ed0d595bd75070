package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestFeedbackCarriesNoHeldSecret: a feedback report (spec 9.3) whose words quote secrets
// Poppydesk holds — the tokens, User ID and keys of the sending account and of another account,
// and the root key — reaches the Company without any of them (spec 10.2), whatever their shape.
// The test takes the secrets from the keyring itself, not from the scrubber's own list.
func TestFeedbackCarriesNoHeldSecret(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	co := f.Discover(t)
	f.SignIn(t, "personal", "orders:read")
	f.SignIn(t, "work", "orders:read")
	model := f.Model(t, "feedback-test")
	// A signed request of each account opens its Session: its User ID and delegated key exist.
	for _, account := range []string{"personal", "work"} {
		res, err := model.CallTool(ctx, &mcp.CallToolParams{Name: "call_api_operation", Arguments: map[string]any{"company": co.Identifier, "account": account, "operation_id": "listOrders"}})
		if err != nil || res.IsError {
			t.Fatalf("listOrders as %s: %v %+v", account, err, res)
		}
	}
	// The model reads the orders once so that tokens exist for the API's resource too.
	if _, err := model.CallTool(ctx, &mcp.CallToolParams{Name: "call_api_operation", Arguments: map[string]any{"company": co.Identifier, "account": "personal", "operation_id": "listOrders"}}); err != nil {
		t.Fatal(err)
	}
	var quoted []string
	// The User ID and the delegated keys are in the Company's own bundle (account ""), the tokens
	// in each account's.
	for _, account := range []string{"", "personal", "work"} {
		b, err := f.Host.Secrets().LoadCompany(ctx, co.Identifier, account)
		if err != nil {
			t.Fatal(err)
		}
		quoted = append(quoted, b.UserID)
		for _, tk := range b.Tokens {
			quoted = append(quoted, tk.AccessToken, tk.RefreshToken)
		}
		for _, d := range b.Delegated {
			var k struct{ D string }
			json.Unmarshal(d.PrivateJWK, &k)
			quoted = append(quoted, k.D)
		}
	}
	root, err := f.Host.Secrets().LoadRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rk struct{ D string }
	json.Unmarshal(root.Keys[0], &rk)
	quoted = append(quoted, rk.D)
	var secrets []string
	for _, q := range quoted {
		if q != "" {
			secrets = append(secrets, q)
		}
	}
	if len(secrets) < 7 {
		t.Fatalf("only %d secrets to quote: the test would prove little", len(secrets))
	}
	desc := "The voucher page broke. It showed " + strings.Join(secrets, " and (") + ")."
	if len(desc) > 2000 {
		desc = desc[:2000]
	}
	res, err := model.CallTool(ctx, &mcp.CallToolParams{Name: "report_unsupported_task", Arguments: map[string]any{
		"company": co.Identifier, "account": "personal", "task": "Pay with a voucher", "description": desc}})
	if err != nil || res.IsError {
		t.Fatalf("report_unsupported_task: %v %+v", err, res)
	}
	got := f.Company.FeedbackReports()
	if len(got) != 1 {
		t.Fatalf("the Company received %d reports", len(got))
	}
	received := string(got[0].Body)
	if !strings.Contains(received, "The voucher page broke") {
		t.Fatalf("the report lacks its own words, so the scan below proves nothing: %s", received)
	}
	for _, s := range secrets {
		if strings.Contains(desc, s) && strings.Contains(received, s) {
			t.Errorf("the report sent to the Company quotes a secret Poppydesk holds (%d characters)", len(s))
		}
	}
}
