package e2e

// The soak test: Poppydesk as `poppydesk` builds it (apptest: app.New over the reference
// Company, the model's MCP socket, the controlled browser in Debian's headless Chromium, a
// debug-level JSON log in small rotated files) is driven in cycles through its MCP interface by
// the official go-sdk client, as a model would for days: an API operation that needs the user's
// approval (approved through the window's Approvals service), an MCP tool, a conversation with
// the Company's agent, and pages of the Company's website through the model's browser tools.
// After each cycle the process must be back at its level: heap after GC, goroutines and open
// files, and the log within its rotation limits.
//
// The short form (the default, in CI) runs soakShortCycles cycles, well under 60 s. A longer
// soak runs for as long as POPPYDESK_SOAK says, e.g. POPPYDESK_SOAK=10m:
//
//	POPPYDESK_REQUIRE_E2E=1 POPPYDESK_SOAK=10m go test -run TestSoak -timeout 15m -v ./e2e/
//
// POPPYDESK_SOAK_HEAPDIR=dir also writes heap profiles there after the warm-up and at the end, to
// compare with `go tool pprof -base dir/heap-warm.pb.gz dir/heap-end.pb.gz`.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/browser"
)

const (
	soakShortCycles = 20
	soakWarmup      = 2 // cycles that start what lives for the Host's life (Chromium, pools, caches)
	// soakWarmupShare: a long soak's warm-up is also its first sixth, in which the bounded
	// caches that a cycle adds a few entries to (the identifiers kept out of feedback reports,
	// up to 2,000 a Company; the reference Company's replay cache, 121 s of jtis) reach their
	// bound; a leak shows as growth over the other five sixths.
	soakWarmupShare = 6
	soakLogMax      = 16 << 10
	soakLogKeep     = 3
)

// Tolerances over the level after the warm-up cycles, each a bound on what may legitimately
// differ between two idle moments rather than accumulate (measured: the levels repeat to within
// 0.2 MiB, 0 goroutines and 0 files from cycle to cycle):
//   - goroutines: +8. Idle HTTP keep-alive connections come and go with their idle timers; each
//     costs 2-3 goroutines (the client's read and write loops and the reference Company's
//     server side, all in this process).
//   - open files: +8. The same connections as sockets (both ends are in this process), and
//     SQLite's pooled connections to the state database, opened and closed on demand.
//   - heap after GC: +1 MiB. Bounded caches that fill over the first cycles and then stay at
//     their bound (the model's Activity ring, TLS session caches, the identifiers kept out of
//     feedback reports, the reference Company's replay cache of Session JWT jtis, bounded by
//     size and by time). A leaked cycle's work (an MCP request's state, a browser target, a
//     conversation follower, a Session) is tens to hundreds of KiB, so one a cycle passes 1 MiB
//     within the short form's 18 measured cycles; a leak of 1 KiB a cycle passes it within the
//     50 minutes an hour's soak measures after its warm-up (about 3,000 cycles).
const (
	soakTolGoroutines = 8
	soakTolFiles      = 8
	soakTolHeap       = 1 << 20
)

// soakLevel is the process's level at an idle moment.
type soakLevel struct {
	heap       uint64 // live heap bytes after a GC
	goroutines int
	files      int
}

func (l soakLevel) String() string {
	return fmt.Sprintf("heap %.1f MiB, %d goroutines, %d open files", float64(l.heap)/(1<<20), l.goroutines, l.files)
}

