package apis_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestIndexedViews: Client.FetchOpenAPI's view of GitHub's description (built once per Client
// destinations and shared) marks unavailable exactly the operations that checking every
// operation's URL against the Session destinations marks (Descriptions.Get over destinations
// holding the Company's entries, the description's request URLs and the exclusions), for a
// Company whose destinations exclude some operations' URLs and for one that excludes none; and
// reading it again gives the same view.
func TestIndexedViews(t *testing.T) {
	ctx := context.Background()
	data := poppytest.NeedGitHubDescription(t)
	f := newFixture(t)
	u, err := f.s.AddOpenAPI("/github", data, "GitHub's REST API", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	api := discovery.API{Type: "openapi", URL: u, Description: "GitHub's REST API"}
	ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	described, err := ds.RequestURLs(ctx, u, false)
	if err != nil {
		t.Fatal(err)
	}
	gh := f.s.Origin() + "/github"
	tests := []struct {
		name     string
		excluded []string
		want     int // unavailable operations
	}{
		{"nothing excluded", nil, 0},
		// GET and POST, GET and PATCH, GET, PATCH and DELETE.
		{"some URLs excluded", []string{gh + "/repos/x/x/issues", gh + "/user", gh + "/gists/x/comments/x"}, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := func(templates []string) *transport.Destinations {
				var b transport.DestinationsBuilder
				if err := b.Prefix(gh + "/repos"); err != nil {
					t.Fatal(err)
				}
				for _, x := range templates {
					b.Template(x)
				}
				for _, x := range append([]string{u}, tc.excluded...) {
					if err := b.Exclude(x); err != nil {
						t.Fatal(err)
					}
				}
				return b.Build()
			}
			sc, err := f.tr.Session(transport.SessionConfig{Signer: f.session(t, "", nil), Destinations: build(nil), Version: f.company.Version})
			if err != nil {
				t.Fatal(err)
			}
			c, err := apis.New(apis.Config{Session: sc, Described: apis.NewDescribed(f.company), Now: f.clk.Now, Descriptions: ds})
			if err != nil {
				t.Fatal(err)
			}
			want, err := ds.Get(ctx, api, build(described))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := c.FetchOpenAPI(ctx, api)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Operations) != len(want.Operations) || got.APIDescribe != "GitHub's REST API" {
					t.Fatalf("%d operations, want %d; %q", len(got.Operations), len(want.Operations), got.APIDescribe)
				}
				n := 0
				for i := range got.Operations {
					g, w := got.Operations[i], want.Operations[i]
					if g.ID != w.ID || g.Unavailable != w.Unavailable {
						t.Fatalf("%s: unavailable %q, want %q", g.ID, g.Unavailable, w.Unavailable)
					}
					if g.Unavailable != "" {
						n++
					}
				}
				if n != tc.want {
					t.Fatalf("%d operations unavailable, want %d", n, tc.want)
				}
			}
		})
	}
}

// TestFind: Description.Find, which reads the index (tags, paths in order, lower-case text),
// selects exactly the operations that checking each operation's tags, path and text selects,
// in the same order, on GitHub's description, also when it gives a filter's kept result.
func TestFind(t *testing.T) {
	data := poppytest.NeedGitHubDescription(t)
	d, err := apis.ParseOpenAPI(context.Background(), "https://shop.example/github/openapi.json", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	naive := func(f apis.OperationFilter) []int {
		var out []int
		words := strings.Fields(strings.ToLower(f.Query))
		for i, o := range d.Operations {
			if f.Tag != "" && !slices.ContainsFunc(o.Tags, func(t string) bool { return strings.EqualFold(t, f.Tag) }) {
				continue
			}
			if !strings.HasPrefix(o.Path, f.PathPrefix) {
				continue
			}
			text := strings.ToLower(o.ID + " " + o.Path + " " + o.Summary)
			if slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) }) {
				continue
			}
			out = append(out, i)
		}
		return out
	}
	tests := []struct {
		name string
		f    apis.OperationFilter
		min  int // at least this many match
	}{
		{"everything", apis.OperationFilter{}, 1223},
		{"a tag", apis.OperationFilter{Tag: "issues"}, 40},
		{"a tag in other case", apis.OperationFilter{Tag: "ISSUES"}, 40},
		{"a path prefix", apis.OperationFilter{PathPrefix: "/repos/{owner}/{repo}/issues"}, 20},
		{"a path prefix mid-segment", apis.OperationFilter{PathPrefix: "/repos/{owner}/{repo}/iss"}, 20},
		{"words", apis.OperationFilter{Query: "Comment  issue"}, 5},
		{"all three", apis.OperationFilter{Tag: "issues", PathPrefix: "/repos/", Query: "comment"}, 3},
		{"a tag and words", apis.OperationFilter{Tag: "reactions", Query: "delete"}, 3},
		{"no such path", apis.OperationFilter{PathPrefix: "/zzz"}, 0},
		{"a path before every other", apis.OperationFilter{PathPrefix: "/"}, 1223},
		{"no such words", apis.OperationFilter{Query: "teapot"}, 0},
		{"no such tag", apis.OperationFilter{Tag: "teapots"}, 0},
	}
	// Twice, the second time in reverse order: the results Find keeps for the latest filters
	// (fewer than these) are given back for their own filter only.
	for round := range 2 {
		for i := range tests {
			tc := tests[i]
			if round == 1 {
				tc = tests[len(tests)-1-i]
			}
			got, want := d.Find(tc.f), naive(tc.f)
			if !slices.Equal(got, want) || len(got) < tc.min {
				t.Errorf("round %d, %s: Find = %d operations, checking each = %d (at least %d expected)", round, tc.name, len(got), len(want), tc.min)
			}
		}
	}
}
