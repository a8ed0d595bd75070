package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
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

// TestDevAgentFetchesInInspector: the Company's fetches of Poppydesk's client metadata and keys
// from developer mode's loopback listener are on the Inspector's timeline, as incoming
// exchanges whose cause is the Company, with what Poppydesk answered.
func TestDevAgentFetchesInInspector(t *testing.T) {
	f := apptest.Start(t, apptest.Options{NoCompany: true, Edit: func(c *app.Config) {
		dev, err := app.DeveloperFrom(app.DeveloperSettings{Companies: []string{"shop.localhost:8443"}})
		if err != nil {
			t.Fatal(err)
		}
		c.Developer = dev
	}})
	caPEM, err := os.ReadFile(f.Host.DevCAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	clientID := f.Host.DevClientID()
	u, _ := url.Parse(clientID)
	// The Company's HTTP client: agent.localhost is loopback, the developer CA trusted.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+u.Port())
		}}}
	var jwksURI string
	for _, target := range []string{clientID, ""} {
		if target == "" {
			target = jwksURI
		}
		resp, err := hc.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			JWKSURI string `json:"jwks_uri"`
		}
		json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if jwksURI == "" {
			jwksURI = meta.JWKSURI
		}
	}
	// The listener stores an exchange once it has answered: wait for both.
	var page fronts.InspectorPage
	seen := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !(seen[clientID] && seen[jwksURI]); time.Sleep(20 * time.Millisecond) {
		if page, err = f.Fronts().Inspector.List(fronts.InspectorQuery{Search: "agent.localhost"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Rows {
			if r.CauseKind == "company" && r.Status == 200 {
				seen[r.URL] = true
			}
		}
	}
	if !seen[clientID] || !seen[jwksURI] {
		t.Fatalf("the Inspector shows %+v; want the fetches of %s and %s", page.Rows, clientID, jwksURI)
	}
}
