package engine

import (
	"log/slog"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestObserveWakesTheWriterOnlyForAFullBatch: queueing an exchange wakes no goroutine while its
// batch gathers; the exchange that fills a batch (maxBatch queued) wakes the writer, as do a flush
// and Close. The sink here has no writer goroutine, so what it queued and signalled stays to be
// read.
func TestObserveWakesTheWriterOnlyForAFullBatch(t *testing.T) {
	s := &exchangeSink{log: slog.New(slog.DiscardHandler), now: time.Now,
		ch: make(chan sinkItem, exchangeQueue), kick: make(chan struct{}, 1), done: make(chan struct{})}
	ex := transport.Exchange{Method: "GET", URL: "https://shop.localhost/api/products", Status: 200}
	for i := 1; i < maxBatch; i++ {
		s.observe(ex)
		if len(s.kick) != 0 {
			t.Fatalf("the writer was woken when %d exchanges were queued, fewer than a batch (%d)", i, maxBatch)
		}
	}
	s.observe(ex)
	if len(s.kick) != 1 {
		t.Fatalf("a full batch (%d queued) did not wake the writer", maxBatch)
	}
	<-s.kick
	s.wake() // a flush or Close
	if len(s.kick) != 1 {
		t.Fatal("wake did not signal the writer")
	}
	if len(s.ch) != maxBatch {
		t.Fatalf("%d exchanges queued, want %d", len(s.ch), maxBatch)
	}
}
