package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestNothingVisibleHoldsSecrets collects everything Poppydesk could hand to the window or the
// model (results, prompts, flows as JSON and through fmt, statuses, errors, logs) and checks
// that no token, code, verifier, device code, assertion or DPoP proof appears in it (spec 10.2).
func TestNothingVisibleHoldsSecrets(t *testing.T) {
	f := newFixture(t, fixtureOpts{dpop: true, fakeTime: true})
	ctx := context.Background()
	var visible []any

	flow, err := f.c.StartDirect(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	visible = append(visible, flow, fmt.Sprintf("%v %+v %#v", flow, flow, flow))
	_, _, page := loopback(t, f.browser(t, flow.URL, "approve", []string{"orders:read"}))
	res, err := flow.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	visible = append(visible, res, page)

	dflow, err := f.c.StartDevice(ctx, oauth.SignInRequest{Company: f.co, Account: "work", Scopes: []string{"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	visible = append(visible, dflow, dflow.Prompt, fmt.Sprintf("%v %+v %#v", dflow, dflow, dflow))
	f.onSleep = func(n int) {
		if n == 1 {
			f.approveOnPage(t, dflow.Prompt.VerificationURIComplete, dflow.Prompt.UserCode, "approve", []string{"orders:read"})
		}
	}
	dres, err := dflow.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := f.c.AccessToken(ctx, f.co, "personal", f.s.MCPURL())
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.c.Status(ctx, f.co.Identifier, "personal")
	accts, _ := f.c.Accounts(ctx, f.co.Identifier)
	visible = append(visible, dres, st, accts, fmt.Sprintf("%v %+v %#v", cred, cred, cred))
	f.s.SetFault(refcompany.FaultRefreshRotation, true)
	_, rerr := f.c.Refresh(ctx, f.co, "work", "")
	visible = append(visible, rerr.Error(), f.logs.String())

	var secrets []string
	for _, acct := range []string{"personal"} {
		for _, tk := range f.bundle(t, acct).Tokens {
			secrets = append(secrets, tk.AccessToken, tk.RefreshToken)
		}
	}
	secrets = append(secrets, cred.Token())
	for _, r := range f.s.RequestsTo(refcompany.AuthHost, "") {
		form := formOf(t, r)
		for _, k := range []string{"code", "code_verifier", "device_code", "client_assertion", "refresh_token", "token"} {
			if v := form.Get(k); v != "" {
				secrets = append(secrets, v)
			}
		}
		if p := r.Header.Get("DPoP"); p != "" {
			secrets = append(secrets, p)
		}
	}
	if len(secrets) < 10 {
		t.Fatalf("only %d secrets collected; the test would prove nothing", len(secrets))
	}
	var all strings.Builder
	for _, v := range visible {
		if s, ok := v.(string); ok {
			all.WriteString(s)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		fmt.Fprintf(&all, "%v %+v", v, v)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(all.String(), s) {
			t.Errorf("a secret (%.6s…) is visible to the window or model", s)
		}
	}
}
