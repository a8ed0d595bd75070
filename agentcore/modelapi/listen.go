package modelapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
)

// Listen listens for the model at the socket or named pipe path (endpoint.Listen).
func Listen(ctx context.Context, path string) (net.Listener, error) {
	return endpoint.Listen(ctx, path)
}

// Serve accepts connections on ln and serves each as one MCP session of srv (newline-delimited
// JSON-RPC over the connection), until ctx ends or ln is closed. A connection from another OS
// user (checked with SO_PEERCRED on Linux) is closed without being served. When ctx ends, each
// session answers the calls it has read (within [AnswerGrace]) before it closes; the SDK does not
// cancel handlers with ctx, so the caller ends the calls that wait.
func Serve(ctx context.Context, ln net.Listener, srv *mcp.Server, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("modelapi: accepting a model connection failed: %w", err)
		}
		if err := endpoint.CheckPeer(conn); err != nil {
			log.Warn("modelapi: refused a connection", "err", err)
			conn.Close()
			continue
		}
		via := peerVia(conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(withVia(ctx, via), conn, srv, log)
		}()
	}
}

func serveConn(ctx context.Context, conn net.Conn, srv *mcp.Server, log *slog.Logger) {
	defer conn.Close()
	ac := &answering{}
	ss, err := srv.Connect(ctx, answeringTransport{&mcp.IOTransport{Reader: conn, Writer: conn}, ac}, nil)
	if err != nil {
		log.Info("modelapi: an MCP session could not start", "err", err)
		return
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// A session closed by the SDK writes no more answers, so the calls it has read are
			// answered first: the model gets each call's answer, not its connection ending
			// under it. The host ends its calls that wait (app's modelCalls).
			grace := time.NewTimer(AnswerGrace)
			defer grace.Stop()
			if !ac.wait(grace.C, done) {
				log.Warn("modelapi: closing a model's session with calls unanswered", "grace", AnswerGrace)
			}
			ss.Close()
		case <-done:
		}
	}()
	ss.Wait()
	close(done)
}

// AnswerGrace is how long [Serve], once its context ends, waits for the answers of the calls each
// session has read before it closes the session.
const AnswerGrace = 2 * time.Second

// answering counts the calls one session's connection has read and the answers it has written.
// Closing an SDK session makes it refuse to write the answers of calls still in flight (the model
// would see a bare end of its connection), so serveConn closes a session only once its calls are
// answered. A failed read or write settles it: no answer can be written after that. The SDK's
// own connection learns the negotiated protocol version through an unexported method, which a
// wrapper cannot pass on; it uses the version only to refuse JSON-RPC batches from clients of
// 2025-06-18 and later, so through this wrapper a batch is answered whatever the version.
type answering struct {
	mu      sync.Mutex
	owed    int
	broken  bool
	changed chan struct{} // closed and replaced on every change
}

// wait waits until the connection owes no answer, is broken or stop is closed, and reports
// false when timeout fired first.
func (a *answering) wait(timeout <-chan time.Time, stop <-chan struct{}) bool {
	for {
		a.mu.Lock()
		if a.owed <= 0 || a.broken {
			a.mu.Unlock()
			return true
		}
		if a.changed == nil {
			a.changed = make(chan struct{})
		}
		changed := a.changed
		a.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			return false
		case <-stop:
			return true
		}
	}
}

// add counts n more calls owed an answer; failed says a read or write failed.
func (a *answering) add(n int, failed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.owed += n
	a.broken = a.broken || failed
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// answeringTransport connects its transport's connection through an [answering] count.
type answeringTransport struct {
	mcp.Transport
	a *answering
}

func (t answeringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return answeringConn{c, t.a}, nil
}

type answeringConn struct {
	mcp.Connection
	a *answering
}

func (c answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.ID.IsValid() {
		c.a.add(1, false)
	} else if err != nil {
		c.a.add(0, true)
	}
	return msg, err
}

func (c answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.a.add(-1, err != nil)
	} else if err != nil {
		c.a.add(0, true)
	}
	return err
}

// Dial connects to the app's model interface at the socket or named pipe path (endpoint.Dial:
// after checking that it belongs to this user).
func Dial(ctx context.Context, path string) (net.Conn, error) { return endpoint.Dial(ctx, path) }
