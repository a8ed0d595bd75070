package discovery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkLoadGitHubDescription reads GitHub's REST API description (13 MB, 1,223 operations)
// as discovery does to know its request URLs (LoadOpenAPI, OpenAPIRequestURLs), against a plain
// encoding/json decode of the same bytes into `any` in the same run (x-baseline).
func BenchmarkLoadGitHubDescription(b *testing.B) {
	data := poppytest.NeedGitHubDescription(b)
	base, _ := url.Parse("https://api.github.com/openapi.json")
	ctx := context.Background()
	benchratio.RunCPU(b, "LoadOpenAPI+RequestURLs", "json.Unmarshal", func(b *testing.B) {
		doc, err := discovery.LoadOpenAPI(ctx, data)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(discovery.OpenAPIRequestURLs(base, doc)); n < 700 {
			b.Fatalf("%d request URLs", n)
		}
	}, func(b *testing.B) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkDiscoverGitHubCompany is a whole discovery, without the cache, of the reference
// Company listing GitHub's REST API description besides its own (poppy.json, the metadata, and
// both descriptions fetched over loopback TLS and read), against a plain encoding/json decode of
// GitHub's description in the same run (x-baseline).
func BenchmarkDiscoverGitHubCompany(b *testing.B) {
	data := poppytest.NeedGitHubDescription(b)
	s := poppytest.Start(b, refcompany.Options{})
	descURL, err := s.AddOpenAPI("/github", data, "GitHub's REST API", http.NotFoundHandler())
	if err != nil {
		b.Fatal(err)
	}
	tr := poppytest.Transport(b, s, nil)
	d, err := discovery.New(discovery.Config{Transport: tr})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	benchratio.RunCPU(b, "Discover", "json.Unmarshal", func(b *testing.B) {
		c, err := d.Discover(ctx, s.Domain, discovery.NoCache())
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Described[descURL]) < 700 || c.DescriptionErrors[descURL] != "" {
			b.Fatalf("GitHub's description: %d request URLs, error %q", len(c.Described[descURL]), c.DescriptionErrors[descURL])
		}
	}, func(b *testing.B) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	})
}
