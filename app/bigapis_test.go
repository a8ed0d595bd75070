package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// bigAPIs is a Host whose reference Company also lists GitHub's REST description (1,223
// operations) and one of Microsoft Graph v1.0's size (19.4 MiB, 11,422 operations), with the
// official MCP client connected to its model server.
type bigAPIs struct {
	f             *apptest.Fixture
	cs            *mcp.ClientSession
	github, graph string // the descriptions' URLs
}

func startBigAPIs(tb testing.TB) *bigAPIs {
	tb.Helper()
	github := poppytest.NeedGitHubDescription(tb)
	graph := poppytest.NeedGraphSizedDescription(tb)
	f := apptest.Start(tb, apptest.Options{})
	x := &bigAPIs{f: f}
	var err error
	if x.github, err = f.Company.AddOpenAPI("/github", github, "GitHub's REST API", nil); err != nil {
		tb.Fatal(err)
	}
	if x.graph, err = f.Company.AddOpenAPI("/graph", graph, "An API of Microsoft Graph v1.0's size", nil); err != nil {
		tb.Fatal(err)
	}
	f.Discover(tb)
	x.cs = f.Model(tb, "bench")
	return x
}

// BenchmarkBigAPIs: the model's tools through its MCP interface (the official MCP client on the
// Host's model server) on a Company that lists GitHub's REST description and one of Microsoft
// Graph v1.0's size, warm (each description fetched and indexed once before). A page of
// list_api_operations (the first, and one filtered by words) and describe_api_operation are
// measured against a trivial call (get_approval of an unknown approval: the MCP round trip and
// one indexed read), and describe_company against describe_company of the same reference
// Company without the big APIs, on a second Host. The process holds both descriptions twice
// (the Company serving them, Poppydesk's index of them), so each ratio compares the calls' CPU
// time with the garbage collector run between turns (benchratio.RunCPUCollected), and the table
// gives what each side allocates.
func BenchmarkBigAPIs(b *testing.B) {
	x := startBigAPIs(b)
	small := apptest.Start(b, apptest.Options{})
	small.Discover(b)
	smallCS := small.Model(b, "bench")
	domain := x.f.Company.Domain
	op := func(cs *mcp.ClientSession, name string, args map[string]any) func(b *testing.B) {
		return func(b *testing.B) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError && name != modelapi.ToolGetApproval {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
		}
	}
	trivial := op(x.cs, modelapi.ToolGetApproval, map[string]any{"approval_id": "apr_unknown"})
	calls := []struct {
		name string
		args map[string]any
	}{
		{"list github", map[string]any{"company": domain, "api": x.github}},
		{"list graph", map[string]any{"company": domain, "api": x.graph}},
		{"list graph query", map[string]any{"company": domain, "api": x.graph, "query": "issue comment"}},
		{"describe github", map[string]any{"company": domain, "api": x.github, "operation_id": "issues/create"}},
		{"describe graph", map[string]any{"company": domain, "api": x.graph, "operation_id": "v9.issues/create"}},
	}
	for _, c := range calls {
		tool := modelapi.ToolListAPIOperations
		if _, ok := c.args["operation_id"]; ok {
			tool = modelapi.ToolDescribeAPIOperation
		}
		callTool(b, x.cs, tool, c.args) // warm
		benchratio.RunCPUCollected(b, c.name, "trivial call", op(x.cs, tool, c.args), trivial)
	}
	args := map[string]any{"company": domain}
	callTool(b, x.cs, modelapi.ToolDescribeCompany, args)
	callTool(b, smallCS, modelapi.ToolDescribeCompany, map[string]any{"company": small.Company.Domain})
	benchratio.RunCPUCollected(b, "describe_company with big APIs", "without",
		op(x.cs, modelapi.ToolDescribeCompany, args), op(smallCS, modelapi.ToolDescribeCompany, map[string]any{"company": small.Company.Domain}))
}

// TestBigAPIParsedOncePerVersion: the model's tools that read a Company listing GitHub's REST
// description (describe_company, list_api_operations with and without filters and a second
// page, describe_api_operation, list_companies, discover_company) parse it once, at discovery,
// and again not when it is revalidated (304), however many calls name the Company: discovery,
// every tool call and the approval queue read the one index built per version.
func TestBigAPIParsedOncePerVersion(t *testing.T) {
	data := poppytest.NeedGitHubDescription(t)
	f := apptest.Start(t, apptest.Options{})
	u, err := f.Company.AddOpenAPI("/github", data, "GitHub's REST API", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Discover(t)
	cs := f.Model(t, "test")
	domain := f.Company.Domain
	parses := func() int {
		n := 0
		for _, l := range strings.Split(f.Logs.String(), "\n") {
			if strings.Contains(l, `parsed an API description"`) && strings.Contains(l, u) {
				n++
			}
		}
		return n
	}
	calls := func() {
		callTool(t, cs, modelapi.ToolDescribeCompany, map[string]any{"company": domain})
		page := callTool(t, cs, modelapi.ToolListAPIOperations, map[string]any{"company": domain, "api": u})
		callTool(t, cs, modelapi.ToolListAPIOperations, map[string]any{"company": domain, "api": u, "cursor": page["next_cursor"]})
		callTool(t, cs, modelapi.ToolListAPIOperations, map[string]any{"company": domain, "api": u, "tag": "issues", "query": "comment"})
		callTool(t, cs, modelapi.ToolDescribeAPIOperation, map[string]any{"company": domain, "api": u, "operation_id": "issues/create"})
		callTool(t, cs, modelapi.ToolListCompanies, map[string]any{})
		callTool(t, cs, modelapi.ToolDiscoverCompany, map[string]any{"domain": domain})
	}
	calls()
	if n := parses(); n != 1 {
		t.Fatalf("GitHub's description was parsed %d times, want once", n)
	}
	f.Clock.Advance(301 * time.Second) // stale: revalidated, 304
	calls()
	if n := parses(); n != 1 {
		t.Fatalf("after its revalidation GitHub's description was parsed %d times in all, want once", n)
	}
}
