//go:build unix

package cli

// MCP clients nobody here wrote, against `poppydesk mcp` on a running Host: the MCP Inspector CLI
// and the official TypeScript SDK client (e2e/mcp, installed by scripts/bootstrap.sh). The
// `poppydesk mcp` they launch is this test binary (TestMain runs the command line when
// envCLIMain is set). Every structuredContent they receive is validated against its tool's
// outputSchema with a JSON Schema validator (santhosh-tekuri/jsonschema, draft 2020-12); the
// TypeScript SDK validates each one itself too (Ajv, draft-07).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/browser"
)

// mcpTools are the installed test clients and servers (e2e/mcp/node_modules).
type mcpTools struct {
	node, dir     string
	inspector     string // the Inspector's CLI
	tsClient      string // e2e/mcp/client.mjs
	everything    string // server-everything's entry point
	loopbackShim  string // e2e/mcp/loopback.mjs
	inspectorHome string
}

// needMCPTools finds node and the packages of e2e/mcp, or skips (fails with
// POPPYDESK_REQUIRE_E2E=1): they are installed at setup, never downloaded here.
func needMCPTools(t *testing.T) mcpTools {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "e2e", "mcp")
	m := mcpTools{dir: dir,
		inspector:    filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js"),
		tsClient:     filepath.Join(dir, "client.mjs"),
		everything:   filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		loopbackShim: filepath.Join(dir, "loopback.mjs"),
	}
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node"
	}
	for _, p := range []string{m.inspector, m.everything, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")} {
		if _, err := os.Stat(p); err != nil && missing == "" {
			missing = p
		}
	}
	if missing != "" {
		msg := "needs " + missing + ": run scripts/bootstrap.sh (npm ci in e2e/mcp installs the MCP Inspector, the TypeScript SDK and server-everything)"
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_E2E=1 but the test " + msg)
		}
		t.Skip(msg)
	}
	m.node = node
	m.inspectorHome = t.TempDir()
	return m
}

// poppydeskMCP is the command an MCP client launches: `poppydesk mcp --socket PATH --no-start`.
func poppydeskMCP(socket string) []string {
	return []string{os.Args[0], "mcp", "--socket", socket, "--no-start"}
}

// inspectorCall runs the Inspector CLI once (`--cli` output as JSON) against `poppydesk mcp`.
func (m mcpTools) inspectorCall(t *testing.T, socket string, args ...string) (map[string]any, string) {
	t.Helper()
	argv := append([]string{m.inspector, "--format", "json", "-e", envCLIMain + "=1"}, args...)
	argv = append(append(argv, "--"), poppydeskMCP(socket)...)
	cmd := exec.Command(m.node, argv...)
	cmd.Env = append(os.Environ(), "HOME="+m.inspectorHome, "MCP_CATALOG_PATH="+filepath.Join(m.inspectorHome, "mcp.json"),
		"MCP_CLIENT_CONFIG_PATH="+filepath.Join(m.inspectorHome, "client.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out map[string]any
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); jerr != nil {
		t.Fatalf("the Inspector printed no JSON (%v, exit %v): stdout %q, stderr %q", jerr, err, stdout.String(), stderr.String())
	}
	return out, stderr.String()
}

// tsClient is the TypeScript SDK client (e2e/mcp/client.mjs) connected to `poppydesk mcp`.
type tsClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
}

func (m mcpTools) startTSClient(t *testing.T, server ...string) (*tsClient, map[string]any) {
	t.Helper()
	return m.startTSClientEnv(t, append(os.Environ(), envCLIMain+"=1"), server...)
}

// startTSClientEnv starts the client with the environment env and returns its first line.
func (m mcpTools) startTSClientEnv(t *testing.T, env []string, args ...string) (*tsClient, map[string]any) {
	t.Helper()
	cmd := exec.Command(m.node, append([]string{m.tsClient}, args...)...)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &tsClient{t: t, cmd: cmd, in: in, out: bufio.NewScanner(pr), stderr: &syncBuffer{}}
	c.out.Buffer(make([]byte, 0, 1<<20), 64<<20)
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c, c.next()
}

