package discovery_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// startCompany starts a reference Company with faults and returns it with a Discoverer over a
// dev-mode transport.
func startCompany(t *testing.T, faults ...string) (*poppytest.Server, *discovery.Discoverer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := poppytest.New(poppytest.Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tr, err := transport.New(s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
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
	descURL := s.URL(poppytest.ShopHost, "/api/openapi.json")
	api := s.URL(poppytest.ShopHost, "/api")
	want := []string{api + "/gift-wrap", api + "/orders", api + "/orders/{id}", api + "/orders/{id}/exchanges", api + "/products"}
	if got := c.Described[descURL]; !slices.Equal(got, want) {
		t.Fatalf("described = %v, want %v", got, want)
	}
	for _, r := range s.RequestsTo(poppytest.ShopHost, "/api/openapi.json") {
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
			doc["apis"] = append(doc["apis"].([]any), map[string]any{"type": "openapi", "url": s.URL(poppytest.OtherHost, "/missing.json")})
		})
		s.AddHost(poppytest.OtherHost, http.NotFoundHandler())
		c, err := d.Discover(context.Background(), s.Domain)
		if err != nil {
			t.Fatalf("a missing description failed discovery: %v", err)
		}
		miss := s.URL(poppytest.OtherHost, "/missing.json")
		if e := c.DescriptionErrors[miss]; !strings.Contains(e, "HTTP 404") || !strings.Contains(e, miss) {
			t.Fatalf("description error = %q", e)
		}
		if _, ok := c.Described[miss]; ok || len(c.Described) != 1 {
			t.Fatalf("described = %v", c.Described)
		}
	})
}
