package conformance_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// checked is a run of check against a reference Company, that Company, and the Personal Agent
// identity the run used.
type checked struct {
	rep *conformance.Report
	s   *refcompany.Server
	a   *identity.Agent
	op  identity.Operator
}

// runCheck starts the reference Company with faults (its DPoP binding on, so the nonce faults
// apply), publishes a Personal Agent identity on agent.localhost and runs check against it as a
// developer would with every action allowed: the User's browser is the reference Company's
// ApproveSignIn, and the operation is the spec's jacket exchange.
func runCheck(t *testing.T, edit func(*refcompany.Server, *conformance.Config), faults ...string) checked {
	t.Helper()
	s := poppytest.Start(t, refcompany.Options{})
	s.SetDPoP(true)
	for _, f := range faults {
		if err := s.SetAnyFault(f, true); err != nil {
			t.Fatal(err)
		}
	}
	return runCheckOn(t, s, edit, nil)
}

// runCheckOn runs check against the running reference Company s, as runCheck does, with the
// Personal Agent identity of an earlier run (prev) or one of its own.
func runCheckOn(t *testing.T, s *refcompany.Server, edit func(*refcompany.Server, *conformance.Config), prev *checked) checked {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	var a *identity.Agent
	var op identity.Operator
	if prev != nil {
		a, op = prev.a, prev.op
	} else {
		secrets := store.NewSecrets(store.NewMemoryKV())
		op = identity.NewLocalOperator(secrets, time.Now)
		var err error
		a, err = identity.New(identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json"), ClientName: "Poppydesk check"}, op, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		s.AddHost(refcompany.AgentHost, a.Handler(nil))
	}
	cfg := conformance.Config{Domain: s.Domain, Transport: s.ClientConfig(), Agent: a, Operator: op,
		ProbeURL:     s.URL(refcompany.ShopHost, "/api/products"),
		SignedInURL:  s.URL(refcompany.ShopHost, "/api/orders"),
		AllowActions: conformance.Actions,
		SignIn: func(ctx context.Context, authURL string) error {
			u, err := url.Parse(authURL)
			if err != nil {
				return err
			}
			return s.ApproveSignIn(ctx, authURL, "check@shop.example", strings.Fields(u.Query().Get("scope")))
		},
		Operation: &conformance.OperationRequest{Method: "POST", URL: s.URL(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges"),
			Body:    []byte(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`),
			Changed: []byte(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-l"}`),
			Other:   []byte(`{"item_id":"itm_9Zt","replacement_sku":"stormline-m"}`)},
		Timeout: 3 * time.Second,
		Sleep:   func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}
	if edit != nil {
		edit(s, &cfg)
	}
	rep, err := conformance.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if !slices.Contains(conformance.Rules(), r.Rule) {
			t.Errorf("the probe %q reported the rule %s, which conformance.Rules does not list", r.Probe, r.Rule)
		}
	}
	return checked{rep: rep, s: s, a: a, op: op}
}

func describe(rs []conformance.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %s %s %s (%s): %s", strings.ToUpper(r.Status), r.Rule, r.Probe, r.Section, r.Evidence)
	}
	return b.String()
}

// TestFaultFree: the reference Company without faults passes every probe, every action allowed:
// nothing fails, nothing is noted, nothing is skipped; the operation was performed once and the
// sign-in revoked at the end.
func TestFaultFree(t *testing.T) {
	c := runCheck(t, nil)
	t.Logf("a full check of the reference Company: %d probes in %v", len(c.rep.Results), c.rep.Duration)
	if n := c.rep.MustFailures(); n != 0 {
		t.Fatalf("%d MUST failures:%s", n, describe(c.rep.Failed()))
	}
	var other []conformance.Result
	for _, r := range c.rep.Results {
		if r.Status != conformance.Pass {
			other = append(other, r)
		}
	}
	if len(other) > 0 {
		t.Errorf("probes that did not pass:%s", describe(other))
	}
	if len(c.rep.Results) < 60 {
		t.Errorf("only %d probes ran", len(c.rep.Results))
	}
	if n := len(c.s.Ledger()); n != 1 {
		t.Errorf("the Company performed %d operations, want the one approved", n)
	}
	if n := c.s.ActiveRefreshTokens(""); n != 0 {
		t.Errorf("%d refresh tokens still active after the run", n)
	}
}