// next reads the client's next answer line.
func (c *tsClient) next() map[string]any {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("the TypeScript client ended: %v; stderr:\n%s", c.out.Err(), c.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
		c.t.Fatalf("the TypeScript client printed %q: %v", c.out.Text(), err)
	}
	return m
}

// send writes one command.
func (c *tsClient) send(cmd map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// call calls a tool and returns its result (progress lines are skipped).
func (c *tsClient) call(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	c.send(map[string]any{"op": "call", "tool": tool, "args": args})
	for {
		a := c.next()
		if _, ok := a["progress"]; ok {
			continue
		}
		if e, ok := a["error"]; ok {
			c.t.Fatalf("%s: the TypeScript client failed: %v", tool, e)
		}
		return a["result"].(map[string]any)
	}
}

// outputSchemas compiles every tool's outputSchema from a tools/list result and checks that
// every input property has a JSON Schema type.
type outputSchemas struct {
	mu        sync.Mutex
	schemas   map[string]*jsonschema.Schema
	validated map[string]int
}

func compileSchemas(t *testing.T, tools []any) *outputSchemas {
	t.Helper()
	s := &outputSchemas{schemas: map[string]*jsonschema.Schema{}, validated: map[string]int{}}
	c := jsonschema.NewCompiler()
	for _, x := range tools {
		tool := x.(map[string]any)
		name := tool["name"].(string)
		in, _ := tool["inputSchema"].(map[string]any)
		checkTyped(t, name, "inputSchema", in)
		out, ok := tool["outputSchema"]
		if !ok {
			t.Errorf("%s has no outputSchema", name)
			continue
		}
		b, _ := json.Marshal(out)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		url := "mem://" + name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s: the outputSchema does not compile: %v", name, err)
		}
		s.schemas[name] = sch
	}
	return s
}

// checkTyped fails for a property of an input schema without a type: a client that converts
// arguments by their schema type (the Inspector CLI) sends an untyped one as a string.
func checkTyped(t *testing.T, tool, path string, s map[string]any) {
	t.Helper()
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		pm, _ := p.(map[string]any)
		if _, ok := pm["type"]; !ok {
			t.Errorf("%s: %s.properties.%s has no type", tool, path, name)
		}
		checkTyped(t, tool, path+".properties."+name, pm)
	}
}

// validate validates a tool result's structuredContent against the tool's outputSchema.
func (s *outputSchemas) validate(t *testing.T, tool string, result map[string]any) {
	t.Helper()
	sc, ok := result["structuredContent"]
	if !ok {
		t.Errorf("%s returned no structuredContent: %v", tool, result)
		return
	}
	sch := s.schemas[tool]
	if sch == nil {
		t.Errorf("%s: no schema", tool)
		return
	}
	b, _ := json.Marshal(sc)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: structuredContent does not follow its outputSchema: %v\n%s", tool, err, b)
	}
	s.mu.Lock()
	s.validated[tool]++
	s.mu.Unlock()
}

func (s *outputSchemas) report(t *testing.T) (tools, results int) {
	var names []string
	for n, c := range s.validated {
		names = append(names, fmt.Sprintf("%s:%d", n, c))
		results += c
	}
	sort.Strings(names)
	t.Logf("validated %d structuredContent of %d tools: %s", results, len(s.validated), strings.Join(names, " "))
	return len(s.validated), results
}

// status is a result's structuredContent status.
func status(result map[string]any) string {
	sc, _ := result["structuredContent"].(map[string]any)
	s, _ := sc["status"].(string)
	return s
}

func sc(result map[string]any) map[string]any {
	m, _ := result["structuredContent"].(map[string]any)
	return m
}

