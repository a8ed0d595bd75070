package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestDiscoverSeesChangeAtOnce: a Company developer changes poppy.json while Poppydesk runs and
// Discovers again. The person's Discover (the window's Companies → Discover) and the model's
// discover_company fetch the documents anew and show the change at once, although the Company
// said its copy stays fresh for an hour; the engine's ordinary use (a Company looked up by
// domain for a call) keeps honouring that caching and asks the Company nothing.
func TestDiscoverSeesChangeAtOnce(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.Company.SetCacheControl("max-age=3600")
	domain := f.Company.Domain
	rename := func(name string) {
		f.Company.EditPoppyJSON(func(doc map[string]any) { doc["organization"].(map[string]any)["name"] = name })
	}
	fetches := func() int { return len(f.Company.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json")) }
	companies := f.Fronts().Companies

	e, err := companies.Discover(domain)
	if err != nil {
		t.Fatal(err)
	}
	if e.Company.Name != "Shop (reference Company)" {
		t.Fatalf("first Discover: the Company is named %q", e.Company.Name)
	}
	rename("Shop, renamed by its developer")
	if e, err = companies.Discover(domain); err != nil || e.Company.Name != "Shop, renamed by its developer" {
		t.Errorf("Companies → Discover after poppy.json changed: %q (%v), want the new name at once", e.Company.Name, err)
	}

	// The engine's ordinary use (engine.Discover, as a tool naming the Company by domain looks
	// it up): the cached copy while it is fresh.
	rename("Shop, renamed again")
	before := fetches()
	co, err := f.Host.Engine().Discover(context.Background(), domain)
	if err != nil {
		t.Fatal(err)
	}
	if co.Organization.Name != "Shop, renamed by its developer" || fetches() != before {
		t.Errorf("an ordinary look-up of %s gave %q after %d fetches of poppy.json, want the cached copy without asking the Company", domain, co.Organization.Name, fetches()-before)
	}

	// The model's discover_company is the same explicit request.
	cs := f.Model(t, "test")
	out := callTool(t, cs, modelapi.ToolDiscoverCompany, map[string]any{"domain": domain})
	if got := fmt.Sprint(out); !strings.Contains(got, "Shop, renamed again") {
		t.Errorf("discover_company after poppy.json changed answered %s, want the new name", got)
	}
}
