package refcompany_test

import (
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestStartStopsAtCleanup: Start serves the reference Company until the test's cleanup, which
// stops it.
func TestStartStopsAtCleanup(t *testing.T) {
	var s *refcompany.Server
	var tr *transport.Transport
	t.Run("serving", func(t *testing.T) {
		s = poppytest.Start(t, refcompany.Options{})
		var err error
		if tr, err = transport.New(s.ClientConfig()); err != nil {
			t.Fatal(err)
		}
		resp, err := tr.NoRedirectClient().Get(s.PoppyJSONURL())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("poppy.json: HTTP %d", resp.StatusCode)
		}
	})
	tr.Close() // no kept-alive connection: a new one must reach the listener
	if resp, err := tr.NoRedirectClient().Get(s.PoppyJSONURL()); err == nil {
		resp.Body.Close()
		t.Fatal("the reference Company still serves after the test's cleanup")
	}
}
