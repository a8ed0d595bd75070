package engine

import (
	"log/slog"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// The exchange log's bounds, for its tests (exchanges.go).
const (
	ExchangeQueue = exchangeQueue
	MaxBatch      = maxBatch
	BatchWindow   = batchWindow
)

// ExchangeWriter is the exchange log's writer called directly, without its goroutine and queue,
// for the writer's benchmark: Write decodes, encodes and stores exs as one batch, as the writer
// does with what it takes from the queue.
type ExchangeWriter struct{ s *exchangeSink }

// NewExchangeWriter is a writer into st that names every host's Company company.
func NewExchangeWriter(st store.EngineState, company string) *ExchangeWriter {
	return &ExchangeWriter{s: &exchangeSink{st: st, log: slog.New(slog.DiscardHandler), now: time.Now,
		company: func(string) string { return company }}}
}

// Write stores exs as one batch, reported at.
func (w *ExchangeWriter) Write(exs []transport.Exchange, at time.Time) {
	batch := make([]sinkItem, len(exs))
	for i, ex := range exs {
		batch[i] = sinkItem{ex: ex, at: at}
	}
	w.s.write(batch)
}

// Record is the stored form of ex reported at (the columns the writer inserts).
func (w *ExchangeWriter) Record(ex transport.Exchange, at time.Time) store.Exchange {
	return w.s.record(sinkItem{ex: ex, at: at})
}
