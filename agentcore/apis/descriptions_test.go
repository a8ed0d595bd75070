package apis_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func shopAPI(f *fixture) discovery.API { return apis.Select(f.company.Document.APIs).OpenAPI[0] }

// descRequests counts the requests for the Shop API's description and the conditional ones.
func descRequests(f *fixture) (all, conditional int) {
	for _, r := range f.s.RequestsTo(refcompany.ShopHost, "/api/openapi.json") {
		all++
		if r.Header.Get("If-None-Match") != "" {
			conditional++
		}
	}
	return all, conditional
}

// TestDescriptionsCache: a description is fetched once per version and kept by RFC 9111 rules:
// fresh from memory, then revalidated with If-None-Match when stale (304 keeps the parsed
// document), fresh from the persistent cache after a restart, and never kept when the Company
// says no-store (spec 7; RFC 9111 §4.2, §4.3, §5.2.2.5).
func TestDescriptionsCache(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.s.ResetRequests() // the discovery's read of the description is not counted here
	cache := discovery.NewMemoryCache()
	newDS := func() *apis.Descriptions {
		ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Cache: cache, Now: f.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	ds := newDS()
	get := func(ds *apis.Descriptions) *apis.Description {
		t.Helper()
		d, err := ds.Get(ctx, shopAPI(f), f.dest)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Operation("exchangeItem"); !ok || d.APIDescribe != "Products, orders, and exchanges" {
			t.Fatalf("description %+v", d)
		}
		return d
	}
	steps := []struct {
		name              string
		do                func()
		all, conditional  int // requests so far
		entries, inMemory int
	}{
		{"first use fetches", func() { get(ds) }, 1, 0, 1, 1},
		{"fresh: no request", func() { get(ds); get(ds) }, 1, 0, 1, 1},
		{"stale: revalidated, 304", func() { f.clk.Advance(301 * time.Second); get(ds) }, 2, 1, 1, 1},
		{"fresh again after the 304", func() { get(ds) }, 2, 1, 1, 1},
		{"a restart reads the stored copy while fresh", func() {
			f.clk.Advance(-301 * time.Second) // the stored entry's expiry is the first fetch's
			get(newDS())
		}, 2, 1, 1, 1},
		{"a restart revalidates a stale stored copy", func() { f.clk.Advance(301 * time.Second); get(newDS()) }, 3, 2, 1, 1},
		{"no-store: fetched on every use and not stored", func() {
			f.s.SetCacheControl("no-store")
			f.clk.Advance(301 * time.Second)
			get(ds)
			get(ds)
		}, 5, 3, 0, 0},
	}
	for _, st := range steps {
		st.do()
		all, cond := descRequests(f)
		_, stored, _ := cache.Get(ctx, shopAPI(f).URL)
		entries := 0
		if stored {
			entries = 1
		}
		mem, _ := ds.Len()
		if all != st.all || cond != st.conditional || entries != st.entries || mem != st.inMemory {
			t.Fatalf("%s: %d requests (%d conditional), %d stored, %d in memory; want %d (%d), %d, %d",
				st.name, all, cond, entries, mem, st.all, st.conditional, st.entries, st.inMemory)
		}
	}
}

// TestDescriptionsBounded: at most MaxEntries parsed descriptions stay in memory (the least
// recently used goes first; it stays in the persistent cache).
func TestDescriptionsBounded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const n = 4
	var list []discovery.API
	for i := range n {
		prefix := "/extra" + string(rune('a'+i))
		u, err := f.s.AddOpenAPI(prefix, []byte(`{"openapi":"3.0.3","info":{"title":"Extra","version":"1"},"paths":{"/x":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}}`), "extra", nil)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, discovery.API{Type: "openapi", URL: u})
	}
	ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Now: f.clk.Now, MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range list {
		if _, err := ds.Get(ctx, api, f.dest); err != nil {
			t.Fatal(err)
		}
	}
	if mem, _ := ds.Len(); mem != 2 {
		t.Fatalf("%d descriptions in memory, want 2", mem)
	}
}

