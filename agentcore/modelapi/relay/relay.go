// Package relay is the stdio MCP server that MCP clients start (`poppydesk mcp`, and the small
// `poppydesk-mcp` program beside it): it passes the client's JSON-RPC messages to the running
// app's model interface (agentcore/modelapi, reached through agentcore/modelapi/endpoint) and
// the app's back, starting the app first when nothing answers. The app, not the relay, holds
// the engine: the relay never sees a key, token or approval.
//
// It reads what it must to keep a client's session sound, and no more (MCP 2025-06-18, "Base
// Protocol" and "Cancellation"; JSON-RPC 2.0):
//
//   - Each line from the client is checked first. A line that is not JSON gets the parse error
//     -32700; JSON that is not a JSON-RPC message MCP accepts (a batch array, a method that is
//     not a string, an id that is neither a string nor an integer) gets -32600 Invalid Request;
//     a line over MaxMessageBytes is read through without being kept and gets one of the two.
//     The session goes on, and the app never sees the line.
//   - A request the client cancelled (notifications/cancelled) gets no response: the relay
//     passes the cancellation on and drops the app's answer to it.
//   - When the app ends while requests are in flight (its window closed, or it crashed), each
//     gets the error CodeAppStopped at once. The relay stays: the client's next request
//     reaches the app again (started if need be), and the relay first replays the client's
//     initialize and notifications/initialized to the new session, so the client need not
//     restart.
//   - Every failure to reach or start the app is a JSON-RPC error (CodeUnavailable) on the
//     request that needed it, in words: what failed, why, and what to do (and the same line on
//     standard error, which clients keep in their logs). The app's own output is never passed
//     on, so no Go stack trace reaches the client or the terminal.
//
// The relay links only the standard library and the endpoint package (and go-winio on
// Windows), so that starting it costs little more than starting any small Go program: the app's
// packages, and in desktop builds GTK and WebKit, are not loaded. That is also why it reads the
// JSON-RPC envelope (jsonrpc, id, method, result, error) with encoding/json itself rather than
// with the MCP Go SDK: it never decodes an MCP type, and the SDK's package initialisation alone
// costs more than the rest of the relay's start (BenchmarkClientStart in cmd/poppydesk-mcp).
package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// DefaultStartWait is how long the relay waits for a started app's model interface.
const DefaultStartWait = 15 * time.Second

// Options configure Run.
type Options struct {
	// Endpoint is the app's socket or named pipe ("": endpoint.Default for Home).
	Endpoint string
	// Home keys the default endpoint ("": endpoint.Home(Getenv)).
	Home string
	// App is the Poppydesk program started (without arguments: the window) when nothing
	// answers; "" or NoStart: never start it.
	App     string
	NoStart bool
	// StartWait bounds the wait for a started app (0: DefaultStartWait).
	StartWait time.Duration
	// Getenv reads the environment (the display, the home folder).
	Getenv func(string) string
	// Stdin and Stdout are the client's stdio; Stderr gets one line per problem.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Flags registers the relay's flags on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Endpoint, "socket", "", "the app's model interface: a Unix socket `path`, or on Windows a named pipe (\\\\.\\pipe\\NAME); default: the one for your user and home folder")
	fs.BoolVar(&o.NoStart, "no-start", false, "answer with an error instead of starting Poppydesk when it is not running")
	fs.DurationVar(&o.StartWait, "start-wait", DefaultStartWait, "how long to wait for a started Poppydesk to open its model interface, a `time` such as 15s")
}

// Run relays until the client's input ends (after the answers to its requests in flight) or
// ctx ends. It returns an error only when reading the client failed or none of its requests
// ever reached the app (what was wrong has been said, to the client and on Stderr).
func Run(ctx context.Context, o Options) error {
	if o.StartWait <= 0 {
		o.StartWait = DefaultStartWait
	}
	r := &relay{o: o, inflight: map[string]json.RawMessage{}, cancelled: map[string]bool{}, settled: make(chan struct{}, 1)}
	lines := make(chan lineOrErr)
	go readLines(ctx, newLineReader(o.Stdin, MaxMessageBytes), lines)
	for {
		select {
		case <-ctx.Done():
			r.close()
			return nil
		case l := <-lines:
			var long *errTooLong
			switch {
			case errors.As(l.err, &long):
				r.toClient(tooLongResponse(long))
			case errors.Is(l.err, io.EOF):
				r.finish(ctx)
				if r.unreached {
					return errors.New("no request of the client reached Poppydesk; the line above says why")
				}
				return nil
			case l.err != nil:
				r.close()
				return fmt.Errorf("reading the MCP client's messages failed: %w", l.err)
			default:
				r.fromClient(ctx, l.line)
			}
		}
	}
}

type lineOrErr struct {
	line []byte
	err  error
}

