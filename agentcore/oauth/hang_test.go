package oauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestHangingTokenEndpointEnds: a token endpoint that never answers (FaultHangToken) ends the
// Device Sign-In poll once the transport's document deadline passes, with an error naming the
// token endpoint and saying it did not answer in time; nothing is stored. The caller's context
// has no deadline of its own.
func TestHangingTokenEndpointEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := poppytest.Start(t, refcompany.Options{})
	tr := poppytest.Transport(t, s, func(c *transport.Config) { c.DocumentTimeout = 300 * time.Millisecond })
	d, err := discovery.New(discovery.Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	co, err := d.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := s.NewTestAgent(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	secrets := store.NewSecrets(store.NewMemoryKV())
	c, err := oauth.New(oauth.Config{Transport: tr, Identity: agent.Identity, Secrets: secrets,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := c.StartDevice(ctx, oauth.SignInRequest{Company: co, Account: "personal", Scopes: []string{"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetFault(refcompany.FaultHangToken, true); err != nil {
		t.Fatal(err)
	}
	_, err = flow.Wait(context.Background())
	te := co.AuthorizationServer.TokenEndpoint
	if err == nil || !strings.Contains(err.Error(), te) || !strings.Contains(err.Error(), "did not answer in time") || !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("Wait = %v; want a timeout naming %s", err, te)
	}
	if b, _ := secrets.LoadCompany(ctx, co.Identifier, "personal"); b != nil && len(b.Tokens) > 0 {
		t.Fatal("tokens were stored")
	}
}
