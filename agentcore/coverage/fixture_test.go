package coverage_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// fixture: the reference Company over loopback TLS, a real engine in developer mode for it, and
// the coverage Service over the engine, with the state in memory and one clock.
type fixture struct {
	s       *refcompany.Server
	e       *engine.Engine
	svc     *coverage.Service
	state   *store.MemoryEngineState
	reports *store.MemoryFeedbackReports
	clock   *refcompany.Clock

	mu    sync.Mutex
	waits []time.Duration // what the transport waited on 429 (spec 5.6)
}

func newFixture(t *testing.T, faults ...string) *fixture {
	t.Helper()
	f := &fixture{clock: &refcompany.Clock{}, state: store.NewMemoryEngineState(), reports: store.NewMemoryFeedbackReports()}
	s := poppytest.Start(t, refcompany.Options{Faults: faults, Now: f.clock.Now})
	f.s = s
	seen := coverage.NewSeen(0)
	tc := s.ClientConfig()
	tc.Sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.waits = append(f.waits, d)
		f.mu.Unlock()
		f.clock.Advance(d) // the wait passes on the shared clock, without sleeping
		return ctx.Err()
	}
	e, err := engine.New(engine.Config{Transport: tc, Secrets: store.NewSecrets(store.NewMemoryKV()), State: f.state,
		Identity: identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json"), ClientName: "coverage test"},
		Logger:   slog.New(slog.DiscardHandler), Now: f.clock.Now, OnExchange: seen.Observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	s.AddHost(refcompany.AgentHost, e.Agent().Handler(slog.New(slog.DiscardHandler)))
	f.e = e
	f.svc, err = coverage.New(coverage.Config{Engine: e, Reports: f.reports, Settings: f.state, Seen: seen, Now: f.clock.Now,
		Accounts: func(context.Context, string) ([]string, error) { return []string{"alice.smith"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) discover(t *testing.T) *discovery.Company {
	t.Helper()
	co, err := f.e.Discover(context.Background(), f.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	return co
}

// credentialsOn fails the test when a request to path carried a credential or the Session
// header (spec 9.1, 9.4: public documents are fetched without them).
func (f *fixture) credentialsOn(t *testing.T, path string) int {
	t.Helper()
	reqs := f.s.RequestsTo("", path)
	for _, r := range reqs {
		for _, h := range []string{"Authorization", "Poppy-Session", "Poppy-Version", "Dpop", "Cookie"} {
			if r.Header.Get(h) != "" {
				t.Errorf("%s %s carried %s; public documents are fetched without credentials or the Session header", r.Method, r.Path, h)
			}
		}
	}
	return len(reqs)
}
