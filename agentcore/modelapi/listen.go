package modelapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SocketName is the file name of the model's socket.
const SocketName = "mcp.sock"

// SocketPath is where the app listens for the model: $XDG_RUNTIME_DIR/poppydesk/mcp.sock when
// XDG_RUNTIME_DIR is an absolute path (the per-user runtime directory), else
// DATADIR/run/mcp.sock. getenv is os.Getenv in production.
func SocketPath(getenv func(string) string, dataDir string) string {
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		return filepath.Join(rt, "poppydesk", SocketName)
	}
	return filepath.Join(dataDir, "run", SocketName)
}

// Listen listens on a Unix socket at path for the model. The directory is created with mode
// 0700 (an existing one must belong to this user; its mode is set to 0700), and the socket is
// 0600, so no other OS user can connect. A stale socket left by a crashed run is removed; a live
// one (another Poppydesk answering) is an error.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("modelapi: creating the socket directory %s failed: %w; check its parent's permissions", dir, err)
	}
	if err := checkOwnDir(dir); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("modelapi: making the socket directory %s private (0700) failed: %w", dir, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("modelapi: %s exists and is not a socket; remove it and start Poppydesk again", path)
		}
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("modelapi: another Poppydesk is already serving the model interface at %s; close it first", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("modelapi: removing the stale socket %s failed: %w", path, err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("modelapi: listening on %s failed: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("modelapi: making the socket %s private (0600) failed: %w", path, err)
	}
	return ln, nil
}

// Serve accepts connections on ln and serves each as one MCP session of srv (newline-delimited
// JSON-RPC over the connection), until ctx ends or ln is closed. A connection from another OS
// user (checked with SO_PEERCRED where the system has it) is closed without being served.
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
		if err := checkPeer(conn); err != nil {
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

// Dial connects to the app's socket.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

// Relay copies in to conn and conn to out until conn ends (the app closed the session) or in
// ends and the app has answered everything (in's EOF half-closes conn). It is what
// `poppydesk mcp` runs between an MCP client's stdio and the app.
func Relay(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	go func() {
		io.Copy(conn, in)
		if uc, ok := conn.(interface{ CloseWrite() error }); ok {
			uc.CloseWrite()
		}
	}()
	_, err := io.Copy(out, conn)
	if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("modelapi: relaying to Poppydesk failed: %w", err)
	}
	return nil
}
