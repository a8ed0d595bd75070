package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestHangingCompanyFreezesNothing: a Company whose discovery documents never finish
// (FaultHangDiscovery) neither keeps the window's Discover waiting nor the model's call: both
// end once the document deadline passes, the window with words naming poppy.json's URL and the
// timeout, the model with Poppydesk's own timeout status.
func TestHangingCompanyFreezesNothing(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultHangDiscovery}, Socket: true,
		Edit: func(c *app.Config) { c.Tuning.DocumentTimeout = 300 * time.Millisecond }})
	_, err := f.Fronts().Companies.Discover(f.Company.Domain)
	if err == nil || !strings.Contains(err.Error(), f.Company.PoppyJSONURL()) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("the window's Discover = %v; want the timeout naming %s", err, f.Company.PoppyJSONURL())
	}
	cs := modelClient(t, f.Host)
	out, isErr := callToolRaw(t, cs, modelapi.ToolDiscoverCompany, map[string]any{"domain": f.Company.Domain})
	if !isErr || out["status"] != modelapi.StatusTimeout {
		t.Fatalf("the model's discover: %v", out)
	}
}
