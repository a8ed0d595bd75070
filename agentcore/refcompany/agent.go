package refcompany

import (
	"context"
	"fmt"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// TestAgent is a Personal Agent identity for tests and the demo: its client metadata and JWKS
// are served on agent.localhost by this Company's listener (devmode notes), its root key and
// User IDs are kept in an in-memory secret store, and Sessions come from a real session.Manager.
type TestAgent struct {
	ClientID string
	Identity *identity.Agent
	Sessions *session.Manager
}

// NewTestAgent creates a TestAgent and mounts it on agent.localhost. The Server must be started.
func (s *Server) NewTestAgent(ctx context.Context, now func() time.Time) (*TestAgent, error) {
	if s.Port == 0 {
		return nil, fmt.Errorf("refcompany: start the Server before NewTestAgent")
	}
	if now == nil {
		now = s.now
	}
	secrets := store.NewSecrets(store.NewMemoryKV())
	clientID := s.URL(AgentHost, "/agent.json")
	a, err := identity.New(identity.Config{ClientID: clientID, ClientName: "Poppydesk test agent"}, identity.NewLocalOperator(secrets, now), now)
	if err != nil {
		return nil, fmt.Errorf("refcompany: test agent identity: %w", err)
	}
	m, err := session.NewManager(session.Config{Secrets: secrets, Delegator: a, Now: now})
	if err != nil {
		return nil, fmt.Errorf("refcompany: test agent Sessions: %w", err)
	}
	s.AddHost(AgentHost, a.Handler(s.log))
	return &TestAgent{ClientID: clientID, Identity: a, Sessions: m}, nil
}
