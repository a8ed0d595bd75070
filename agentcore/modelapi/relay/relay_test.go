package relay_test

// The relay between MCP clients and an MCP server on the library Poppydesk's app uses (the Go
// SDK), served on a real Unix socket (or named pipe) made by the endpoint package. The app's
// own tools are tested through the relay in agentcore/modelapi and app/cli; here the server has
// two tools that make the relay's cases happen: echo, and slow (which waits until it is released
// or cancelled, then answers anyway).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
	"github.com/poppydesk/poppydesk/agentcore/modelapi/relay"
)

// app is an MCP server listening where the relay looks: what Poppydesk's app does.
type app struct {
	t       *testing.T
	ln      net.Listener
	mu      sync.Mutex
	conns   []net.Conn
	inits   []*mcp.InitializeParams // each session's initialize, as the server got it
	slow    chan string             // the outcome of each slow call: "released" or "cancelled"
	release chan struct{}
}

// testEndpoint is a fresh endpoint path for a test.
func testEndpoint(t *testing.T) string {
	if runtime.GOOS == "windows" {
		return fmt.Sprintf(`\\.\pipe\poppydesk-relay-test-%d-%d`, os.Getpid(), time.Now().UnixNano())
	}
	dir, err := os.MkdirTemp("", "pdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "run", "mcp.sock")
}

func startApp(t *testing.T, path string) *app {
	t.Helper()
	ln, err := endpoint.Listen(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{t: t, ln: ln, slow: make(chan string, 10), release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "relay-test-app", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		outcome := "released"
		select {
		case <-a.release:
		case <-ctx.Done():
			outcome = "cancelled"
		}
		a.slow <- outcome
		// Answers even when cancelled, as a server may: the relay must not pass this on.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: outcome}}}, nil, nil
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns = append(a.conns, c)
			a.mu.Unlock()
			go func() {
				ss, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: c, Writer: c}, nil)
				if err != nil {
					return
				}
				go func() {
					ss.Wait()
					a.mu.Lock()
					a.inits = append(a.inits, ss.InitializeParams())
					a.mu.Unlock()
				}()
			}()
		}
	}()
	t.Cleanup(a.kill)
	return a
}

// kill ends the app as a crash would: the listener and every connection close at once.
func (a *app) kill() {
	a.ln.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.conns {
		c.Close()
	}
}

// session runs relay.Run over pipes: the test writes the client's lines and reads the relay's.
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Reader
	stderr *strings.Builder
	done   chan error
}

func startRelay(t *testing.T, o relay.Options) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), stderr: &strings.Builder{}, done: make(chan error, 1)}
	o.Stdin, o.Stdout, o.Stderr = inR, outW, &lockedWriter{w: s.stderr}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := relay.Run(ctx, o)
		outW.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("the relay did not end within 10 s of the end of its input")
		}
		cancel()
	})
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// reply is one message the relay wrote to the client.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func (s *session) next() reply {
	s.t.Helper()
	type lineErr struct {
		b   []byte
		err error
	}
	ch := make(chan lineErr, 1)
	go func() {
		b, err := s.out.ReadBytes('\n')
		ch <- lineErr{b, err}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			s.t.Fatalf("the relay wrote no more (%v); its stderr: %s", l.err, s.stderr)
		}
		var r reply
		if err := json.Unmarshal(l.b, &r); err != nil {
			s.t.Fatalf("the relay wrote %q: %v", l.b, err)
		}
		r.raw = string(l.b)
		return r
	case <-time.After(20 * time.Second):
		s.t.Fatalf("no message from the relay within 20 s; its stderr: %s", s.stderr)
	}
	return reply{}
}