// readLines sends the client's lines to out until an error other than an over-long line.
func readLines(ctx context.Context, in *lineReader, out chan<- lineOrErr) {
	for {
		line, err := in.next()
		select {
		case out <- lineOrErr{line, err}:
		case <-ctx.Done():
			return
		}
		var long *errTooLong
		if err != nil && !errors.As(err, &long) {
			return
		}
	}
}

// relay is one client's session. The main loop (Run) alone reads the client, connects and
// writes to the app; each app connection's pump alone reads it and ends it (gone).
type relay struct {
	o        Options
	endpoint string // resolved at the first connection

	outMu sync.Mutex // one message at a time on the client's stdout

	mu          sync.Mutex
	app         *appConn                   // nil: not connected
	inflight    map[string]json.RawMessage // the client's requests the current app session has not answered, by idKey
	cancelled   map[string]bool            // of those, the ones the client cancelled: their answers are dropped
	initParams  json.RawMessage            // the client's initialize params, replayed to a new app session
	initialized bool                       // the client sent notifications/initialized
	settled     chan struct{}              // signalled when a request is answered or a connection ends

	replays   int  // initialize requests the relay sent itself
	reached   bool // some request reached the app
	unreached bool // a request failed to reach the app while none had
}

// appConn is one connection to the app: one MCP session.
type appConn struct {
	conn net.Conn
	in   *bufio.Reader
	wmu  sync.Mutex
	done chan struct{} // closed when its pump has ended
}

var newline = []byte("\n")

func (a *appConn) write(line []byte) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	bufs := net.Buffers{line, newline}
	_, err := bufs.WriteTo(a.conn)
	return err
}

func (r *relay) toClient(line []byte) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	bufs := net.Buffers{line, newline}
	bufs.WriteTo(r.o.Stdout)
}

// say writes one line for the client's log.
func (r *relay) say(format string, args ...any) {
	if r.o.Stderr != nil {
		fmt.Fprintf(r.o.Stderr, "poppydesk mcp: "+format+"\n", args...)
	}
}

func (r *relay) signal() {
	select {
	case r.settled <- struct{}{}:
	default:
	}
}

func (r *relay) fromClient(ctx context.Context, line []byte) {
	m, reject := parseClient(line)
	switch {
	case reject != nil:
		r.toClient(reject)
	case m == nil:
	case m.kind == request:
		r.request(ctx, m, line)
	case m.kind == notification:
		r.notification(m, line)
	default: // a response to a request of the app (sampling, elicitation, roots, ping)
		if a := r.current(); a != nil && a.write(line) != nil {
			a.conn.Close()
		}
	}
}

func (r *relay) current() *appConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.app
}

func (r *relay) request(ctx context.Context, m *message, line []byte) {
	key := idKey(m.id)
	r.mu.Lock()
	_, busy := r.inflight[key]
	r.mu.Unlock()
	if busy {
		r.toClient(errorResponse(m.id, CodeInvalidRequest, fmt.Sprintf("Invalid Request: the id %s is already used by a request in progress; use a new id for each request", m.id)))
		return
	}
	isInit := m.method == "initialize"
	a, err := r.connect(ctx, !isInit)
	if err != nil {
		r.say("%v", err)
		r.unreached = !r.reached
		r.toClient(errorResponse(m.id, CodeUnavailable, err.Error()))
		return
	}
	r.mu.Lock()
	if isInit {
		r.initParams, r.initialized = m.params, false
	}
	live := r.app == a
	if live {
		r.inflight[key] = m.id
	}
	r.reached = true
	r.mu.Unlock()
	if !live { // the app ended between the connection and now
		r.toClient(errorResponse(m.id, CodeAppStopped, appStopped))
		return
	}
	if a.write(line) != nil {
		a.conn.Close() // its pump answers the requests in flight, this one included
	}
}

func (r *relay) notification(m *message, line []byte) {
	switch m.method {
	case "notifications/initialized":
		r.mu.Lock()
		r.initialized = true
		r.mu.Unlock()
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.params, &p) == nil && validID(p.RequestID) {
			key := idKey(p.RequestID)
			r.mu.Lock()
			if _, ok := r.inflight[key]; ok {
				delete(r.inflight, key)
				r.cancelled[key] = true
			}
			r.mu.Unlock()
			r.signal()
		}
	}
	// A notification for a session that ended has nothing left to tell it; a new session gets
	// the client's notifications/initialized from the replay.
	if a := r.current(); a != nil && a.write(line) != nil {
		a.conn.Close()
	}
}

