//go:build !desktop

package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bridgeCaller calls the window's bound services through the browser-testable bridge, as the
// frontend does.
type bridgeCaller struct {
	t      *testing.T
	c      *http.Client
	origin string
}

func (b *bridgeCaller) call(name string, out any, args ...any) string {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	body, _ := json.Marshal(map[string]any{"name": name, "args": args})
	req, _ := http.NewRequest("POST", b.origin+"/bridge/call", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
	if r.Error == "" && out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			b.t.Fatalf("%s result %s: %v", name, r.Result, err)
		}
	}
	return r.Error
}

// startWindow runs `poppydesk ARGS --e2e-listen` with env and returns a caller of its services.
func startWindow(t *testing.T, env Env, args ...string) *bridgeCaller {
	t.Helper()
	dist := filepath.Join(t.TempDir(), "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "index.html"), []byte("<html><head></head><body>x</body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	line, _ := startCLI(t, env, append(args, "--e2e-listen", "127.0.0.1:0", "--e2e-dist", dist)...)
	u := strings.TrimPrefix(line, "Open ")
	c := &http.Client{Jar: &cookieJar{}, Timeout: 60 * time.Second}
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return &bridgeCaller{t: t, c: c, origin: u[:strings.Index(u, "/?")]}
}

type demoItem struct {
	ID          string `json:"id"`
	CompanyName string `json:"companyName"`
	State       string `json:"state"`
	Decidable   bool   `json:"decidable"`
	Interface   string `json:"interface"`
	Current     struct {
		Revision, Digest string
	} `json:"current"`
}

// The demo wiring: the reference Company, the engine in dev mode, the queue and fronts.Approvals,
// reached the way the window reaches them. Both demo buttons produce a pending approval; only
// Approve (a window call) performs the exchange.
func TestDemoWindowApprovals(t *testing.T) {
	b := startWindow(t, testEnv(t.TempDir()), "demo")
	var status string
	b.call("fronts.Shell.Status", &status)
	if !strings.Contains(status, "connected to the reference Company Shop (reference Company)") {
		t.Errorf("status = %q", status)
	}
	var st struct {
		Available bool   `json:"available"`
		Demo      bool   `json:"demo"`
		Company   string `json:"demoCompany"`
	}
	b.call("fronts.Approvals.Status", &st)
	if !st.Available || !st.Demo || st.Company != "Shop (reference Company)" {
		t.Fatalf("approvals status = %+v", st)
	}
	var msg string
	if e := b.call("fronts.Approvals.StartDemoExchange", &msg, "api"); e != "" {
		t.Fatalf("demo exchange (API): %s", e)
	}
	var items []demoItem
	b.call("fronts.Approvals.List", &items)
	if len(items) != 1 || !items[0].Decidable || items[0].CompanyName != "Shop (reference Company)" || items[0].Interface != "api" {
		t.Fatalf("after the API request: %+v (message %q)", items, msg)
	}
	if e := b.call("fronts.Approvals.Get", &items[0], items[0].ID); e != "" { // as the window opens the row
		t.Fatalf("Get: %s", e)
	}
	var out struct {
		Status string `json:"status"`
		Body   string `json:"body"`
	}
	if e := b.call("fronts.Approvals.Approve", &out, items[0].ID, items[0].Current.Revision, "not-the-digest"); e == "" {
		t.Error("an approval with a digest the window never saw was accepted")
	}
	if e := b.call("fronts.Approvals.Approve", &out, items[0].ID, items[0].Current.Revision, items[0].Current.Digest); e != "" {
		t.Fatalf("approve: %s", e)
	}
	if out.Status != "done" || !strings.Contains(out.Body, "Exchange confirmed") {
		t.Errorf("outcome = %+v", out)
	}
	var shell []struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	}
	b.call("fronts.Shell.Sections", &shell)
	if shell[0].ID != "approvals" || shell[0].Count != 0 {
		t.Errorf("badge after the decision = %+v", shell[0])
	}
	// The item is exchanged now: the Company refuses a second exchange through its MCP server,
	// and its words reach the window.
	if e := b.call("fronts.Approvals.StartDemoExchange", &msg, "mcp"); e != "" {
		t.Fatalf("demo exchange (MCP): %s", e)
	}
	if !strings.Contains(msg, "already_exchanged") {
		t.Errorf("second exchange message = %q", msg)
	}
	if b.call("fronts.Approvals.List", &items); len(items) != 0 {
		t.Errorf("after the refused MCP request, open approvals: %+v", items)
	}
	var earlier struct {
		Items []demoItem `json:"items"`
	}
	if b.call("fronts.Approvals.Earlier", &earlier, "", 25); len(earlier.Items) != 1 || earlier.Items[0].State != "succeeded" {
		t.Errorf("after the refused MCP request, decided approvals: %+v", earlier.Items)
	}
}

