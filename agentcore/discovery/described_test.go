package discovery_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// startCompany starts a reference Company with faults and returns it with a Discoverer over a
// dev-mode transport.
func startCompany(t *testing.T, faults ...string) (*refcompany.Server, *discovery.Discoverer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := refcompany.New(refcompany.Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tr := poppytest.Transport(t, s, nil)
	d, err := discovery.New(discovery.Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

// TestDiscoveryReadsDescriptions: discovery reads each OpenAPI description (without credentials)
// and records the request URLs it describes; SessionDestinations is exactly those, the MCP
// server, the conversation routes of spec 8.2, browser authorization, feedback and extension
// endpoints (spec 5.2). A description that cannot be read leaves its API without destinations
// and the rest of the Company usable.
func TestDiscoveryReadsDescriptions(t *testing.T) {
	s, d := startCompany(t)
	c, err := d.Discover(context.Background(), s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	descURL := s.URL(refcompany.ShopHost, "/api/openapi.json")
	api := s.URL(refcompany.ShopHost, "/api")
	want := []string{api + "/gift-wrap", api + "/orders", api + "/orders/{id}", api + "/orders/{id}/exchanges", api + "/products"}
	if got := c.Described[descURL]; !slices.Equal(got, want) {
		t.Fatalf("described = %v, want %v", got, want)
	}
	for _, r := range s.RequestsTo(refcompany.ShopHost, "/api/openapi.json") {
		if r.Header.Get("Poppy-Session") != "" || r.Header.Get("Authorization") != "" {
			t.Fatal("the description was fetched with credentials")
		}
	}
	dest, err := c.SessionDestinations()
	if err != nil {
		t.Fatal(err)
	}
	o := s.Origin()
	tests := []struct {
		url  string
		want bool
	}{
		{o + "/api/orders/ord_7Hk2/exchanges", true},
		{o + "/api/products", true},
		{o + "/api/openapi.json", false},
		{o + "/api/anything", false},
		{o + "/api", false},
		{s.MCPURL(), true},
		{o + "/poppy/conversations", true},
		{o + "/poppy/conversations/c_1/messages", true},
		{o + "/poppy/conversations/c_1/events", true},
		{o + "/poppy/conversations/c_1/handoff", true},
		{o + "/poppy/conversations/c_1/close", true},
		{o + "/poppy/conversations/c_1/other", false},
		{o + "/poppy/conversations/c_1", false},
		{o + "/poppy/browser-session/authorize", true},
		{o + "/poppy/browser-session", false},
		{o + "/poppy/feedback", true},
		{o + "/poppy/gift-wrap/v1/wrap", true},
		{o + "/poppy/excluded-tasks.json", false},
		{o + "/", false},
		{o + "/.well-known/poppy.json", false},
		{s.Issuer() + "/oauth/token", false},
	}
	for _, tc := range tests {
		u, _ := url.Parse(tc.url)
		if got := dest.Allows(u); got != tc.want {
			t.Errorf("Allows(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}

	t.Run("unreadable description", func(t *testing.T) {
		s, d := startCompany(t)
		s.EditPoppyJSON(func(doc map[string]any) {
			doc["apis"] = append(doc["apis"].([]any), map[string]any{"type": "openapi", "url": s.URL(refcompany.OtherHost, "/missing.json")})
		})
		s.AddHost(refcompany.OtherHost, http.NotFoundHandler())
		c, err := d.Discover(context.Background(), s.Domain)
		if err != nil {
			t.Fatalf("a missing description failed discovery: %v", err)
		}
		miss := s.URL(refcompany.OtherHost, "/missing.json")
		if e := c.DescriptionErrors[miss]; !strings.Contains(e, "HTTP 404") || !strings.Contains(e, miss) {
			t.Fatalf("description error = %q", e)
		}
		if _, ok := c.Described[miss]; ok || len(c.Described) != 1 {
			t.Fatalf("described = %v", c.Described)
		}
	})
}

// TestDiscoveryReadsLargeDescriptions: discovery reads descriptions up to MaxDescription (32
// MiB), so a Company's real API description is not refused: one of 5 MiB, and GitHub's REST API
// description (13 MB, 1,223 operations; installed by scripts/bootstrap.sh) whose request URLs
// are all on the server the Company names. A larger one is refused with the limit in words, and
// the rest of the Company stays usable.
func TestDiscoveryReadsLargeDescriptions(t *testing.T) {
	s, d := startCompany(t)
	pad := `{"openapi":"3.0.3","info":{"title":"Padded","version":"1"},"x-padding":"` + strings.Repeat("a", 5<<20) +
		`","paths":{"/things/{id}":{"get":{"operationId":"getThing","responses":{"200":{"description":"ok"}}}}}}`
	padded, err := s.AddOpenAPI("/padded", []byte(pad), "5 MiB", nil)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"openapi":"3.0.3","info":{"title":"Big","version":"1"},"x-padding":"` + strings.Repeat("a", discovery.MaxDescription) + `","paths":{}}`
	tooBig, err := s.AddOpenAPI("/big", []byte(big), "too big", nil)
	if err != nil {
		t.Fatal(err)
	}
	var github string
	data, gerr := refcompany.GitHubDescription()
	switch {
	case gerr == nil:
		if github, err = s.AddOpenAPI("/github", data, "GitHub's REST API", nil); err != nil {
			t.Fatal(err)
		}
	case os.Getenv("POPPYDESK_REQUIRE_E2E") == "1":
		t.Fatal(gerr)
	default:
		t.Logf("GitHub's description is not installed, so only the padded one is read: %v", gerr)
	}
	c, err := d.Discover(context.Background(), s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Described[padded], []string{s.Origin() + "/padded/things/{id}"}; !slices.Equal(got, want) || c.DescriptionErrors[padded] != "" {
		t.Fatalf("the 5 MiB description: described %v (want %v), error %q", got, want, c.DescriptionErrors[padded])
	}
	if e := c.DescriptionErrors[tooBig]; !strings.Contains(e, "32 MiB") {
		t.Fatalf("the description over 32 MiB: error %q, described %d URLs", e, len(c.Described[tooBig]))
	}
	if github != "" {
		urls := c.Described[github]
		if c.DescriptionErrors[github] != "" || len(urls) < 700 {
			t.Fatalf("GitHub's description: %d request URLs, error %q", len(urls), c.DescriptionErrors[github])
		}
		for _, u := range urls {
			// The one operation with servers of its own (uploads.github.com) is described there.
			if !strings.HasPrefix(u, s.Origin()+"/github/") && !strings.HasPrefix(u, "https://uploads.github.com/") {
				t.Fatalf("GitHub's description describes %s", u)
			}
		}
		dest, err := c.SessionDestinations()
		if err != nil {
			t.Fatal(err)
		}
		for raw, want := range map[string]bool{
			s.Origin() + "/github/repos/octocat/hello-world/issues": true,
			s.Origin() + "/github/openapi.json":                     false,
			s.Origin() + "/github/no/such/path/anywhere":            false,
		} {
			if u, _ := url.Parse(raw); dest.Allows(u) != want {
				t.Errorf("Allows(%s) = %v, want %v", raw, !want, want)
			}
		}
	}
}
