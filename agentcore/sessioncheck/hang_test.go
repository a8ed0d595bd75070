package sessioncheck_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// TestHangingJWKSEnds: a Personal Agent whose JWKS never answers makes Session verification
// fail with invalid_session once Config.FetchTimeout passes, naming the JWKS URL and saying it
// did not answer; the request's context has no deadline of its own (spec 5.3 step 1).
func TestHangingJWKSEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := poppytest.Start(t, refcompany.Options{})
	agent, err := s.NewTestAgent(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	jwks := agent.Identity.Metadata().JWKSURI
	ju, _ := url.Parse(jwks)
	served := agent.Identity.Handler(nil)
	s.AddHost(refcompany.AgentHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ju.Path {
			<-r.Context().Done() // the JWKS never answers
			return
		}
		served.ServeHTTP(w, r)
	}))
	tr := poppytest.Transport(t, s, nil)
	v := sessioncheck.New(sessioncheck.Config{Identifier: s.Issuer(), HTTPClient: tr.NoRedirectClient(), FetchTimeout: 300 * time.Millisecond})
	sess, err := agent.Sessions.Open(ctx, s.Issuer(), session.Options{Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	target := s.URL(refcompany.ShopHost, "/api/products")
	r, _ := http.NewRequest(http.MethodGet, target, nil)
	if err := sess.SignRequest(ctx, r, ""); err != nil {
		t.Fatal(err)
	}
	r.TLS, r.Host = &tls.ConnectionState{}, r.URL.Host
	_, err = v.Verify(context.Background(), r, "", "")
	if err == nil || !strings.Contains(err.Error(), jwks) || !strings.Contains(err.Error(), "did not answer within") || !strings.Contains(err.Error(), "invalid_session") {
		t.Fatalf("Verify = %v; want invalid_session naming %s and the timeout", err, jwks)
	}
}
