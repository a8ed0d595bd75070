package app

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLifecycleShutdownWaitsForWork(t *testing.T) {
	l := NewLifecycle(context.Background(), nil)
	var finished atomic.Bool
	started := make(chan struct{})
	if err := l.Go("save approval", func(ctx context.Context) {
		close(started)
		<-ctx.Done() // the root context is cancelled by Shutdown
		finished.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := l.ShutdownWithin(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("Shutdown returned before the work finished")
	}
	if err := l.Go("late", func(context.Context) {}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("Go after shutdown: err = %v, want ErrShuttingDown", err)
	}
	if err := l.ShutdownWithin(time.Second); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestLifecycleShutdownDeadlineNamesStuckWork(t *testing.T) {
	l := NewLifecycle(context.Background(), nil)
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	_ = l.Go("stuck upload", func(context.Context) { close(started); <-release })
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the deadline has already passed
	err := l.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "stuck upload") {
		t.Fatalf("err = %v, want it to name the stuck work", err)
	}
	if l.Context().Err() == nil {
		t.Fatal("the root context was not cancelled")
	}
}
