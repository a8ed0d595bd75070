package conformance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
)

func runCheck(t *testing.T, faults ...string) *conformance.Report {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var opts poppytest.Options
	for _, f := range faults {
		if f != "" {
			opts.Faults = append(opts.Faults, f)
		}
	}
	s, err := poppytest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a, err := s.NewTestAgent(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.Run(ctx, conformance.Config{Domain: s.Domain, Transport: s.ClientConfig(), Agent: a.Identity,
		ProbeURL: s.URL(poppytest.ShopHost, "/api/products")})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestFaultFree: the reference Company without faults passes every probe.
func TestFaultFree(t *testing.T) {
	rep := runCheck(t)
	t.Logf("a full check of the reference Company: %d probes in %v", len(rep.Results), rep.Duration)
	if n := rep.MustFailures(); n != 0 {
		t.Fatalf("%d MUST failures: %+v", n, rep.Failed())
	}
	for _, r := range rep.Results {
		if r.Status != conformance.Pass {
			t.Errorf("%s: %s %s", r.Probe, r.Status, r.Evidence)
		}
	}
	if len(rep.Results) < 18 {
		t.Errorf("only %d probes ran", len(rep.Results))
	}
}

// TestEveryFault: for each fault of the reference Company, check reports a failure of the rule
// it breaks, naming its section. A fault missing from conformance.FaultRules fails.
func TestEveryFault(t *testing.T) {
	for _, fault := range poppytest.AllFaults {
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
		t.Run(fault, func(t *testing.T) {
			if !fr.Probed {
				t.Skipf("not probed by check yet (rule %s, %s)", rule.ID, rule.Section)
			}
			rep := runCheck(t, fault)
			for _, r := range rep.Failed() {
				if r.Rule == fr.Rule && r.Finding != nil && strings.Contains(r.Section, strings.TrimPrefix(strings.SplitN(rule.Section, ",", 2)[0], "spec ")) {
					return
				}
			}
			t.Errorf("no failure of %s (%s); failed: %+v", fr.Rule, rule.Section, rep.Failed())
		})
	}
}
