package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestDemoStartsWithEveryFault: `poppydesk demo --fault NAME` starts for every fault of the
// reference Company, those that break discovery or sign-in included (scope-wider refused the
// demo's own sign-in before): the demo account signs in first, the fault is switched on after,
// and the status line names it.
func TestDemoStartsWithEveryFault(t *testing.T) {
	for _, fault := range refcompany.AllFaults {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			f := apptest.Start(t, apptest.Options{Demo: true, Faults: []string{fault}})
			if !f.Company.FaultOn(fault) {
				t.Errorf("the fault %s is not switched on", fault)
			}
			if st := f.Fronts().Shell.Status(); !strings.Contains(st, "Faults switched on after the demo account signed in: "+fault+".") {
				t.Errorf("the status line does not name the fault: %q", st)
			}
			demo, _ := f.Host.Demo()
			st, err := f.Host.OAuth().Status(context.Background(), demo.Identifier, app.DemoAccount)
			if err != nil || !st.SignedIn {
				t.Errorf("the demo account is not signed in: %+v, %v", st, err)
			}
		})
	}
}

// TestDemoUnknownFault: a name that is no fault stops the demo's start with the list of faults.
func TestDemoUnknownFault(t *testing.T) {
	dir := t.TempDir()
	cfg := app.Config{Paths: app.Paths{Data: dir + "/data", Config: dir + "/config", State: dir + "/state"}, Demo: &app.DemoOptions{Faults: []string{"no-such-fault"}}, Socket: app.NoSocket}
	_, err := app.New(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), `no fault "no-such-fault"`) || !strings.Contains(err.Error(), "scope-wider") {
		t.Fatalf("New = %v", err)
	}
}