// TestEveryFault: for each fault of the reference Company, check reports the rule it breaks as
// failed (MUST, SHOULD) or noted (NOTE), naming its section, and with its finding. A fault
// missing from conformance.FaultRules fails.
func TestEveryFault(t *testing.T) {
	for _, fault := range refcompany.AllFaults {
		fr, ok := conformance.FaultRules[fault]
		if !ok {
			t.Errorf("the fault %s has no check: add it to conformance.FaultRules and probe it", fault)
			continue
		}
		rule, ok := inspect.RuleByID(fr.Rule)
		if !ok {
			t.Errorf("the fault %s names the unknown rule %s", fault, fr.Rule)
			continue
		}
		if want := string(rule.Level); !strings.HasPrefix(fr.Why, want+":") {
			t.Errorf("the fault %s: its reason %q does not start with the rule's level %s", fault, fr.Why, want)
		}
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			c := runCheck(t, nil, fault)
			want := conformance.Fail
			if rule.Level == inspect.NOTE {
				want = conformance.Note
			}
			for _, r := range c.rep.Results {
				if r.Rule == fr.Rule && r.Status == want && r.Finding != nil && r.Section == rule.Section && r.Finding.Section == rule.Section {
					t.Logf("%s %s: %s", strings.ToUpper(r.Status), r.Probe, r.Evidence)
					return
				}
			}
			t.Errorf("no %s of %s (%s); failed and noted:%s", want, fr.Rule, rule.Section, describe(append(c.rep.Failed(), c.rep.Noted()...)))
		})
	}
	for f := range conformance.FaultRules {
		if !slices.Contains(refcompany.AllFaults, f) {
			t.Errorf("conformance.FaultRules names %s, which is no fault of the reference Company", f)
		}
	}
}

// TestEveryRuleFails: every rule a run reports has a fault of the reference Company that makes
// it fail (TestEveryFault runs each), so a probe changed to pass whatever it sees fails a test.
func TestEveryRuleFails(t *testing.T) {
	for _, rule := range conformance.Rules() {
		if _, ok := inspect.RuleByID(rule); !ok {
			t.Errorf("conformance.Rules lists the unknown rule %s", rule)
		}
		var faults []string
		for f, fr := range conformance.FaultRules {
			if fr.Rule == rule {
				faults = append(faults, f)
			}
		}
		if len(faults) == 0 {
			t.Errorf("no fault of the reference Company breaks %s: add one (refcompany) and name it in conformance.FaultRules", rule)
		}
	}
}

// TestActionsNeedAllowing: without --allow-actions a run performs nothing: no sign-in, no
// operation, no conversation, no feedback report; each such probe is skipped with the action
// that would allow it.
func TestActionsNeedAllowing(t *testing.T) {
	c := runCheck(t, func(_ *refcompany.Server, cfg *conformance.Config) { cfg.AllowActions = nil })
	if n := c.rep.MustFailures(); n != 0 {
		t.Fatalf("%d MUST failures:%s", n, describe(c.rep.Failed()))
	}
	for _, action := range conformance.Actions {
		found := false
		for _, r := range c.rep.Results {
			found = found || r.Status == conformance.Skip && strings.Contains(r.Evidence, "--allow-actions "+action)
		}
		if !found {
			t.Errorf("no probe says it needs --allow-actions %s", action)
		}
	}
	if n := len(c.s.Ledger()); n != 0 {
		t.Errorf("the Company performed %d operations", n)
	}
	if n := len(c.s.FeedbackReports()); n != 0 {
		t.Errorf("the Company received %d feedback reports", n)
	}
	if n := len(c.s.RequestsTo(refcompany.ShopHost, "/poppy/conversations")); n != 0 {
		t.Errorf("the Company received %d conversation requests", n)
	}
	if len(c.s.RequestsTo(refcompany.AuthHost, "/oauth/authorize")) == 0 {
		t.Error("the authorization probes that need no User did not run")
	}
	for _, r := range c.s.RequestsTo(refcompany.AuthHost, "/oauth/authorize") {
		if r.Method != "GET" {
			t.Errorf("the run answered a consent page: %s %s", r.Method, r.Path)
		}
	}
}

// TestPerformedTwice: a Company that performs an approved operation again when its approval is
// sent again (a second exchange, another body) fails Operations 7, and the ledger shows both.
func TestPerformedTwice(t *testing.T) {
	c := runCheck(t, nil, refcompany.FaultApprovalPerformsAgain)
	for _, r := range c.rep.Failed() {
		if r.Rule == inspect.RuleOpsAtMostOnce && r.Section == "Operations 7" {
			if n := len(c.s.Ledger()); n != 2 {
				t.Errorf("the Company performed %d operations, want the 2 it was made to", n)
			}
			return
		}
	}
	t.Fatalf("no failure of %s:%s", inspect.RuleOpsAtMostOnce, describe(c.rep.Results))
}

// TestProbeURLPreconditions: a --probe-url that cannot show Session verification (an endpoint
// that uses no Session claims and answers without the header, or one that refuses the correct
// request) skips the Session and version probes with words that say why and what to name
// instead, and fails nothing.
func TestProbeURLPreconditions(t *testing.T) {
	for _, tc := range []struct{ name, path, words string }{
		{"no Session claims", "/api/openapi.json", "uses no Session claims"},
		{"refuses the correct request", "/api/orders", "got HTTP 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := runCheck(t, func(s *refcompany.Server, cfg *conformance.Config) {
				cfg.ProbeURL = s.URL(refcompany.ShopHost, tc.path)
				cfg.AllowActions = nil
			})
			skippedWithWords(t, c, 10, tc.words, inspect.RuleSessionVerify, inspect.RuleVersionChecked)
		})
	}
}

