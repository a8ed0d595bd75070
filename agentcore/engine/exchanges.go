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

// exchangeQueue is how many observed exchanges may wait for the state store. The transport
// reports an exchange when its response body is closed; the request must not wait for an
// SQLite commit (synchronous=FULL), so exchanges are written by one goroutine, in order. When
// the queue is full the exchange is dropped and counted, never blocking a request.
const exchangeQueue = 512

type sinkItem struct {
	ex      *store.Exchange
	flushed chan struct{}
}

// exchangeSink turns transport observations into store.Exchanges in the state store.
type exchangeSink struct {
	st       store.EngineState
	log      *slog.Logger
	now      func() time.Time
	company  func(host string) string
	onRecord func(store.Exchange)

	mu      sync.Mutex // guards closed and sends on ch
	closed  bool
	ch      chan sinkItem
	done    chan struct{}
	dropped atomic.Int64
}

func newExchangeSink(st store.EngineState, log *slog.Logger, now func() time.Time, company func(string) string, onRecord func(store.Exchange)) *exchangeSink {
	s := &exchangeSink{st: st, log: log, now: now, company: company, onRecord: onRecord,
		ch: make(chan sinkItem, exchangeQueue), done: make(chan struct{})}
	go s.run()
	return s
}

// observe is the transport's Observer. The exchange is already redacted by agentcore/transport.
func (s *exchangeSink) observe(ex transport.Exchange) {
	rec := &store.Exchange{
		At: s.now().Add(-ex.Duration), Direction: "outgoing", Method: ex.Method, URL: ex.URL, Status: ex.Status,
		RequestHeaders: ex.RequestHeader, RequestBody: ex.RequestBody,
		ResponseHeaders: ex.ResponseHeader, ResponseBody: ex.ResponseBody, Duration: ex.Duration,
	}
	if d, ok := ex.Inspected.(*inspect.Details); ok {
		rec.Details = d.Marshal()
	}
	if ex.Status == 0 && ex.Err != "" {
		rec.ResponseBody = []byte(redact.String(ex.Err))
	}
	if u, err := url.Parse(ex.URL); err == nil {
		rec.Company = s.company(strings.ToLower(u.Host))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.dropped.Add(1)
		return
	}
	select {
	case s.ch <- sinkItem{ex: rec}:
	default:
		if n := s.dropped.Add(1); n == 1 || n%100 == 0 {
			s.log.Warn("engine: the exchange log is falling behind; exchanges were dropped from the inspector", "dropped", n)
		}
	}
}

func (s *exchangeSink) run() {
	defer close(s.done)
	for it := range s.ch {
		if it.flushed != nil {
			close(it.flushed)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		id, err := s.st.AddExchange(ctx, *it.ex)
		cancel()
		if err != nil {
			s.log.Warn("engine: could not store an exchange in the inspector's log", "url", it.ex.URL, "err", err)
			continue
		}
		it.ex.ID = id
		if s.onRecord != nil {
			s.onRecord(*it.ex)
		}
	}
}

// flush waits until every exchange observed before the call is stored.
func (s *exchangeSink) flush(ctx context.Context) error {
	done := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	select {
	case s.ch <- sinkItem{flushed: done}:
	case <-ctx.Done():
		s.mu.Unlock()
		return ctx.Err()
	}
	s.mu.Unlock()
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
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
