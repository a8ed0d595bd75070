package apis_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestHangingAPIEnds: an API whose answer never comes ends Send once the transport's Timeout
// passes without response headers, with a *transport.TimeoutError naming the URL; the caller's
// context has no deadline.
func TestHangingAPIEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := poppytest.Start(t, refcompany.Options{})
	s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	tr := poppytest.Transport(t, s, func(c *transport.Config) { c.Timeout = 300 * time.Millisecond })
	agent, err := s.NewTestAgent(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := agent.Sessions.Open(ctx, s.Issuer(), session.Options{Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	var db transport.DestinationsBuilder
	if err := db.Prefix(s.URL(refcompany.OtherHost, "/api")); err != nil {
		t.Fatal(err)
	}
	sc, err := tr.Session(transport.SessionConfig{Signer: sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := apis.New(apis.Config{Session: sc})
	if err != nil {
		t.Fatal(err)
	}
	u := s.URL(refcompany.OtherHost, "/api/slow")
	_, err = c.Send(context.Background(), &apis.Request{Method: http.MethodGet, URL: u})
	var te *transport.TimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), u) {
		t.Fatalf("Send = %v; want a timeout naming %s", err, u)
	}
}