// TestInspectorCLI: the MCP Inspector CLI lists the tools and calls them with typical arguments
// given as key=value (which it converts by each property's schema type), including an API
// operation with a JSON body whose approval is then given in the window and waited for.
func TestInspectorCLI(t *testing.T) {
	m := needMCPTools(t)
	f := apptest.Start(t, apptest.Options{Socket: true})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	socket := f.Host.Socket()

	start := time.Now()
	list, _ := m.inspectorCall(t, socket, "--method", "tools/list")
	t.Logf("tools/list through the Inspector took %s", time.Since(start).Round(time.Millisecond))
	tools, _ := list["result"].(map[string]any)["tools"].([]any)
	if len(tools) < 21 {
		t.Fatalf("the Inspector lists %d tools: %v", len(tools), list)
	}
	schemas := compileSchemas(t, tools)
	calls := 0
	call := func(tool string, kv ...string) map[string]any {
		t.Helper()
		args := []string{"--method", "tools/call", "--tool-name", tool}
		if len(kv) > 0 {
			args = append(append(args, "--tool-arg"), kv...)
		}
		out, errs := m.inspectorCall(t, socket, args...)
		res, ok := out["result"].(map[string]any)
		if !ok {
			t.Fatalf("%s through the Inspector: %v (stderr %s)", tool, out, errs)
		}
		calls++
		schemas.validate(t, tool, res)
		t.Logf("%s -> %s: %v", tool, status(res), sc(res)["message"])
		return res
	}
	want := func(res map[string]any, st string) {
		t.Helper()
		if status(res) != st {
			t.Fatalf("status %q, want %q: %v", status(res), st, res)
		}
	}
	dom := f.Company.Domain
	want(call("discover_company", "domain="+dom), "ok")
	res := call("list_companies")
	want(res, "ok")
	cos, _ := sc(res)["companies"].([]any)
	if len(cos) != 1 || !strings.Contains(fmt.Sprint(cos[0]), "personal") || !strings.Contains(fmt.Sprint(cos[0]), f.Company.Identifier()) {
		t.Fatalf("list_companies: %v", sc(res))
	}
	want(call("describe_company", "company="+dom), "ok")
	want(call("list_api_operations", "company="+dom), "ok")
	// A listing a page at a time: filtered by path prefix, one operation a page, then the next.
	res = call("list_api_operations", "company="+dom, "path_prefix=/orders", "limit=1")
	want(res, "ok")
	cursor, _ := sc(res)["next_cursor"].(string)
	if cursor == "" || sc(res)["matched"] != float64(3) {
		t.Fatalf("list_api_operations by path prefix: %v", sc(res))
	}
	want(call("list_api_operations", "company="+dom, "path_prefix=/orders", "limit=1", "cursor="+cursor), "ok")
	want(call("list_api_operations", "company="+dom, "tag=orders", "query=exchange"), "ok")
	want(call("describe_api_operation", "company="+dom, "operation_id=exchangeItem", "api="+f.Company.URL(refcompany.ShopHost, "/api/openapi.json")), "ok")
	want(call("describe_api_operation", "company="+dom, "operation_id=getOrder", `schemas=["Order","Money"]`), "ok")
	want(call("list_mcp_tools", "company="+dom), "ok")
	want(call("call_api_operation", "company="+dom, "operation_id=listOrders"), "performed")
	// The body as the Inspector sends it: a key=value whose value it parses as JSON because the
	// schema says "object".
	res = call("call_api_operation", "company="+dom, "operation_id=exchangeItem", `path_params={"id":"ord_7Hk2"}`,
		`body={"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`, `intent={"replacement_sku":"stormline-insulated-m"}`)
	want(res, "waiting_for_user")
	id, _ := sc(res)["approval_id"].(string)
	want(call("get_approval", "approval_id="+id), "waiting_for_user")
	want(call("wait_for_approval", "approval_id="+id, "timeout_seconds=1"), "waiting_for_user")
	approve(t, f, id)
	res = call("wait_for_approval", "approval_id="+id, "timeout_seconds=30")
	want(res, "performed")
	if !strings.Contains(fmt.Sprint(res), "Exchange confirmed") {
		t.Fatalf("the Company's response is not in the result: %v", res)
	}
	want(call("get_approval", "approval_id="+id), "performed")
	want(call("call_mcp_tool", "company="+dom, "tool=search_products", `arguments={"query":"insulated"}`), "performed")
	want(call("request_sign_in", "company="+dom, `scopes=["orders:read"]`, "reason=To list your orders, as you asked."), "asked_user")
	want(call("start_conversation", "company="+dom, "text=Which jacket is warmer?", "wait_seconds=1"), "ok")
	want(call("recent_activity", "limit=5"), "ok")
	// Refusals say nothing was done.
	res = call("get_approval", "approval_id="+id, "approved=true")
	if status(res) != "refused" || !strings.Contains(fmt.Sprint(sc(res)["message"]), "Nothing was done") {
		t.Fatalf("an unknown argument: %v", res)
	}
	n, v := schemas.report(t)
	t.Logf("Inspector CLI: %d tools listed, %d calls, %d structuredContent of %d tools validated", len(tools), calls, v, n)
}

