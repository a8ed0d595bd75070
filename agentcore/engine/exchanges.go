package engine

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// The exchange log is written off the request's critical path, in batches (docs/DESIGN.md,
// "The exchange log"). The transport reports an exchange when its response body is closed;
// observe only queues it, with the raw material of what the Inspector decodes
// (inspect.Pending). One writer goroutine takes what is queued, up to maxBatch at a time,
// decodes it, and stores it in one transaction (one commit and one flush to disk for the batch
// instead of one per request), in the order the exchanges were reported; a batch gathers what is
// reported within batchWindow of its first exchange, and a flush, Close or a full batch queued
// writes at once. The writer does not listen on the queue while a batch gathers, so queueing an
// exchange wakes no goroutine but for the first of a batch. The queue holds at most
// exchangeQueue exchanges: when it is full a request waits for room rather than its exchange
// being dropped, so nothing is lost while the engine runs, and Close stores everything queued.
// A crash (the process killed) loses what was queued and not yet committed: at most
// exchangeQueue + maxBatch exchanges, and in time the exchanges reported in the last
// batchWindow plus the commit in progress.
const (
	exchangeQueue = 1024
	maxBatch      = 256
	batchWindow   = 50 * time.Millisecond
)

// sinkItem is an exchange as reported (at: when) or, with flushed set, a flush marker.
type sinkItem struct {
	ex      transport.Exchange
	at      time.Time
	flushed chan struct{}
}

// exchangeSink turns transport observations into store.Exchanges in the state store.
type exchangeSink struct {
	st       store.EngineState
	log      *slog.Logger
	now      func() time.Time
	company  func(host string) string
	onRecord func(store.Exchange)
	dec      inspect.Decoder // the writer's: headers and unchanged tokens decoded once

	mu      sync.RWMutex // guards closed and sends on ch (read-locked by senders)
	closed  bool
	ch      chan sinkItem
	kick    chan struct{} // wakes the writer before its batch window ends (capacity 1)
	done    chan struct{}
	waited  atomic.Int64 // exchanges that waited for room in the queue
	dropped atomic.Int64 // exchanges reported after close
}

func newExchangeSink(st store.EngineState, log *slog.Logger, now func() time.Time, company func(string) string, onRecord func(store.Exchange)) *exchangeSink {
	s := &exchangeSink{st: st, log: log, now: now, company: company, onRecord: onRecord,
		ch: make(chan sinkItem, exchangeQueue), kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

// observe is the transport's Observer. The exchange is already redacted by agentcore/transport;
// its Inspected is decoded by the writer.
func (s *exchangeSink) observe(ex transport.Exchange) {
	it := sinkItem{ex: ex, at: s.now()}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.dropped.Add(1)
		return
	}
	select {
	case s.ch <- it:
	default:
		if n := s.waited.Add(1); n == 1 || n%100 == 0 {
			s.log.Warn("engine: the exchange log is falling behind; requests wait for it to be written", "waited", n)
		}
		s.wake()
		s.ch <- it
	}
	if len(s.ch) >= maxBatch {
		s.wake()
	}
}

// record is the stored form of an observed exchange: the Inspector's details decoded now.
func (s *exchangeSink) record(it sinkItem) store.Exchange {
	ex := it.ex
	rec := store.Exchange{
		At: it.at.Add(-ex.Duration), Direction: "outgoing", Method: ex.Method, URL: ex.URL, Status: ex.Status,
		RequestHeaders: ex.RequestHeader, RequestBody: ex.RequestBody,
		ResponseHeaders: ex.ResponseHeader, ResponseBody: ex.ResponseBody, Duration: ex.Duration,
	}
	switch d := ex.Inspected.(type) {
	case *inspect.Pending:
		rec.Details = s.dec.Details(d).Marshal()
	case *inspect.Details:
		rec.Details = d.Marshal()
	}
	if ex.Status == 0 && ex.Err != "" {
		rec.ResponseBody = []byte(redact.String(ex.Err))
	}
	if u, err := url.Parse(ex.URL); err == nil {
		rec.Company = s.company(strings.ToLower(u.Host))
	}
	return rec
}

// run writes batches: it waits for the first exchange queued, lets the queue gather for up to
// batchWindow (cut short by a flush, close, or a queue that holds maxBatch), then takes what is
// queued, up to maxBatch, and writes it. While the window runs the writer does not listen on the
// queue, so a request's exchange is a send on a buffered channel that wakes no goroutine: only
// the first exchange of a batch does.
func (s *exchangeSink) run() {
	defer close(s.done)
	batch := make([]sinkItem, 0, maxBatch)
	timer := time.NewTimer(batchWindow)
	timer.Stop()
	for it := range s.ch {
		batch = append(batch[:0], it)
		if it.flushed == nil && len(s.ch) < maxBatch-1 {
			timer.Reset(batchWindow)
			select {
			case <-timer.C:
			case <-s.kick:
				timer.Stop()
			}
		}
	more:
		for len(batch) < maxBatch {
			select {
			case next, ok := <-s.ch:
				if !ok {
					break more
				}
				batch = append(batch, next)
			default:
				break more
			}
		}
		s.write(batch)
	}
}

// wake cuts the writer's batch window short (a flush, close, or a full batch queued).
func (s *exchangeSink) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// write stores the batch's exchanges in one transaction, then releases its flush markers.
func (s *exchangeSink) write(batch []sinkItem) {
	recs := make([]store.Exchange, 0, len(batch))
	for _, it := range batch {
		if it.flushed == nil {
			recs = append(recs, s.record(it))
		}
	}
	if len(recs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ids, err := s.st.AddExchanges(ctx, recs)
		cancel()
		if err != nil {
			s.log.Warn("engine: could not store exchanges in the inspector's log", "exchanges", len(recs), "first_url", recs[0].URL, "err", err)
		} else {
			for i := range recs {
				recs[i].ID = ids[i]
				if s.onRecord != nil {
					s.onRecord(recs[i])
				}
			}
		}
	}
	for _, it := range batch {
		if it.flushed != nil {
			close(it.flushed)
		}
	}
}

// flush waits until every exchange observed before the call is stored.
func (s *exchangeSink) flush(ctx context.Context) error {
	done := make(chan struct{})
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil
	}
	select {
	case s.ch <- sinkItem{flushed: done}:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	s.wake()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stores what is queued and stops the writer.
func (s *exchangeSink) close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	s.mu.Unlock()
	s.wake()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
