package poppytest_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestStartStopsAtCleanup: Start serves the reference Company until the test's cleanup, which
// stops it.
func TestStartStopsAtCleanup(t *testing.T) {
	var s *poppytest.Server
	var tr *transport.Transport
	t.Run("serving", func(t *testing.T) {
		s = poppytest.Start(t, poppytest.Options{})
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

// TestNoTestingPackage: the product links poppytest for its demo, so poppytest takes the small
// TB interface instead of importing the testing package, which has no place in the product.
func TestNoTestingPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/poppydesk/poppydesk/agentcore/poppytest").Output()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(strings.Fields(string(out)), "testing") {
		t.Fatal("agentcore/poppytest imports the testing package, and the product links poppytest")
	}
}