// answer reads until the response to id (skipping the app's notifications).
func (s *session) answer(id string) reply {
	s.t.Helper()
	for {
		r := s.next()
		if string(r.ID) == id {
			return r
		}
		if r.Method == "" {
			s.t.Fatalf("an answer to %s came before the one to %s: %s", r.ID, id, r.raw)
		}
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-client","version":"7"}}}`

// handshake initializes the session through the relay.
func (s *session) handshake() {
	s.t.Helper()
	s.send(initialize)
	if r := s.answer("1"); r.Error != nil {
		s.t.Fatalf("initialize: %s", r.raw)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestMalformedInput: each malformed line gets the JSON-RPC error the specification names, the
// app never sees it, and the session goes on: a request after each one is answered.
func TestMalformedInput(t *testing.T) {
	path := testEndpoint(t)
	startApp(t, path)
	s := startRelay(t, relay.Options{Endpoint: path, NoStart: true})
	s.handshake()
	huge := func(n int, prefix, suffix string) string {
		return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
	}
	cases := []struct {
		name, line string
		code       int
		id         string
		words      string
	}{
		{"garbage", "hello there", relay.CodeParseError, "null", "not valid JSON"},
		{"truncated JSON", `{"jsonrpc":"2.0","id":5,"method":"ping"`, relay.CodeParseError, "null", "not valid JSON"},
		{"a batch", `[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, relay.CodeInvalidRequest, "null", "batch"},
		{"an empty batch", `[]`, relay.CodeInvalidRequest, "null", "batch"},
		{"a number", `42`, relay.CodeInvalidRequest, "null", "not a JSON object"},
		{"a method that is a number", `{"jsonrpc":"2.0","id":7,"method":5}`, relay.CodeInvalidRequest, "7", "method must be a string"},
		{"a method that is null", `{"jsonrpc":"2.0","id":"m","method":null}`, relay.CodeInvalidRequest, `"m"`, "method must be a string"},
		{"an id that is an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, relay.CodeInvalidRequest, "null", "id must be a string or an integer"},
		{"an id that is a fraction", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, relay.CodeInvalidRequest, "null", "id must be a string or an integer"},
		{"no jsonrpc", `{"id":8,"method":"ping"}`, relay.CodeInvalidRequest, "8", `"jsonrpc" must be "2.0"`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":9,"method":"ping"}`, relay.CodeInvalidRequest, "9", `"jsonrpc" must be "2.0"`},
		{"neither request nor response", `{"jsonrpc":"2.0","id":10}`, relay.CodeInvalidRequest, "10", "neither a request"},
		{"12 MB of garbage", huge(12<<20, "", ""), relay.CodeParseError, "null", "more than the 4 MiB"},
		{"5 MB request, id first (Go, Python SDKs)", huge(5<<20, `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`, `"}}}`), relay.CodeInvalidRequest, "11", "more than the 4 MiB"},
		{"5 MB request, id last (TypeScript SDK)", huge(5<<20, `{"method":"tools/call","params":{"name":"echo","arguments":{"text":"`, `"}},"jsonrpc":"2.0","id":"ts-12"}`), relay.CodeInvalidRequest, `"ts-12"`, "more than the 4 MiB"},
	}
	for i, c := range cases {
		s.send(c.line)
		r := s.next()
		if r.Error == nil || r.Error.Code != c.code || string(r.ID) != c.id || !strings.Contains(r.Error.Message, c.words) {
			t.Errorf("%s: got %.300s; want error %d with id %s saying %q", c.name, r.raw, c.code, c.id, c.words)
		}
		id := fmt.Sprintf(`"after-%d"`, i)
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
		if r := s.answer(id); r.Error != nil || !strings.Contains(string(r.Result), "still here") {
			t.Fatalf("after %s the session did not go on: %s", c.name, r.raw)
		}
	}
}

// endlessReader yields n bytes of x without keeping them, then a newline.
type endlessReader struct{ n int }

func (e *endlessReader) Read(p []byte) (int, error) {
	if e.n < 0 {
		return 0, io.EOF
	}
	if e.n == 0 {
		p[0] = '\n'
		e.n = -1
		return 1, nil
	}
	k := min(len(p), e.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// TestLongLineMemoryIsBounded: a 256 MiB line is read through with a bounded amount of memory
// (what a line over the limit costs does not grow with the line) and answered.
func TestLongLineMemoryIsBounded(t *testing.T) {
	var out strings.Builder
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := relay.Run(context.Background(), relay.Options{Endpoint: testEndpoint(t), NoStart: true, Getenv: func(string) string { return "" },
		Stdin: &endlessReader{n: 256 << 20}, Stdout: &out, Stderr: io.Discard})
	runtime.ReadMemStats(&after)
	if err != nil || !strings.Contains(out.String(), `"code":-32700`) {
		t.Fatalf("%v, answered %q", err, out.String())
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 256 MiB line allocated %.1f MiB in all", float64(allocated)/(1<<20))
	if allocated > 32<<20 {
		t.Fatalf("reading a 256 MiB line allocated %d MiB; it must not grow with the line", allocated>>20)
	}
}

// TestCancelledRequestGetsNoResponse: after notifications/cancelled the app's handler is
// cancelled, and its answer, which the app still sends, does not reach the client.
func TestCancelledRequestGetsNoResponse(t *testing.T) {
	path := testEndpoint(t)
	a := startApp(t, path)
	s := startRelay(t, relay.Options{Endpoint: path, NoStart: true})
	s.handshake()
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	time.Sleep(100 * time.Millisecond) // the call reaches the handler
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user pressed stop"}}`)
	select {
	case got := <-a.slow:
		if got != "cancelled" {
			t.Fatalf("the handler ended %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellation did not reach the app")
	}
	// Two round trips after the handler ended: its answer, had it been passed on, comes first.
	for _, id := range []string{"3", "4"} {
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if r := s.next(); string(r.ID) != id {
			t.Fatalf("after the cancellation the client got %s", r.raw)
		}
	}
}

// TestAppStopsAndComesBack: the app ends during a call, which fails at once with an error in
// words; while it is down a call says it is not running; once it runs again the client's next
// call works in the same session: the relay replayed the client's initialize (its clientInfo
// reaches the new session) and notifications/initialized, without which the app refuses calls
// from a client of the initialize handshake (MCP 2025-06-18).
func TestAppStopsAndComesBack(t *testing.T) {
	path := testEndpoint(t)
	a := startApp(t, path)
	s := startRelay(t, relay.Options{Endpoint: path, NoStart: true})
	s.handshake()
	echo := func(id string) reply {
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		return s.answer(id)
	}
	if r := echo("2"); r.Error != nil {
		t.Fatal(r.raw)
	}
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	time.Sleep(200 * time.Millisecond)
	a.kill()
	start := time.Now()
	r := s.answer("3")
	if r.Error == nil || r.Error.Code != relay.CodeAppStopped || !strings.Contains(r.Error.Message, "Poppydesk stopped while it handled this request") || time.Since(start) > 5*time.Second {
		t.Fatalf("the call in flight when the app ended, answered after %s: %s", time.Since(start), r.raw)
	}
	t.Logf("the client got, %s after the app ended: %s", time.Since(start).Round(time.Millisecond), r.Error.Message)
	if r := echo("4"); r.Error == nil || r.Error.Code != relay.CodeUnavailable || !strings.Contains(r.Error.Message, "Poppydesk is not running") {
		t.Fatalf("a call while the app is down: %s", r.raw)
	}
	b := startApp(t, path)
	if r := echo("5"); r.Error != nil || !strings.Contains(string(r.Result), "hi") {
		t.Fatalf("the call after the app came back: %s", r.raw)
	}
	b.kill()
	time.Sleep(100 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.inits) != 1 || b.inits[0] == nil || b.inits[0].ClientInfo.Name != "raw-client" || b.inits[0].ClientInfo.Version != "7" {
		t.Fatalf("the new session's initialize: %+v", b.inits)
	}
}
