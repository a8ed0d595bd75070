package modelapi

// Progress notifications (MCP "notifications/progress") for a client that sent a progress token
// with its tools/call: long waits send one at once and then every interval, so a client that
// times out requests without progress keeps waiting, and a Company MCP server's own progress
// reaches the client through call_mcp_tool. The token is the only part of the model's _meta
// that is read; it is never forwarded to a Company (Poppydesk uses its own token there).

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type reporterKey struct{}

// reporter sends progress for one request. Progress only ever increases, as MCP requires.
type reporter struct {
	ss    *mcp.ServerSession
	token any

	mu    sync.Mutex
	last  float64
	total float64
	start time.Time
}

// progressOf is the request's reporter, or nil when the client asked for no progress.
func progressOf(ctx context.Context) *reporter {
	r, _ := ctx.Value(reporterKey{}).(*reporter)
	return r
}

// send sends one notification with progress (raised above the last one sent if needed) and
// msg; total 0 keeps the total set before.
func (r *reporter) send(ctx context.Context, progress, total float64, msg string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if progress <= r.last {
		progress = r.last + 0.001
	}
	r.last = progress
	if total > 0 {
		r.total = total
	}
	if r.total > 0 && progress > r.total {
		progress = r.total
	}
	p := &mcp.ProgressNotificationParams{ProgressToken: r.token, Progress: progress, Total: r.total, Message: msg}
	r.mu.Unlock()
	// A client that went away only loses its progress; the request itself goes on.
	_ = r.ss.NotifyProgress(ctx, p)
}

// heartbeat sends msg at once and then every interval with the seconds elapsed as progress,
// until the returned stop is called or ctx ends.
func (r *reporter) heartbeat(ctx context.Context, msg string, every time.Duration) (stop func()) {
	if every <= 0 {
		every = DefaultProgressInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.mu.Lock()
	r.start = time.Now()
	r.mu.Unlock()
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		r.send(ctx, 0.001, 0, msg)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				r.send(ctx, time.Since(r.start).Seconds(), 0, msg)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// companyProgress is a Company's progress message as it is forwarded: one bounded line, marked
// as the Company's words.
func companyProgress(msg string) string {
	msg = oneLine(msg)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return "the Company's MCP server is working on it"
	}
	return "the Company's MCP server reports (its words, untrusted): " + strings.TrimSpace(msg)
}
