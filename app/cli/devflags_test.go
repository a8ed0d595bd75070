package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/devca"
)

// TestDevFlagsIdentity: developer mode publishes an identity of Poppydesk's own (AgentListen)
// for Companies under development, and none once an operator under development is named, with
// or without Companies: then the operator's identity is the one Companies see.
func TestDevFlagsIdentity(t *testing.T) {
	ca, err := devca.New(time.Now(), devca.Options{Name: "test", Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                 string
		companies, operators []string
		ownIdentity          bool
		hosts                []string
	}{
		{name: "a Company", companies: []string{"shop.localhost:8443"}, ownIdentity: true, hosts: []string{"shop.localhost"}},
		{name: "an operator", operators: []string{"operator.localhost:9443"}, hosts: []string{"operator.localhost"}},
		{name: "a Company and an operator", companies: []string{"shop.localhost:8443"}, operators: []string{"operator.localhost:9443"},
			hosts: []string{"shop.localhost", "operator.localhost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := devFlags{companies: tc.companies, operators: tc.operators, ca: caFile}
			dev, err := d.developer()
			if err != nil {
				t.Fatal(err)
			}
			if got := dev.AgentListen != ""; got != tc.ownIdentity {
				t.Errorf("publishes an identity of its own: %v (AgentListen %q), want %v", got, dev.AgentListen, tc.ownIdentity)
			}
			for _, h := range tc.hosts {
				if !slices.Contains(dev.Hosts, h) {
					t.Errorf("host %s may not reach loopback: %v", h, dev.Hosts)
				}
			}
			if len(dev.RootCAs) != 1 {
				t.Errorf("%d CAs trusted, want the --dev-ca's one", len(dev.RootCAs))
			}
		})
	}
}