// TestDescriptionSizeLimit: a description up to apis.MaxDescription is read; a larger one is
// refused with an error naming the limit, and nothing is kept.
func TestDescriptionSizeLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	big := `{"openapi":"3.0.3","info":{"title":"Big","version":"1"},"x-padding":"` + strings.Repeat("a", apis.MaxDescription) + `","paths":{}}`
	u, err := f.s.AddOpenAPI("/big", []byte(big), "too big", nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ds.Get(ctx, discovery.API{Type: "openapi", URL: u}, f.dest)
	if !errors.Is(err, apis.ErrDescription) || !strings.Contains(err.Error(), "32 MiB") {
		t.Fatalf("err = %v, want the 32 MiB limit", err)
	}
	if mem, _ := ds.Len(); mem != 0 {
		t.Fatalf("%d descriptions kept", mem)
	}
}

// TestGitHubDescription: GitHub's REST API description (13 MB, OpenAPI 3.0.3), served by the
// reference Company as an extra API, is fetched once, lists its 1,223 operations as callable at
// the server the Company names (but the one on another host), and every operation can be
// described in full (its schemas and those they reference pass Description.Detail's checks).
func TestGitHubDescription(t *testing.T) {
	ctx := context.Background()
	data := poppytest.NeedGitHubDescription(t)
	f := newFixture(t)
	u, err := f.s.AddOpenAPI("/github", data, "GitHub's REST API", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var b transport.DestinationsBuilder // as SessionDestinations makes it from poppy.json
	if err := b.Prefix(f.s.Origin() + "/github/"); err != nil {
		t.Fatal(err)
	}
	if err := b.Exclude(u); err != nil {
		t.Fatal(err)
	}
	dest := b.Build()
	api := discovery.API{Type: "openapi", URL: u}
	d, err := ds.Get(ctx, api, dest)
	if err != nil {
		t.Fatal(err)
	}
	if d.OpenAPI != "3.0.3" || len(d.Operations) != 1223 || len(d.Tags) == 0 {
		t.Fatalf("%s %s: %d operations, %d tags", d.Title, d.OpenAPI, len(d.Operations), len(d.Tags))
	}
	op, ok := d.Operation("issues/create")
	if !ok || op.Unavailable != "" || op.ServerURL != f.s.Origin()+"/github" || op.Method != "POST" || len(op.Parameters) != 2 || op.RequestBody == nil {
		t.Fatalf("issues/create = %+v", op)
	}
	for _, o := range d.Operations {
		// The one operation whose own servers name another host (uploads.github.com) is not a
		// Session destination; every other one is callable at the Company's server.
		if (o.Unavailable != "") != (o.ID == "repos/upload-release-asset") {
			t.Fatalf("%s: unavailable = %q", o.ID, o.Unavailable)
		}
	}
	if _, err := ds.Get(ctx, api, dest); err != nil {
		t.Fatal(err)
	}
	if n := len(f.s.RequestsTo(refcompany.ShopHost, "/github/openapi.json")); n != 1 {
		t.Fatalf("the description was fetched %d times, want 1", n)
	}
	det, err := d.Detail(ctx, "repos/create-for-authenticated-user")
	if err != nil {
		t.Fatal(err)
	}
	if len(det.RequestBody.Schema) == 0 {
		t.Fatalf("detail %+v", det)
	}
	if testing.Short() {
		return
	}
	for _, o := range d.Operations {
		if _, err := d.Detail(ctx, o.ID); err != nil {
			t.Fatalf("%s: %v", o.ID, err)
		}
	}
}

// TestDescriptionsAfterDiscovery: discovery reads each description through its RFC 9111 cache
// (to know the Company's Session destinations, spec 5.2); Descriptions over the same cache, as
// the engine sets it up, uses that copy while it is fresh, so the description is downloaded
// once, and a Client reading through it records the request URLs it describes (Described).
func TestDescriptionsAfterDiscovery(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if all, _ := descRequests(f); all != 1 {
		t.Fatalf("discovery fetched the description %d times, want once", all)
	}
	ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Cache: f.cache, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.tr.Session(transport.SessionConfig{Signer: f.session(t, "", nil), Destinations: f.dest, Version: f.company.Version})
	if err != nil {
		t.Fatal(err)
	}
	c, err := apis.New(apis.Config{Session: sc, Described: apis.NewDescribed(f.company), Now: f.clk.Now, Descriptions: ds})
	if err != nil {
		t.Fatal(err)
	}
	described := f.company.Described[shopAPI(f).URL]
	for range 3 {
		d, err := c.FetchOpenAPI(ctx, shopAPI(f))
		if err != nil {
			t.Fatal(err)
		}
		if op, ok := d.Operation("exchangeItem"); !ok || op.Unavailable != "" {
			t.Fatalf("exchangeItem = %+v", op)
		}
		for _, op := range d.Operations {
			if !slices.Contains(described, op.ServerURL+op.Path) {
				t.Fatalf("%s at %s%s, which discovery did not find described (%v)", op.ID, op.ServerURL, op.Path, described)
			}
		}
	}
	if all, _ := descRequests(f); all != 1 {
		t.Fatalf("the description was fetched %d times in all, want once (by discovery)", all)
	}
}

// TestDescriptionsParsedOncePerVersion: a description is parsed once per version, whoever reads
// it (discovery's RequestURLs, a view for some destinations): while fresh it is read from
// memory; a Company that sends no validator answers every revalidation with the whole document,
// and the same bytes (the same digest) keep the parsed description; other bytes are a new
// version, parsed once. Each parse is logged.
func TestDescriptionsParsedOncePerVersion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var mu sync.Mutex
	body := `{"openapi":"3.0.3","info":{"title":"Versioned","version":"1"},"paths":{"/v/one":{"get":{"operationId":"one","responses":{"200":{"description":"ok"}}}}}}`
	f.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=60") // and no ETag
		io.WriteString(w, body)
	}))
	u := f.s.URL(refcompany.OtherHost, "/versioned.json")
	api := discovery.API{Type: "openapi", URL: u}
	var logs bytes.Buffer
	ds, err := apis.NewDescriptions(apis.DescriptionsConfig{Transport: f.tr, Now: f.clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	parses := func() int { return strings.Count(logs.String(), "parsed an API description") }
	requests := func() int { return len(f.s.RequestsTo(refcompany.OtherHost, "/versioned.json")) }
	steps := []struct {
		name             string
		do               func()
		parses, requests int
		operation        string
	}{
		{"discovery's read parses it", func() { ds.RequestURLs(ctx, u, false) }, 1, 1, "one"},
		{"a view reads it from memory", func() { ds.Get(ctx, api, f.dest) }, 1, 1, "one"},
		{"asked again: the same bytes are not parsed again", func() { ds.RequestURLs(ctx, u, true) }, 1, 2, "one"},
		{"stale: the same bytes are not parsed again", func() { f.clk.Advance(61 * time.Second); ds.Get(ctx, api, f.dest) }, 1, 3, "one"},
		{"a new version is parsed once", func() {
			mu.Lock()
			body = strings.ReplaceAll(body, "one", "two")
			mu.Unlock()
			f.clk.Advance(61 * time.Second)
			ds.Get(ctx, api, f.dest)
			ds.RequestURLs(ctx, u, false)
		}, 2, 4, "two"},
	}
	for _, st := range steps {
		st.do()
		d, err := ds.Get(ctx, api, f.dest)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Operation(st.operation); parses() != st.parses || requests() != st.requests || !ok {
			t.Fatalf("%s: %d parses, %d requests, operation %q found: %v; want %d, %d, true", st.name, parses(), requests(), st.operation, ok, st.parses, st.requests)
		}
	}
}
