package refcompany_test

import (
	"os/exec"
	"slices"
	"strings"
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

// TestNoTestingPackage: the product links refcompany for its demo, and neither the testing
// package nor the test helpers of agentcore/poppytest have a place in the product's binary.
func TestNoTestingPackage(t *testing.T) {
	for _, pkg := range []string{"github.com/poppydesk/poppydesk/agentcore/refcompany", "github.com/poppydesk/poppydesk"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		deps := strings.Fields(string(out))
		for _, banned := range []string{"testing", "github.com/poppydesk/poppydesk/agentcore/poppytest"} {
			if slices.Contains(deps, banned) {
				t.Errorf("%s links %s, which has no place in the product", pkg, banned)
			}
		}
	}
}
