package discovery_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestDiscoveryOfAHangingCompanyEnds: a Company whose discovery documents start an answer and
// never finish it (FaultHangDiscovery) fails discovery once the transport's document deadline
// passes, with a message naming the URL and saying it did not answer in time; the caller's
// context has no deadline of its own, so only that bound ends the wait.
func TestDiscoveryOfAHangingCompanyEnds(t *testing.T) {
	s := poppytest.Start(t, refcompany.Options{Faults: []string{refcompany.FaultHangDiscovery}})
	tr := poppytest.Transport(t, s, func(c *transport.Config) { c.DocumentTimeout = 300 * time.Millisecond })
	d, err := discovery.New(discovery.Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Discover(context.Background(), s.Domain)
	ce, ok := discovery.AsCheckError(err)
	if !ok || ce.Check != discovery.CheckFetch || !strings.Contains(err.Error(), s.PoppyJSONURL()) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("err = %v; want a failed fetch naming %s and the timeout", err, s.PoppyJSONURL())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v does not match context.DeadlineExceeded", err)
	}
}
