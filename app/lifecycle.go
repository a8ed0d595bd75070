package app

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrShuttingDown is returned by [Lifecycle.Go] once shutdown has begun.
var ErrShuttingDown error = &Error{Message: "Poppydesk is shutting down; the work was not started"}

// Lifecycle owns the application's root context and the work running under it. Shutdown
// cancels the context and waits, up to a deadline, for that work to finish (for example an
// approval being written to disk before it is sent, docs/DESIGN.md invariant 3).
type Lifecycle struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger

	mu       sync.Mutex
	closing  bool
	next     int
	inFlight map[int]string
	wg       sync.WaitGroup
}

// NewLifecycle returns a Lifecycle whose root context is derived from parent.
func NewLifecycle(parent context.Context, log *slog.Logger) *Lifecycle {
	ctx, cancel := context.WithCancel(parent)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lifecycle{ctx: ctx, cancel: cancel, log: log, inFlight: map[int]string{}}
}

// Context is the root context: it is cancelled when shutdown begins.
func (l *Lifecycle) Context() context.Context { return l.ctx }

// Go runs fn in a goroutine under the root context and tracks it until it returns. name says
// what the work is, for the shutdown log.
func (l *Lifecycle) Go(name string, fn func(ctx context.Context)) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return ErrShuttingDown
	}
	id := l.next
	l.next++
	l.inFlight[id] = name
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer func() {
			l.mu.Lock()
			delete(l.inFlight, id)
			l.mu.Unlock()
			l.wg.Done()
		}()
		fn(l.ctx)
	}()
	return nil
}

// Shutdown cancels the root context and waits for the tracked work until ctx ends. It is safe
// to call more than once. If work is still running when ctx ends it returns an error naming it.
func (l *Lifecycle) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	l.cancel()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		l.log.Info("shutdown complete")
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		names := make([]string, 0, len(l.inFlight))
		for _, n := range l.inFlight {
			names = append(names, n)
		}
		l.mu.Unlock()
		sort.Strings(names)
		err := fmt.Errorf("shutdown did not finish in time: still running: %s", strings.Join(names, ", "))
		l.log.Warn("shutdown deadline passed", "running", names)
		return err
	}
}

// ShutdownWithin is Shutdown with a deadline of d from now.
func (l *Lifecycle) ShutdownWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.Shutdown(ctx)
}