// connect returns the current app connection, or makes one (starting the app if need be) and,
// when replay is set and the client has initialized, replays the client's handshake on it.
func (r *relay) connect(ctx context.Context, replay bool) (*appConn, error) {
	if a := r.current(); a != nil {
		return a, nil
	}
	if r.endpoint == "" {
		p, err := r.locate()
		if err != nil {
			return nil, err
		}
		r.endpoint = p
	}
	c, err := r.reach(ctx, r.endpoint)
	if err != nil {
		return nil, err
	}
	a := &appConn{conn: c, in: bufio.NewReaderSize(c, 64<<10), done: make(chan struct{})}
	r.mu.Lock()
	params, initialized := r.initParams, r.initialized
	r.mu.Unlock()
	if replay && params != nil {
		if err := r.replay(a, params, initialized); err != nil {
			c.Close()
			return nil, err
		}
	}
	r.mu.Lock()
	r.app = a
	r.inflight, r.cancelled = map[string]json.RawMessage{}, map[string]bool{}
	r.mu.Unlock()
	go r.pump(a)
	return a, nil
}

// replay sends the client's initialize (under an id of the relay's own) to a new app session,
// waits for its answer, and sends notifications/initialized if the client had.
func (r *relay) replay(a *appConn, params json.RawMessage, initialized bool) error {
	r.replays++
	id, _ := json.Marshal(fmt.Sprintf("poppydesk-relay-initialize-%d", r.replays))
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "initialize", "params": params})
	a.conn.SetReadDeadline(time.Now().Add(r.o.StartWait))
	defer a.conn.SetReadDeadline(time.Time{})
	if err := a.write(req); err != nil {
		return fmt.Errorf("Poppydesk answers again at %s, but sending it the client's initialize failed: %v. Try again", r.endpoint, err)
	}
	for {
		line, err := a.in.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("Poppydesk answers again at %s, but it did not answer the client's initialize (%v). Try again in a moment", r.endpoint, err)
		}
		got, isResponse := appMessage(line)
		if !isResponse || idKey(got) != idKey(id) {
			r.toClient(trimNewline(line)) // what the app says before its answer (a log message)
			continue
		}
		var res struct {
			Error *struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(line, &res) == nil && res.Error != nil {
			return fmt.Errorf("Poppydesk answers again at %s, but it refused the client's initialize: %s. Restart the MCP client", r.endpoint, res.Error.Message)
		}
		break
	}
	if initialized {
		if err := a.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			return fmt.Errorf("Poppydesk answers again at %s, but the connection failed at once (%v). Try again", r.endpoint, err)
		}
	}
	return nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// pump passes the app's messages to the client until the connection ends.
func (r *relay) pump(a *appConn) {
	defer close(a.done)
	for {
		line, err := a.in.ReadBytes('\n')
		if line = trimNewline(line); len(line) > 0 {
			r.fromApp(line)
		}
		if err != nil {
			r.gone(a)
			return
		}
	}
}

func (r *relay) fromApp(line []byte) {
	id, isResponse := appMessage(line)
	if !isResponse {
		r.toClient(line)
		return
	}
	key := idKey(id)
	r.mu.Lock()
	dropped := r.cancelled[key]
	delete(r.cancelled, key)
	r.mu.Unlock()
	if !dropped {
		r.toClient(line)
	}
	r.mu.Lock()
	delete(r.inflight, key)
	r.mu.Unlock()
	r.signal()
}

// appStopped is the error of the requests in flight when the app's session ends.
const appStopped = "Poppydesk stopped while it handled this request (its window was closed, or it crashed), so the answer is lost and what the request did is not known. Before repeating anything that changes something at a Company, check Poppydesk's Approvals and Activity. The next request reaches Poppydesk again, starting it if need be"

// gone ends the app connection a: each request in flight gets CodeAppStopped.
func (r *relay) gone(a *appConn) {
	a.conn.Close()
	r.mu.Lock()
	if r.app != a {
		r.mu.Unlock()
		return
	}
	r.app = nil
	lost := r.inflight
	r.inflight, r.cancelled = map[string]json.RawMessage{}, map[string]bool{}
	r.mu.Unlock()
	for _, id := range lost {
		r.toClient(errorResponse(id, CodeAppStopped, appStopped))
	}
	if len(lost) > 0 {
		r.say("Poppydesk's model interface closed the connection with %d request(s) in flight; each was answered with an error, and the next request connects again", len(lost))
	}
	r.signal()
}

// finish waits until every request in flight is answered (or the app's session ends, or ctx
// ends), then closes the app connection.
func (r *relay) finish(ctx context.Context) {
	for {
		r.mu.Lock()
		waiting := r.app != nil && len(r.inflight) > 0
		r.mu.Unlock()
		if !waiting {
			break
		}
		select {
		case <-r.settled:
		case <-ctx.Done():
			r.close()
			return
		}
	}
	r.close()
}

// close ends the app connection and waits for its pump.
func (r *relay) close() {
	if a := r.current(); a != nil {
		a.conn.Close()
		<-a.done
	}
}
