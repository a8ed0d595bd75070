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

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/browser"
)

// envCLIMain makes the test binary run the command line with its arguments (the `poppydesk`
// an MCP client launches).
const envCLIMain = "POPPYDESK_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envCLIMain) == "1" {
		os.Exit(Run(context.Background(), os.Args[1:], Env{Version: "test", Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

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
	cmd := exec.Command(m.node, append([]string{m.tsClient}, server...)...)
	cmd.Env = append(os.Environ(), envCLIMain+"=1")
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
	a := f.Host.Fronts().Approvals
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
	clk := &poppytest.Clock{}
	srv, err := poppytest.New(poppytest.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)), &tls.Config{ServerName: poppytest.ShopHost, RootCAs: srv.CA().Pool()})
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
	call("list_mcp_tools", map[string]any{"company": dom}, "ok")
	call("call_api_operation", map[string]any{"company": dom, "operation_id": "listProducts"}, "performed")
	res := call("call_api_operation", map[string]any{"company": dom, "operation_id": "exchangeItem", "path_params": map[string]any{"id": "ord_7Hk2"},
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
			t.Fatalf("the wait did not end after notifications/cancelled: %+v", f.Host.Fronts().Activity.List(10))
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

	call("browser_open", map[string]any{"company": dom, "url": f.Company.URL(poppytest.ShopHost, "/account")}, "ok")
	call("browser_open", map[string]any{"company": dom, "url": f.Company.URL(poppytest.ShopHost, "/login")}, "ok")
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
	for _, e := range f.Host.Fronts().Activity.List(50) {
		if e.Tool == "wait_for_approval" && e.Status == "cancelled" {
			return true
		}
	}
	return false
}
