package modelapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// githubRequest is what the test's GitHub handler received.
type githubRequest struct {
	method, path, session, body string
}

// TestGitHubAPIThroughTheModel: GitHub's REST API description (13 MB, 1,223 operations, from npm's
// @octokit/openapi) is served by the reference Company as a second OpenAPI API. The model pages
// through its operations in pages of at most ListPageBytes, filters them by tag, path prefix and
// words, describes one in full, and calls it: the signed request reaches the handler at the
// API's server URL. The description is fetched once for all of it (spec 7, 5.2).
func TestGitHubAPIThroughTheModel(t *testing.T) {
	data := poppytest.NeedGitHubDescription(t)
	f := newFixture(t, fopts{})
	var mu sync.Mutex
	var got []githubRequest
	descURL, err := f.s.AddOpenAPI("/github", data, "GitHub's REST API", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, githubRequest{r.Method, r.URL.Path, r.Header.Get("Poppy-Session"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"number":1347,"state":"open","title":"Found a bug"}`))
	}))
	if err != nil {
		t.Fatal(err)
	}
	f.mustCall(t, modelapi.ToolDiscoverCompany, map[string]any{"domain": f.s.Domain})
	list := func(args map[string]any) reply {
		t.Helper()
		args["company"], args["api"] = f.s.Domain, descURL
		r := f.mustCall(t, modelapi.ToolListAPIOperations, args)
		if r.IsError {
			t.Fatalf("list %v: %s", args, r.Raw)
		}
		return r
	}
	lines := func(r reply) []string {
		env, _ := r.SC[modelapi.EnvelopeKey].(map[string]any)
		d, _ := env["data"].(map[string]any)
		return strSlice(d["operations"])
	}

	// Every operation once, page by page, each page within its budget.
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		args := map[string]any{"limit": 200}
		if cursor != "" {
			args["cursor"] = cursor
		}
		r := list(args)
		pages++
		size := 0
		for _, l := range lines(r) {
			id := strings.Fields(l)[0]
			if seen[id] {
				t.Fatalf("%s listed twice", id)
			}
			seen[id] = true
			size += len(l)
		}
		if size > modelapi.ListPageBytes || len(r.Raw) > 4*modelapi.ListPageBytes {
			t.Fatalf("page %d: %d bytes of lines, a %d-byte result", pages, size, len(r.Raw))
		}
		cursor, _ = r.SC["next_cursor"].(string)
		if cursor == "" {
			break
		}
	}
	if len(seen) != 1223 || pages < 4 {
		t.Fatalf("%d operations in %d pages", len(seen), pages)
	}

	filters := []struct {
		name    string
		args    map[string]any
		want    string // an operation_id that must be listed
		all     func(line string) bool
		matched int // 0: any
	}{
		{"tag", map[string]any{"tag": "issues", "limit": 200}, "issues/create", func(l string) bool { return strings.Contains(l, "issues") }, 0},
		{"path prefix", map[string]any{"path_prefix": "/repos/{owner}/{repo}/issues/{issue_number}/comments"}, "issues/list-comments",
			func(l string) bool {
				return strings.Contains(l, " /repos/{owner}/{repo}/issues/{issue_number}/comments")
			}, 0},
		{"words", map[string]any{"query": "Create an ISSUE"}, "issues/create", func(l string) bool {
			l = strings.ToLower(l)
			return strings.Contains(l, "create") && strings.Contains(l, "an") && strings.Contains(l, "issue")
		}, 0},
		{"nothing", map[string]any{"query": "no-such-operation-anywhere"}, "", nil, -1},
	}
	for _, tc := range filters {
		t.Run(tc.name, func(t *testing.T) {
			r := list(tc.args)
			ls := lines(r)
			if tc.matched < 0 {
				if len(ls) != 0 || r.SC["matched"] != float64(0) || !strings.Contains(r.message(), "No operation matches") {
					t.Fatalf("%s", r.Raw)
				}
				return
			}
			if !slices.ContainsFunc(ls, func(l string) bool { return strings.HasPrefix(l, tc.want+" ") }) {
				t.Fatalf("%s not in %v", tc.want, ls)
			}
			for _, l := range ls {
				if !tc.all(l) {
					t.Fatalf("%q passed the filter %v", l, tc.args)
				}
			}
		})
	}
	if r, _ := f.call(t, modelapi.ToolListAPIOperations, map[string]any{"company": f.s.Domain, "api": descURL, "tag": "issues", "cursor": "50.bogus"}); !r.IsError || r.status() != "refused" {
		t.Fatalf("a foreign cursor: %s", r.Raw)
	}

	r := f.mustCall(t, modelapi.ToolDescribeAPIOperation, map[string]any{"company": f.s.Domain, "api": descURL, "operation_id": "issues/create"})
	if r.IsError || !strings.Contains(r.Raw, `"assignees"`) || !strings.Contains(r.Raw, `"name":"owner"`) || !strings.Contains(r.Raw, `"server_url":"`+f.s.Origin()+`/github"`) {
		t.Fatalf("describe: %.2000s", r.Raw)
	}
	r = f.mustCall(t, modelapi.ToolDescribeAPIOperation, map[string]any{"company": f.s.Domain, "api": descURL, "operation_id": "issues/create", "schemas": []string{"issue", "nope"}})
	if r.IsError || !strings.Contains(r.Raw, `"issue":{`) || !strings.Contains(r.message(), "no schema nope") {
		t.Fatalf("describe schemas: %.2000s", r.Raw)
	}

	r = f.mustCall(t, modelapi.ToolCallAPIOperation, map[string]any{"company": f.s.Domain, "api": descURL, "operation_id": "issues/create",
		"path_params": map[string]any{"owner": "octocat", "repo": "hello-world"}, "body": map[string]any{"title": "Found a bug"}})
	if r.IsError || r.status() != modelapi.StatusPerformed || !strings.Contains(r.Raw, "1347") {
		t.Fatalf("call: %s", r.Raw)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].method != "POST" || got[0].path != "/github/repos/octocat/hello-world/issues" || got[0].session == "" {
		t.Fatalf("the handler received %+v", got)
	}
	var body map[string]any
	if json.Unmarshal([]byte(got[0].body), &body) != nil || body["title"] != "Found a bug" {
		t.Fatalf("body %q", got[0].body)
	}
	if n := len(f.s.RequestsTo(refcompany.ShopHost, "/github/openapi.json")); n != 1 {
		t.Fatalf("the description was fetched %d times, want once", n)
	}
}

// TestListManyTags: an API with more tags than fit in ListTagBytes (here 300, as Microsoft
// Graph has hundreds) gets a first page of bounded size that lists the tags with the most
// operations and says how many there are and how to find the others; a second page lists no
// tags.
func TestListManyTags(t *testing.T) {
	paths := map[string]any{}
	for i := range 300 {
		tag := fmt.Sprintf("group-%03d", i)
		for j := range 1 + i%4 {
			paths[fmt.Sprintf("/%s/%d", tag, j)] = map[string]any{"get": map[string]any{"operationId": fmt.Sprintf("%s-%d", tag, j), "tags": []string{tag},
				"summary": "Read one thing", "responses": map[string]any{"200": map[string]any{"description": "ok"}}}}
		}
	}
	doc, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Many tags", "version": "1"}, "paths": paths})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fopts{})
	descURL, err := f.s.AddOpenAPI("/many", doc, "An API with many tags", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.mustCall(t, modelapi.ToolDiscoverCompany, map[string]any{"domain": f.s.Domain})
	data := func(r reply) map[string]any {
		env, _ := r.SC[modelapi.EnvelopeKey].(map[string]any)
		d, _ := env["data"].(map[string]any)
		return d
	}
	r := f.mustCall(t, modelapi.ToolListAPIOperations, map[string]any{"company": f.s.Domain, "api": descURL})
	d := data(r)
	tags := strSlice(d["tags"])
	b, _ := json.Marshal(tags)
	if r.IsError || d["tags_total"] != float64(300) || len(tags) < 50 || len(tags) == 300 || len(b) > modelapi.ListTagBytes {
		t.Fatalf("first page: %d tags (%d bytes), tags_total %v: %s", len(tags), len(b), d["tags_total"], r.Raw)
	}
	last := 4 // the most operations a tag has here
	for _, tg := range tags {
		var n int
		if _, err := fmt.Sscanf(tg[strings.LastIndex(tg, "("):], "(%d)", &n); err != nil || n > last {
			t.Fatalf("tag %q listed after a tag with fewer operations: %q", tg, tags)
		}
		last = n
	}
	if !strings.Contains(r.message(), "The API has 300 tags") || !strings.Contains(r.message(), "query or path_prefix") {
		t.Fatalf("message %q", r.message())
	}
	r = f.mustCall(t, modelapi.ToolListAPIOperations, map[string]any{"company": f.s.Domain, "api": descURL, "cursor": r.SC["next_cursor"]})
	if d := data(r); r.IsError || d["tags"] != nil || d["tags_total"] != nil || strings.Contains(r.message(), "tags") {
		t.Fatalf("second page: %s", r.Raw)
	}
}
