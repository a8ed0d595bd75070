package app_test

import (
	"testing"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestDevIdentityKeptWithFlags: developer mode switched on by the --dev-company flags (a
// Developer with AgentListen 127.0.0.1:0, as the flags give it) serves Poppydesk's client
// metadata on the same port after a restart, so the client_id the developer registered with
// their Company, and its developer CA, stay the same.
func TestDevIdentityKeptWithFlags(t *testing.T) {
	f := apptest.Start(t, apptest.Options{NoCompany: true, Edit: func(c *app.Config) {
		dev, err := app.DeveloperFrom(app.DeveloperSettings{Companies: []string{"shop.localhost:8443"}})
		if err != nil {
			t.Fatal(err)
		}
		c.Developer = dev
	}})
	first, ca := f.Host.DevClientID(), f.Host.DevCAFile()
	if first == "" || ca == "" {
		t.Fatalf("developer mode serves no client metadata: %q, %q", first, ca)
	}
	f.Restart(t)
	if again := f.Host.DevClientID(); again != first || f.Host.DevCAFile() != ca {
		t.Errorf("after a restart the client_id is %s (was %s), the CA %s (was %s)", again, first, f.Host.DevCAFile(), ca)
	}
}