// heapProfile writes a heap profile to POPPYDESK_SOAK_HEAPDIR/heap-NAME.pb.gz, when it is set.
func heapProfile(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("POPPYDESK_SOAK_HEAPDIR")
	if dir == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(filepath.Join(dir, "heap-"+name+".pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

func measure(t *testing.T) soakLevel {
	t.Helper()
	runtime.GC()
	runtime.GC() // a second cycle frees what finalizers of the first released
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting open files: %v", err)
	}
	return soakLevel{heap: s[0].Value.Uint64(), goroutines: runtime.NumGoroutine(), files: len(fds)}
}

// settle waits (polling, up to 20 s) until the process is back within the tolerances of base,
// and returns the level it reached.
func settle(t *testing.T, base soakLevel) (soakLevel, bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l := measure(t)
		ok := l.goroutines <= base.goroutines+soakTolGoroutines && l.files <= base.files+soakTolFiles && l.heap <= base.heap+soakTolHeap
		if ok || time.Now().After(deadline) {
			return l, ok
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// soakWorld is the Host, the model's MCP client over its socket, and the window's Approvals.
type soakWorld struct {
	f   *apptest.Fixture
	cs  *mcp.ClientSession
	log string
}

func (w *soakWorld) call(t *testing.T, ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	return res, sc
}

// cycle is one model session's worth of work. n names the cycle's order at the Company.
func (w *soakWorld) cycle(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	s, company := w.f.Company, w.f.Company.Domain
	order := fmt.Sprintf("ord_soak%d", n)
	s.AddOrder("", order, "stormline-m")

	// An API operation that needs the user's approval: listed, described, called, approved in
	// the window, and its outcome read by the model.
	if r, _ := w.call(t, ctx, modelapi.ToolListAPIOperations, map[string]any{"company": company, "query": "exchange"}); r.IsError || !strings.Contains(toolText(r), "exchangeItem POST") {
		t.Fatalf("list_api_operations: %s", toolText(r))
	}
	if r, _ := w.call(t, ctx, modelapi.ToolDescribeAPIOperation, map[string]any{"company": company, "operation_id": "exchangeItem"}); r.IsError {
		t.Fatalf("describe_api_operation: %s", toolText(r))
	}
	r, sc := w.call(t, ctx, modelapi.ToolCallAPIOperation, map[string]any{"company": company, "operation_id": "exchangeItem",
		"path_params": map[string]any{"id": order}, "body": map[string]any{"item_id": order + "_item0", "replacement_sku": "stormline-insulated-m"},
		"intent": map[string]any{"replacement_sku": "stormline-insulated-m"}})
	id, _ := sc["approval_id"].(string)
	if r.IsError || sc["status"] != "waiting_for_user" || id == "" {
		t.Fatalf("call_api_operation: %s", toolText(r))
	}
	a := w.f.Fronts().Approvals
	it, err := a.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := a.Approve(it.ID, it.Current.Revision, it.Current.Digest); err != nil || out.Status != "done" {
		t.Fatalf("Approve: %+v, %v", out, err)
	}
	if r, sc := w.call(t, ctx, modelapi.ToolWaitForApproval, map[string]any{"approval_id": id, "timeout_seconds": 30}); r.IsError || sc["status"] != modelapi.StatusPerformed {
		t.Fatalf("wait_for_approval: %s", toolText(r))
	}

	// An MCP tool of the Company.
	if r, _ := w.call(t, ctx, modelapi.ToolCallMCPTool, map[string]any{"company": company, "tool": "search_products", "arguments": map[string]any{"query": "jacket"}}); r.IsError {
		t.Fatalf("call_mcp_tool: %s", toolText(r))
	}

	// A conversation with the Company's agent, read until it answers, then closed.
	r, sc = w.call(t, ctx, "start_conversation", map[string]any{"company": company, "text": "Which jacket is warmer?", "wait_seconds": 2})
	conv, _ := sc["conversation"].(map[string]any)
	cid, _ := conv["conversation_id"].(string)
	if r.IsError || cid == "" {
		t.Fatalf("start_conversation: %s", toolText(r))
	}
	for i := 0; i < 20 && !strings.Contains(toolText(r), "-10"); i++ {
		r, _ = w.call(t, ctx, "read_conversation", map[string]any{"company": company, "conversation_id": cid, "wait_seconds": 1})
	}
	if !strings.Contains(toolText(r), "-10") {
		t.Fatalf("the Company's agent did not answer: %s", toolText(r))
	}
	if r, _ := w.call(t, ctx, "close_conversation", map[string]any{"company": company, "conversation_id": cid}); r.IsError {
		t.Fatalf("close_conversation: %s", toolText(r))
	}

	// Pages of the Company's website in the controlled browser, joined to the Session.
	for _, p := range []string{"/account", "/"} {
		if r, _ := w.call(t, ctx, "browser_open", map[string]any{"company": company, "url": s.URL(refcompany.ShopHost, p)}); r.IsError {
			t.Fatalf("browser_open %s: %s", p, toolText(r))
		}
	}
	if r, _ := w.call(t, ctx, "browser_screenshot", map[string]any{"company": company}); r.IsError {
		t.Fatalf("browser_screenshot: %s", toolText(r))
	}

	// The reference Company keeps every request it received, and the cycle's order, operation
	// and closed conversation; this test reads none of them again, so they go (they are the
	// Company's memory, in this process, not Poppydesk's).
	s.ResetRequests()
	if s.ForgetFinished(order) < 3 {
		t.Fatalf("the reference Company kept nothing of cycle %d to forget", n)
	}
}

// checkLog: the debug log is within its rotation limits (the current file at most soakLogMax,
// at most soakLogKeep older files, none larger than the limit).
func (w *soakWorld) checkLog(t *testing.T) (rotated bool) {
	t.Helper()
	matches, err := filepath.Glob(w.log + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) > soakLogKeep+1 {
		t.Fatalf("%d log files, want at most %d: %v", len(matches), soakLogKeep+1, matches)
	}
	for _, m := range matches {
		st, err := os.Stat(m)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > soakLogMax {
			t.Fatalf("%s is %d bytes, over the %d-byte limit", m, st.Size(), soakLogMax)
		}
		rotated = rotated || strings.HasSuffix(m, ".1")
	}
	return rotated
}

// TestSoak: cycles of a model's work through the MCP socket leave memory, goroutines and open
// files at their level, and the log rotates within its limits.
func TestSoak(t *testing.T) {
	_, chromium := prerequisites(t)
	if os.Getenv("POPPYDESK_SOAK_HEAPDIR") != "" {
		runtime.MemProfileRate = 4 << 10 // fine enough to see a few KiB a cycle
	}
	long := time.Duration(0)
	if v := os.Getenv("POPPYDESK_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("POPPYDESK_SOAK=%q is not a duration like 10m", v)
		}
		long = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), long+2*time.Minute)
	defer cancel()

	clock := &refcompany.Clock{}
	s, err := refcompany.New(refcompany.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	// The Company outlives ctx: the Host closes (and ends its MCP sessions there) at cleanup.
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir := t.TempDir()
	logPath := filepath.Join(dir, "poppydesk.log")
	rf, err := app.OpenRotatingFile(logPath, soakLogMax, soakLogKeep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close() })
	spki := leafSPKI(t, s)
	f := apptest.Start(t, apptest.Options{Company: s, Clock: clock, Socket: true, Edit: func(c *app.Config) {
		c.Browser = browser.Options{ExecPath: chromium, TrustSPKI: []string{spki}}
		c.Logger = app.NewLogger(rf, slog.LevelDebug)
	}})
	f.SignIn(t, "personal", "orders:read", "orders:write")

	conn, err := modelapi.Dial(ctx, f.Host.Socket())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	w := &soakWorld{f: f, cs: cs, log: logPath}
	if r, _ := w.call(t, ctx, modelapi.ToolDiscoverCompany, map[string]any{"domain": s.Domain}); r.IsError {
		t.Fatalf("discover_company: %s", toolText(r))
	}

	start := time.Now()
	var base soakLevel
	based, rotated := false, false
	for n := 1; ; n++ {
		cs := time.Now()
		w.cycle(t, ctx, n)
		took := time.Since(cs)
		if !based && n >= soakWarmup && time.Since(start) >= long/soakWarmupShare {
			base, based = measure(t), true
			heapProfile(t, "warm")
			t.Logf("cycle %d (%s): level after the warm-up: %s", n, took.Round(time.Millisecond), base)
		} else if based {
			l, ok := settle(t, base)
			t.Logf("cycle %d (%s): %s", n, took.Round(time.Millisecond), l)
			if !ok {
				heapProfile(t, "end")
				t.Fatalf("after cycle %d the process is not back at its level: %s, after the warm-up %s (tolerance +%d goroutines, +%d files, +%d MiB)",
					n, l, base, soakTolGoroutines, soakTolFiles, soakTolHeap>>20)
			}
		}
		rotated = w.checkLog(t) || rotated
		if long == 0 && n >= soakShortCycles || long > 0 && time.Since(start) >= long {
			t.Logf("%d cycles in %s", n, time.Since(start).Round(time.Second))
			heapProfile(t, "end")
			break
		}
	}
	if !rotated {
		t.Fatalf("the debug log never rotated (limit %d bytes): the run wrote too little to check rotation", soakLogMax)
	}
}
