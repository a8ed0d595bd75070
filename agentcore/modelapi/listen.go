package modelapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
)

// Listen listens for the model at the socket or named pipe path (endpoint.Listen).
func Listen(ctx context.Context, path string) (net.Listener, error) {
	return endpoint.Listen(ctx, path)
}

// Serve accepts connections on ln and serves each as one MCP session of srv (newline-delimited
// JSON-RPC over the connection), until ctx ends or ln is closed. A connection from another OS
// user (checked with SO_PEERCRED on Linux) is closed without being served.
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
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		log.Info("modelapi: an MCP session could not start", "err", err)
		return
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			ss.Close()
		case <-done:
		}
	}()
	ss.Wait()
	close(done)
}

// Dial connects to the app's model interface at the socket or named pipe path (endpoint.Dial:
// after checking that it belongs to this user).
func Dial(ctx context.Context, path string) (net.Conn, error) { return endpoint.Dial(ctx, path) }
