package inspect

import (
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Exchange is a transport observation as the Inspector stores it: redacted by the transport,
// with the Details that Decode kept (transport.Config.Inspect), and the error of an exchange
// that got no response, redacted, in place of its body. It ended at end.
func Exchange(ex transport.Exchange, end time.Time) store.Exchange {
	rec := store.Exchange{
		At: end.Add(-ex.Duration), Direction: "outgoing", Method: ex.Method, URL: ex.URL, Status: ex.Status,
		RequestHeaders: ex.RequestHeader, RequestBody: ex.RequestBody,
		ResponseHeaders: ex.ResponseHeader, ResponseBody: ex.ResponseBody, Duration: ex.Duration,
	}
	if d, ok := ex.Inspected.(*Details); ok {
		rec.Details = d.Marshal()
	}
	if ex.Status == 0 && ex.Err != "" {
		rec.ResponseBody = []byte(redact.String(ex.Err))
	}
	return rec
}

// Recorder keeps the exchanges of a transport in memory, as the Inspector would store them,
// for an export without a state store (`poppydesk check --har`). Set Observe as the
// transport's Observer and Decode as its Inspect.
type Recorder struct {
	Now func() time.Time // nil: time.Now

	mu  sync.Mutex
	exs []store.Exchange
}

// Observe records one exchange (a transport.Config.Observer).
func (r *Recorder) Observe(ex transport.Exchange) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	rec := Exchange(ex, now())
	r.mu.Lock()
	rec.ID = int64(len(r.exs) + 1)
	r.exs = append(r.exs, rec)
	r.mu.Unlock()
}

// Exchanges returns the exchanges recorded so far, in the order they ended.
func (r *Recorder) Exchanges() []store.Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.Exchange(nil), r.exs...)
}