// TestSignedInURLPreconditions: a --signed-in-url that cannot show what happens to a token
// elsewhere (an endpoint that answers without the access token, one that refuses the correct
// signed-in request, none named) skips the token-in-the-URL and MCP token probes with words
// that say why and what to name instead, and fails nothing.
func TestSignedInURLPreconditions(t *testing.T) {
	for _, tc := range []struct{ name, path, words string }{
		{"answers without the token", "/api/products", "does not require the token"},
		{"refuses the correct request", "/api/nowhere", "got HTTP 404"},
		{"none named", "", "--signed-in-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := runCheck(t, func(s *refcompany.Server, cfg *conformance.Config) {
				cfg.SignedInURL = ""
				if tc.path != "" {
					cfg.SignedInURL = s.URL(refcompany.ShopHost, tc.path)
				}
			})
			skippedWithWords(t, c, 2, tc.words, inspect.RuleTokenInURL, inspect.RuleMCPTokenElsewhere)
		})
	}
}

// skippedWithWords requires a run without MUST failures whose probes of rules, want of them, are
// each skipped with words and with what to name instead.
func skippedWithWords(t *testing.T, c checked, want int, words string, rules ...string) {
	t.Helper()
	if n := c.rep.MustFailures(); n != 0 {
		t.Fatalf("%d MUST failures:%s", n, describe(c.rep.Failed()))
	}
	n := 0
	for _, r := range c.rep.Results {
		if !slices.Contains(rules, r.Rule) {
			continue
		}
		n++
		if r.Status != conformance.Skip || !strings.Contains(r.Evidence, words) || !strings.Contains(r.Evidence, "name") {
			t.Errorf("%s %s: %s", r.Status, r.Probe, r.Evidence)
		}
	}
	if n != want {
		t.Errorf("%d probes of %s, want %d", n, strings.Join(rules, ", "), want)
	}
}

// TestRepeatedRun: a second run against the same Company, signed in with the same account,
// fails nothing: the operation the first run performed is refused now (409 already_exchanged),
// and the operation probes say so, with the Company's words, and what to do.
func TestRepeatedRun(t *testing.T) {
	s := poppytest.Start(t, refcompany.Options{})
	s.SetDPoP(true)
	first := runCheckOn(t, s, nil, nil)
	if n := first.rep.MustFailures(); n != 0 {
		t.Fatalf("first run: %d MUST failures:%s", n, describe(first.rep.Failed()))
	}
	second := runCheckOn(t, s, nil, &first)
	if n := second.rep.MustFailures(); n != 0 {
		t.Fatalf("second run: %d MUST failures:%s", n, describe(second.rep.Failed()))
	}
	skipped := 0
	for _, r := range second.rep.Results {
		if strings.HasPrefix(r.Rule, "operations.") && r.Status == conformance.Skip {
			skipped++
			if !strings.Contains(r.Evidence, "already_exchanged") || !strings.Contains(r.Evidence, "earlier run of check") || !strings.Contains(r.Evidence, "--operation") {
				t.Errorf("%s skipped without the Company's words and what to do: %s", r.Probe, r.Evidence)
			}
		}
	}
	if skipped == 0 {
		t.Errorf("the second run skipped no operation probe:%s", describe(second.rep.Results))
	}
}

// TestCompanyWords: a failure shows what the Company said, beside check's reading: its status,
// error and error_description.
func TestCompanyWords(t *testing.T) {
	for _, tc := range []struct {
		fault, rule string
		status      int
		code, words string
	}{
		{refcompany.FaultClientMetadataUnfetched, inspect.RuleOAuthClientMetadata, 401, "invalid_client", "knows only the clients registered with it"},
		{refcompany.FaultCookieRequired, inspect.RuleNoCookies, 401, "cookie_required", "send the request again with the cookie"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			c := runCheck(t, nil, tc.fault)
			for _, r := range c.rep.Failed() {
				if r.Rule == tc.rule {
					if r.Said == nil || r.Said.Status != tc.status || r.Said.Error != tc.code || !strings.Contains(r.Said.Description, tc.words) {
						t.Errorf("the Company's words: %+v", r.Said)
					}
					if !strings.Contains(r.Evidence, tc.words) {
						t.Errorf("the evidence does not quote the Company: %s", r.Evidence)
					}
					return
				}
			}
			t.Fatalf("no failure of %s:%s", tc.rule, describe(c.rep.Results))
		})
	}
}