// Without a reachable keyring the window still opens, and says why approvals are off.
func TestWindowWithoutKeyring(t *testing.T) {
	dir := t.TempDir()
	env := testEnv(dir)
	env.Secrets = nil
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "no-bus"))
	b := startWindow(t, env, "window")
	var st struct {
		Available bool   `json:"available"`
		Problem   string `json:"problem"`
	}
	b.call("fronts.Approvals.Status", &st)
	if st.Available || !strings.Contains(st.Problem, "Start a Secret Service") {
		t.Errorf("status = %+v", st)
	}
	// The window explains the Problem on its own screen (Shell.Info), not in the status line.
	var pinfo struct {
		Problem     string `json:"problem"`
		ProblemText string `json:"problemText"`
	}
	b.call("fronts.Shell.Info", &pinfo)
	if pinfo.Problem == "" || pinfo.ProblemText != st.Problem {
		t.Errorf("Info = %+v, want the Problem's kind and words", pinfo)
	}
	var info struct {
		Keyring string `json:"keyring"`
	}
	b.call("fronts.Shell.Info", &info)
	if info.Keyring != "not available" {
		t.Errorf("keyring chip = %q", info.Keyring)
	}
}

// The demo's "Run the example agent": the scripted agent runs in-process against the
// window's own model socket, asks for the exchange through the model interface, and waits; only
// the window's Approve performs it, after which the agent reports the outcome.
func TestDemoWindowExampleAgent(t *testing.T) {
	rtDir, err := os.MkdirTemp("", "pdrt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rtDir) })
	env := testEnv(t.TempDir())
	get := env.Getenv
	env.Getenv = func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return rtDir
		}
		return get(k)
	}
	b := startWindow(t, env, "demo")
	type run struct {
		Running bool     `json:"running"`
		Lines   []string `json:"lines"`
		Error   string   `json:"error"`
	}
	if e := b.call("fronts.Approvals.RunExampleAgent", nil); e != "" {
		t.Fatalf("RunExampleAgent: %s", e)
	}
	if e := b.call("fronts.Approvals.RunExampleAgent", nil); !strings.Contains(e, "already running") {
		t.Errorf("a second run while the first waits: %q", e)
	}
	var items []demoItem
	deadline := time.Now().Add(30 * time.Second)
	for len(items) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		b.call("fronts.Approvals.List", &items)
	}
	if len(items) != 1 || !items[0].Decidable || items[0].Interface != "api" {
		var r run
		b.call("fronts.Approvals.ExampleAgent", &r)
		t.Fatalf("no pending approval from the agent: %+v; agent %+v", items, r)
	}
	// The agent reports that it waits once its call has returned: wait for that line.
	var r run
	for deadline = time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b.call("fronts.Approvals.ExampleAgent", &r)
		if !r.Running || strings.Contains(strings.Join(r.Lines, "\n"), "waits for your decision") {
			break
		}
	}
	if !r.Running || !strings.Contains(strings.Join(r.Lines, "\n"), "waits for your decision") {
		t.Fatalf("before the decision the agent should wait: %+v", r)
	}
	var out struct {
		Status string `json:"status"`
	}
	if e := b.call("fronts.Approvals.Get", &items[0], items[0].ID); e != "" {
		t.Fatalf("Get: %s", e)
	}
	if e := b.call("fronts.Approvals.Approve", &out, items[0].ID, items[0].Current.Revision, items[0].Current.Digest); e != "" || out.Status != "done" {
		t.Fatalf("approve: %s %+v", e, out)
	}
	for deadline = time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b.call("fronts.Approvals.ExampleAgent", &r)
		if !r.Running {
			break
		}
	}
	text := strings.Join(r.Lines, "\n")
	for _, want := range []string{"→ discover_company: ok", "→ describe_company: ok", "→ call_api_operation: waiting_for_user",
		"Outcome: the exchange was performed after your approval."} {
		if !strings.Contains(text, want) {
			t.Errorf("the agent's transcript lacks %q:\n%s", want, text)
		}
	}
	if r.Running || r.Error != "" {
		t.Errorf("agent run = %+v", r)
	}
}