// approve approves the approval's current revision in the window (the Approvals front).
func approve(t *testing.T, f *apptest.Fixture, id string) {
	t.Helper()
	a := f.Fronts().Approvals
	it, err := a.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Approve(id, it.Current.Revision, it.Current.Digest)
	if err != nil || out.Status != "done" {
		t.Fatalf("approving in the window: %+v %v", out, err)
	}
}

// startCompanyForBrowser starts the reference Company and a Host over it whose controlled
// browser trusts the Company's certificate (as the demo's does), so the browser tools run.
func startCompanyForBrowser(t *testing.T) *apptest.Fixture {
	t.Helper()
	clk := &refcompany.Clock{}
	srv, err := refcompany.New(refcompany.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)), &tls.Config{ServerName: refcompany.ShopHost, RootCAs: srv.CA().Pool()})
	if err != nil {
		t.Fatal(err)
	}
	spki := browser.SPKIHash(conn.ConnectionState().PeerCertificates[0])
	conn.Close()
	return apptest.Start(t, apptest.Options{Company: srv, Clock: clk, Socket: true,
		Edit: func(c *app.Config) { c.Browser.TrustSPKI = []string{spki} }})
}

// TestTypeScriptSDKClientOnHost: the official TypeScript SDK client, through `poppydesk mcp`,
// calls every tool with typical arguments (the SDK validates each structuredContent against its
// outputSchema, and so does this test); a wait for an approval sends progress, is cancelled at
// once by notifications/cancelled without changing the approval, and after the user approves in
// the window a second wait returns performed.
func TestTypeScriptSDKClientOnHost(t *testing.T) {
	m := needMCPTools(t)
	f := startCompanyForBrowser(t)
	f.SignIn(t, "personal", "orders:read", "orders:write")
	c, hello := m.startTSClient(t, poppydeskMCP(f.Host.Socket())...)
	if hello["connected"] != true {
		t.Fatalf("the TypeScript SDK did not connect: %v", hello)
	}
	c.send(map[string]any{"op": "list"})
	list := c.next()
	tools, _ := list["tools"].([]any)
	instructions, _ := list["instructions"].(string)
	if len(tools) < 21 || !strings.Contains(instructions, "- performed:") || !strings.Contains(instructions, "- declined:") {
		t.Fatalf("tools/list: %d tools, instructions %q", len(tools), instructions)
	}
	schemas := compileSchemas(t, tools)
	calls := 0
	call := func(tool string, args map[string]any, want ...string) map[string]any {
		t.Helper()
		res := c.call(tool, args)
		calls++
		schemas.validate(t, tool, res)
		t.Logf("%s -> %s: %.160v %.300v", tool, status(res), sc(res)["message"], sc(res)["detail"])
		if len(want) > 0 && !slices.Contains(want, status(res)) {
			t.Fatalf("%s: status %q, want one of %v: %v", tool, status(res), want, res)
		}
		return res
	}
	dom := f.Company.Domain
	call("list_companies", map[string]any{}, "ok")
	call("discover_company", map[string]any{"domain": dom}, "ok")
	call("describe_company", map[string]any{"company": dom}, "ok")
	call("list_api_operations", map[string]any{"company": dom}, "ok")
	res := call("list_api_operations", map[string]any{"company": dom, "path_prefix": "/orders", "limit": 2}, "ok")
	cursor, _ := sc(res)["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("list_api_operations by path prefix: %v", sc(res))
	}
	call("list_api_operations", map[string]any{"company": dom, "path_prefix": "/orders", "limit": 2, "cursor": cursor}, "ok")
	call("list_api_operations", map[string]any{"company": dom, "tag": "orders", "query": "exchange item"}, "ok")
	call("describe_api_operation", map[string]any{"company": dom, "api": f.Company.URL(refcompany.ShopHost, "/api/openapi.json"), "operation_id": "getOrder"}, "ok")
	call("describe_api_operation", map[string]any{"company": dom, "operation_id": "getOrder", "schemas": []any{"Order", "Money"}}, "ok")
	call("list_mcp_tools", map[string]any{"company": dom}, "ok")
	call("call_api_operation", map[string]any{"company": dom, "operation_id": "listProducts"}, "performed")
	res = call("call_api_operation", map[string]any{"company": dom, "operation_id": "exchangeItem", "path_params": map[string]any{"id": "ord_7Hk2"},
		"body": map[string]any{"item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m"}}, "waiting_for_user")
	id, _ := sc(res)["approval_id"].(string)
	call("get_approval", map[string]any{"approval_id": id}, "waiting_for_user")

	// A long wait, cancelled by the client as soon as it reports progress.
	c.send(map[string]any{"op": "call", "tool": "wait_for_approval", "args": map[string]any{"approval_id": id, "timeout_seconds": 300},
		"progress": true, "abortOnProgress": true})
	if p := c.next(); p["progress"] == nil {
		t.Fatalf("no progress before the cancellation: %v", p)
	}
	if a := c.next(); a["error"] == nil {
		t.Fatalf("the cancelled wait returned %v", a)
	}
	// The server's wait ended at once (long before its 300 s), and the approval is unchanged.
	deadline := time.Now().Add(30 * time.Second)
	for !cancelledWait(f) {
		if time.Now().After(deadline) {
			t.Fatalf("the wait did not end after notifications/cancelled: %+v", f.Fronts().Activity.List(10))
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls++
	call("get_approval", map[string]any{"approval_id": id}, "waiting_for_user")

	// Another wait: progress comes, the user approves in the window, the wait returns performed.
	c.send(map[string]any{"op": "call", "tool": "wait_for_approval", "args": map[string]any{"approval_id": id, "timeout_seconds": 60}, "progress": true})
	progress := 0
	for {
		a := c.next()
		if p, ok := a["progress"].(map[string]any); ok {
			progress++
			if progress == 1 {
				if p["total"] != float64(60) || p["message"] == "" {
					t.Errorf("progress %v: want a total of 60 (seconds) and a message", p)
				}
				approve(t, f, id)
			}
			continue
		}
		r, _ := a["result"].(map[string]any)
		calls++
		schemas.validate(t, "wait_for_approval", r)
		if status(r) != "performed" || !strings.Contains(fmt.Sprint(r), "Exchange confirmed") {
			t.Fatalf("the wait after the approval: %v", a)
		}
		break
	}
	call("get_approval", map[string]any{"approval_id": id}, "performed")
	call("call_mcp_tool", map[string]any{"company": dom, "tool": "search_products", "arguments": map[string]any{"query": "insulated"}}, "performed")
	call("request_sign_in", map[string]any{"company": dom, "scopes": []any{"orders:read"}, "reason": "To list your orders."}, "asked_user")

	res = call("start_conversation", map[string]any{"company": dom, "text": "Which jacket is warmer?", "wait_seconds": 1}, "ok")
	conv, _ := sc(res)["conversation"].(map[string]any)
	cid, _ := conv["conversation_id"].(string)
	call("send_conversation_message", map[string]any{"company": dom, "conversation_id": cid, "text": "And in size M?", "wait_seconds": 1}, "ok")
	call("read_conversation", map[string]any{"company": dom, "conversation_id": cid, "wait_seconds": 0}, "ok")
	call("hand_off_conversation", map[string]any{"company": dom, "conversation_id": cid}, "ok")
	call("close_conversation", map[string]any{"company": dom, "conversation_id": cid}, "ok")

	call("browser_open", map[string]any{"company": dom, "url": f.Company.URL(refcompany.ShopHost, "/account")}, "ok")
	call("browser_open", map[string]any{"company": dom, "url": f.Company.URL(refcompany.ShopHost, "/login")}, "ok")
	res = call("browser_read", map[string]any{"company": dom}, "ok")
	if !strings.Contains(fmt.Sprint(sc(res)), "login") {
		t.Fatalf("the login page has no login form: %v", sc(res))
	}
	call("browser_submit_form", map[string]any{"company": dom, "form": "login", "fields": map[string]any{"account": "visitor"}}, "ok")
	res = call("browser_screenshot", map[string]any{"company": dom}, "ok")
	if !strings.Contains(fmt.Sprint(res["content"]), "image/png") {
		t.Errorf("the screenshot has no image part: %.300v", res["content"])
	}
	call("browser_back", map[string]any{"company": dom}, "ok")
	call("list_excluded_tasks", map[string]any{"company": dom}, "ok")
	call("report_unsupported_task", map[string]any{"company": dom, "task": "Pay with a voucher", "description": "There is no voucher field."}, "ok")
	call("list_skills", map[string]any{"company": dom}, "ok")
	call("read_skill", map[string]any{"company": dom, "name": "exchange-an-item"}, "ok")
	call("recent_activity", map[string]any{"limit": 50}, "ok")

	n, v := schemas.report(t)
	if n != len(tools) {
		t.Errorf("%d of the %d tools were called", n, len(tools))
	}
	t.Logf("TypeScript SDK: %d tools listed, %d calls, %d structuredContent of %d tools validated, %d progress notifications in the approved wait", len(tools), calls, v, n, progress)
}

// cancelledWait reports whether the Host's activity shows a wait_for_approval that ended
// cancelled.
func cancelledWait(f *apptest.Fixture) bool {
	for _, e := range f.Fronts().Activity.List(50) {
		if e.Tool == "wait_for_approval" && e.Status == "cancelled" {
			return true
		}
	}
	return false
}

// TestMCPWithoutApp: `poppydesk mcp` that can neither reach nor start the app answers the
// client's initialize with a JSON-RPC error that says why and what to do, and exits non-zero;
// the MCP clients show that message instead of a closed connection.
func TestMCPWithoutApp(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.sock")
	initialize := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, c := range []struct {
		name  string
		args  []string
		words []string
	}{
		{"--no-start", []string{"--no-start"}, []string{"Poppydesk is not running: nothing answers at " + missing, "Start Poppydesk from your desktop's menu"}},
		// testEnv has no DISPLAY: the window is not even tried.
		{"no display", nil, []string{"Poppydesk is not running, and it cannot be started from here", "without a display", "Start Poppydesk from your desktop's menu"}},
	} {
		env := testEnv(t.TempDir())
		env.Stdin = strings.NewReader(initialize)
		code, out, errs := runCLI(t, env, append([]string{"mcp", "--socket", missing}, c.args...)...)
		if code != 1 || json.Unmarshal([]byte(out), &resp) != nil || string(resp.ID) != "7" || resp.Error.Code != CodeNotRunning || !strings.Contains(errs, resp.Error.Message) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errs)
		}
		for _, w := range c.words {
			if !strings.Contains(resp.Error.Message, w) {
				t.Errorf("%s: the answer lacks %q: %s", c.name, w, resp.Error.Message)
			}
		}
	}

	m := needMCPTools(t)
	// The TypeScript SDK client shows the message.
	c := exec.Command(m.node, append([]string{m.tsClient}, poppydeskMCP(missing)...)...)
	c.Env = append(os.Environ(), envCLIMain+"=1")
	b, _ := c.Output()
	if !strings.Contains(string(b), "Poppydesk is not running") || strings.Contains(string(b), `"connected":true`) {
		t.Fatalf("the TypeScript SDK client printed %s", b)
	}
	t.Logf("TypeScript SDK client: %s", bytes.TrimSpace(b))
	// And so does the Inspector CLI.
	argv := append([]string{m.inspector, "--format", "json", "-e", envCLIMain + "=1", "--method", "tools/list", "--"}, poppydeskMCP(missing)...)
	ic := exec.Command(m.node, argv...)
	ic.Env = append(os.Environ(), "HOME="+m.inspectorHome)
	ib, err := ic.CombinedOutput()
	if err == nil || !strings.Contains(string(ib), "Poppydesk is not running") {
		t.Fatalf("the Inspector CLI (%v) printed %s", err, ib)
	}
	t.Logf("Inspector CLI: %s", bytes.TrimSpace(ib))
}

