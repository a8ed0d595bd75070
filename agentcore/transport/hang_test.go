package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestSignedExchangeOfAHangingCompanyEnds: a signed request to a destination that never answers,
// or answers and never finishes its body, ends once Config.Timeout passes, though the caller's
// context has no deadline: the exchange is bounded by the request's own context.
func TestSignedExchangeOfAHangingCompanyEnds(t *testing.T) {
	f := newFixture(t, func(c *transport.Config) { c.Timeout = 300 * time.Millisecond })
	f.discover(t)
	f.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/body" {
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"partial":`))
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}))
	var db transport.DestinationsBuilder
	if err := db.Prefix(f.s.URL(refcompany.OtherHost, "/api")); err != nil {
		t.Fatal(err)
	}
	c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.OtherHost, "/api/headers")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no headers: err = %v, want the deadline", err)
	}
	resp, err := c.Do(context.Background(), &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.OtherHost, "/api/body")})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a body that never ends: err = %v, want the deadline", err)
	}
}
