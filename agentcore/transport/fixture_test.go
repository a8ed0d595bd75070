package transport_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// fixture is a running reference Company, a discovered Company, a real test agent with a real
// Session, and the engine transport in dev mode.
type fixture struct {
	s       *refcompany.Server
	tr      *transport.Transport
	disc    *discovery.Discoverer
	company *discovery.Company
	agent   *refcompany.TestAgent
	sess    *session.Session

	mu        sync.Mutex
	sleeps    []time.Duration
	exchanges []transport.Exchange
}

func newFixture(t testing.TB, mod func(*transport.Config), faults ...string) *fixture {
	t.Helper()
	s := poppytest.Start(t, refcompany.Options{Faults: faults})
	f := &fixture{s: s}
	f.tr = poppytest.Transport(t, s, func(cfg *transport.Config) {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			f.mu.Unlock()
			return ctx.Err()
		}
		cfg.Observer = func(ex transport.Exchange) {
			f.mu.Lock()
			f.exchanges = append(f.exchanges, ex)
			f.mu.Unlock()
		}
		if mod != nil {
			mod(cfg)
		}
	})
	var err error
	f.disc, err = discovery.New(discovery.Config{Transport: f.tr})
	if err != nil {
		t.Fatal(err)
	}
	f.agent, err = s.NewTestAgent(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// discover runs discovery (which must succeed) and opens a Session for the Company.
func (f *fixture) discover(t testing.TB, exts ...session.Extension) {
	t.Helper()
	ctx := context.Background()
	c, err := f.disc.Discover(ctx, f.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	f.company = c
	f.sess, err = f.agent.Sessions.Open(ctx, c.Identifier, session.Options{Version: c.Version, Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) client(t testing.TB, hooks transport.Hooks) *transport.SessionClient {
	t.Helper()
	dest, err := f.company.SessionDestinations()
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: dest, Version: f.company.Version, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