// serveEverything runs the reference MCP server (@modelcontextprotocol/server-everything,
// Streamable HTTP) on a loopback port and serves it as a Company's MCP channel: behind a TLS
// reverse proxy at https://other.shop.localhost:PORT/mcp (the reference Company's host and CA),
// listed in the Company's poppy.json. It returns the channel's url and the proxy's count of
// requests and of requests without the Session header.
func serveEverything(t *testing.T, m mcpTools, f *apptest.Fixture) (url string, requests, unsigned func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, m.node, "--import", m.loopbackShim, m.everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.Dir = m.dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything did not start listening within 30 s")
	}
	target, _ := neturl.Parse("http://127.0.0.1:" + strconv.Itoa(port))
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // SSE answers pass through as they come
	// The Host's closing DELETE may come after the server stopped: answer it without a log line.
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	var mu sync.Mutex
	var n, missing int
	f.Company.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		if r.Header.Get("Poppy-Session") == "" {
			missing++
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	url = f.Company.URL(refcompany.OtherHost, "/mcp")
	f.Company.EditPoppyJSON(func(doc map[string]any) {
		if l, ok := doc["apis"].([]any); ok {
			doc["apis"] = append(l, map[string]any{"type": "mcp", "url": url, "description": "The reference MCP server (server-everything)"})
		}
	})
	count := func(p *int) func() int { return func() int { mu.Lock(); defer mu.Unlock(); return *p } }
	return url, count(&n), count(&missing)
}

// TestCompanyMCPResultsReachTheModel: with the reference MCP server from npm as a Company's MCP
// channel, its tool results reach the model's client whole, inside the untrusted envelope:
// images, embedded text and binary resources, resource links and structured content, and its
// progress notifications reach the client that asked for progress. Every request to it carries
// the Session header.
func TestCompanyMCPResultsReachTheModel(t *testing.T) {
	m := needMCPTools(t)
	f := apptest.Start(t, apptest.Options{Socket: true})
	srv, requests, unsigned := serveEverything(t, m, f)
	c, _ := m.startTSClient(t, poppydeskMCP(f.Host.Socket())...)
	c.send(map[string]any{"op": "list"})
	schemas := compileSchemas(t, c.next()["tools"].([]any))
	dom := f.Company.Domain
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res := c.call(tool, args)
		schemas.validate(t, tool, res)
		return res
	}
	if st := status(call("discover_company", map[string]any{"domain": dom})); st != "ok" {
		t.Fatalf("discover: %s", st)
	}
	res := call("list_mcp_tools", map[string]any{"company": dom, "server": srv})
	if status(res) != "ok" || !strings.Contains(fmt.Sprint(sc(res)), "get-tiny-image") {
		t.Fatalf("list_mcp_tools: %v", sc(res))
	}
	tool := func(name string, args map[string]any) (map[string]any, []any) {
		t.Helper()
		res := call("call_mcp_tool", map[string]any{"company": dom, "server": srv, "tool": name, "arguments": args})
		if status(res) != "performed" {
			t.Fatalf("%s: %v", name, sc(res))
		}
		parts, _ := res["content"].([]any)
		if p0, _ := parts[0].(map[string]any); !strings.HasPrefix(fmt.Sprint(p0["text"]), "Poppydesk: ") {
			t.Fatalf("%s: Poppydesk's words are not first: %v", name, parts)
		}
		if p1, _ := parts[1].(map[string]any); !strings.HasPrefix(fmt.Sprint(p1["text"]), "UNTRUSTED COMPANY CONTENT") {
			t.Fatalf("%s: the Company's content is not behind the warning: %v", name, parts)
		}
		return sc(res), parts[2:]
	}
	kinds := map[string]int{}
	// An image: an image part after the untrusted text, described in the envelope.
	s, parts := tool("get-tiny-image", map[string]any{})
	if len(parts) != 1 || parts[0].(map[string]any)["type"] != "image" || parts[0].(map[string]any)["mimeType"] != "image/png" ||
		len(fmt.Sprint(parts[0].(map[string]any)["data"])) < 1000 || !strings.Contains(fmt.Sprint(s), "Here's the image you requested") {
		t.Fatalf("get-tiny-image: %v %.300v", s, parts)
	}
	kinds["image"]++
	// An embedded text resource: in the envelope; a binary one: a resource part.
	s, _ = tool("get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1})
	if !strings.Contains(fmt.Sprint(s), "type:resource") || !strings.Contains(fmt.Sprint(s), "demo://resource/static/document/") && !strings.Contains(fmt.Sprint(s), "demo://") {
		t.Fatalf("get-resource-reference Text: %v", s)
	}
	kinds["resource (text)"]++
	_, parts = tool("get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 1})
	if len(parts) != 1 || parts[0].(map[string]any)["type"] != "resource" || parts[0].(map[string]any)["resource"].(map[string]any)["blob"] == nil {
		t.Fatalf("get-resource-reference Blob: %.500v", parts)
	}
	kinds["resource (blob)"]++
	_, parts = tool("get-resource-links", map[string]any{"count": 2})
	links := 0
	for _, p := range parts {
		if p.(map[string]any)["type"] == "resource_link" && p.(map[string]any)["uri"] != "" {
			links++
		}
	}
	if links != 2 {
		t.Fatalf("get-resource-links: %d links in %.500v", links, parts)
	}
	kinds["resource_link"] += links
	s, _ = tool("get-structured-content", map[string]any{"location": "Chicago"})
	if !strings.Contains(fmt.Sprint(s), "temperature") {
		t.Fatalf("get-structured-content: %v", s)
	}
	kinds["structured content"]++

	// The Company server's progress reaches the client that asked for it.
	c.send(map[string]any{"op": "call", "tool": "call_mcp_tool", "progress": true,
		"args": map[string]any{"company": dom, "server": srv, "tool": "trigger-long-running-operation", "arguments": map[string]any{"duration": 1, "steps": 3}}})
	var progress []any
	for {
		a := c.next()
		if p, ok := a["progress"]; ok {
			progress = append(progress, p)
			continue
		}
		r, _ := a["result"].(map[string]any)
		if status(r) != "performed" {
			t.Fatalf("the long-running operation: %v", a)
		}
		schemas.validate(t, "call_mcp_tool", r)
		break
	}
	// The server sends 3 steps; the last one can come after the result (notifications are
	// handled apart from the response), so at least the first must arrive, under the client's
	// token, increasing.
	if len(progress) < 1 || !strings.Contains(fmt.Sprint(progress[0]), "the Company's MCP server") ||
		progress[0].(map[string]any)["total"] != float64(3) {
		t.Fatalf("progress %v: want the Company server's steps of 3", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i].(map[string]any)["progress"].(float64) <= progress[i-1].(map[string]any)["progress"].(float64) {
			t.Fatalf("progress does not increase: %v", progress)
		}
	}
	if requests() == 0 || unsigned() != 0 {
		t.Fatalf("%d requests reached the Company's MCP server, %d without the Session header", requests(), unsigned())
	}
	_, v := schemas.report(t)
	t.Logf("content that reached the model: %v; %d progress notifications; %d requests to the MCP server, all with the Session header; %d structuredContent validated",
		kinds, len(progress), requests(), v)
}
