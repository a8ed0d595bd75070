package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Read reads the events after the saved cursor (spec 8.5), holding up to wait for the first,
// reading again at once while has_more, from the beginning after cursor_expired.
func (m *Manager) Read(ctx context.Context, company, id string, wait time.Duration) (*View, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var news []Entry
	var v *View
	for {
		cl, err := m.client(ctx, c, "read")
		if err != nil {
			return nil, err
		}
		q := url.Values{}
		if c.cursor != "" {
			q.Set("cursor", c.cursor)
		}
		if wait > 0 {
			q.Set("wait", waitSeconds(wait))
		}
		resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: withQuery(c.st.Endpoint+"/"+url.PathEscape(c.id)+"/events", q),
			Header: http.Header{"Accept": {"application/json"}}})
		if err != nil {
			if transport.IsCode(err, transport.CodeCursorExpired) && c.cursor != "" {
				// spec 8.5: read from the beginning; IDs already handled are skipped.
				m.log.InfoContext(ctx, "conversation: the cursor expired; reading from the beginning (spec 8.5)", "company", company, "conversation", id)
				c.cursor = ""
				continue
			}
			e := explain("read", company, id, err)
			var ce *Error
			if errors.As(e, &ce) && ce.Code == "sign_in_needed" {
				m.needAuth(ctx, c, ce.Scopes, "")
				_ = m.save(ctx, c)
			}
			return nil, e
		}
		c.noteToken(resp)
		var rr readResponse
		derr := decodeBody(resp, &rr)
		resp.Body.Close()
		if derr != nil {
			return nil, &Error{Op: "read", Company: company, ConversationID: id, Code: "bad_response", Msg: "the Company's read is not the JSON of spec 8.5", Err: derr}
		}
		if v, err = m.apply(ctx, c, cl, resp, &rr); err != nil {
			return nil, err
		}
		news = append(news, v.New...)
		if !rr.HasMore {
			break
		}
		wait = 0
	}
	v.New = news
	return v, nil
}

// Stream follows a conversation with server-sent events (spec 8.6) until ctx ends or the
// conversation is closed: each event is handled in order and the cursor saved after it (batched
// while more bytes are already buffered); text-delta pieces are reported as they arrive and
// replaced by the full message; when the stream ends (the Company MAY close it at any time) it
// reconnects with Last-Event-ID and drops the pieces of messages not received in full. A Company
// that answers JSON is read the same way (8.5).
func (m *Manager) Stream(ctx context.Context, company, id string) error {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return err
	}
	failures := 0
	// retry is the reconnection time (spec 8.6, WHATWG SSE): minReconnect until the Company
	// sends a `retry:` field; it stays for later connections, as with an EventSource.
	retry := minReconnect
	for ctx.Err() == nil {
		closed, again, err := m.streamOnce(ctx, c, &retry)
		if closed {
			return nil
		}
		wait := retry
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Code != "network" && ce.Code != "bad_response" {
				return err
			}
			failures++
			if failures > 20 {
				return err
			}
			wait = max(wait, min(time.Duration(failures)*200*time.Millisecond, 5*time.Second))
		} else {
			failures = 0
			if again {
				continue // a JSON read with has_more that handled events: read on at once (spec 8.5)
			}
		}
		// Never reconnect at once after the stream ended (even normally, spec 8.6): a Company
		// that closes every stream at once would otherwise get a tight loop of requests.
		if serr := m.cfg.Sleep(ctx, wait); serr != nil {
			return nil
		}
	}
	return nil
}

// retryWatcher passes an event stream to the SSE parser and notes its `retry:` field: a value
// of ASCII digits only is the reconnection time in milliseconds (WHATWG SSE "retry"); anything
// else is ignored, as the standard says. The lines end in CR, LF or CRLF as in sseReader (an
// extra empty line between CR and LF changes nothing here). It reads no byte the parser doesn't.
type retryWatcher struct {
	r     io.Reader
	line  []byte // the start of the current line (at most 32 bytes: "retry: " and digits)
	long  bool   // the current line is longer than line keeps: not a retry field
	first bool   // the first line, which may start with a BOM
	retry time.Duration
}

func (w *retryWatcher) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n' || b == '\r':
			w.endLine()
		case len(w.line) < 32:
			w.line = append(w.line, b)
		default:
			w.long = true
		}
	}
	return n, err
}

func (w *retryWatcher) endLine() {
	ln := string(w.line)
	if w.first {
		ln, w.first = strings.TrimPrefix(ln, "\uFEFF"), false
	}
	if v, ok := strings.CutPrefix(ln, "retry:"); ok && !w.long {
		v = strings.TrimPrefix(v, " ")
		digits := v != ""
		for i := 0; i < len(v); i++ {
			digits = digits && v[i] >= '0' && v[i] <= '9'
		}
		if digits {
			d := maxReconnect
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms < int64(maxReconnect/time.Millisecond) {
				d = time.Duration(ms) * time.Millisecond
			}
			w.retry = min(max(d, minReconnect), maxReconnect)
		}
	}
	w.line, w.long = w.line[:0], false
}

// streamOnce runs one stream connection. It reports whether the conversation is closed, and
// whether to read again at once (a JSON read with has_more that handled events); a `retry:`
// field of the stream sets *retry.
func (m *Manager) streamOnce(ctx context.Context, c *conv, retry *time.Duration) (closed, again bool, err error) {
	c.mu.Lock()
	cl, err := m.client(ctx, c, "stream")
	if err != nil {
		c.mu.Unlock()
		return false, false, err
	}
	// Pieces of a message not received in full are dropped on (re)connect (spec 8.6).
	if len(c.deltas) > 0 {
		clear(c.deltas)
		c.mu.Unlock()
		m.emit(Update{Kind: UpdateDropDeltas, Company: c.company, ConversationID: c.id})
		c.mu.Lock()
	}
	hdr := http.Header{"Accept": {"text/event-stream"}}
	q := url.Values{}
	if c.cursor != "" {
		hdr.Set("Last-Event-ID", c.cursor)
		q.Set("cursor", c.cursor)
	}
	q.Set("wait", waitSeconds(MaxWait))
	u := withQuery(c.st.Endpoint+"/"+url.PathEscape(c.id)+"/events", q)
	c.mu.Unlock()
	resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: u, Header: hdr})
	if err != nil {
		if transport.IsCode(err, transport.CodeCursorExpired) {
			c.mu.Lock()
			c.cursor = ""
			_ = m.save(ctx, c)
			c.mu.Unlock()
			return false, false, nil
		}
		return false, false, explain("stream", c.company, c.id, err)
	}
	defer resp.Body.Close()
	c.mu.Lock()
	if c.noteToken(resp) {
		_ = m.save(ctx, c)
	}
	c.mu.Unlock()
	if !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		// The Company doesn't stream: a JSON read (spec 8.6).
		var rr readResponse
		if err := decodeBody(resp, &rr); err != nil {
			return false, false, &Error{Op: "stream", Company: c.company, ConversationID: c.id, Code: "bad_response", Msg: "the Company's read is not the JSON of spec 8.5", Err: err}
		}
		c.mu.Lock()
		before := c.cursor
		v, err := m.apply(ctx, c, cl, resp, &rr)
		progress := c.cursor != before
		c.mu.Unlock()
		if err != nil {
			return false, false, err
		}
		return v.Status == StatusClosed && !rr.HasMore, rr.HasMore && progress, nil
	}
	declares := usesOperations(cl.Company())
	rw := &retryWatcher{r: resp.Body, first: true}
	defer func() {
		if rw.retry > 0 {
			*retry = rw.retry
		}
	}()
	sr := newSSEReader(rw)
	dirty := false
	flush := func() {
		if dirty {
			if err := m.save(ctx, c); err != nil {
				m.log.WarnContext(ctx, "conversation: saving the cursor failed", "err", err)
			}
			dirty = false
		}
	}
	for {
		ev, err := sr.Next()
		if err != nil {
			c.mu.Lock()
			flush()
			closed := NormalizeStatus(c.st.Status) == StatusClosed
			c.mu.Unlock()
			if ctx.Err() != nil || closed {
				return closed, false, nil
			}
			return false, false, nil // the Company closed the stream (normal): reconnect after retry
		}
		c.mu.Lock()
		switch ev.Type {
		case "text-delta":
			var d textDelta
			if json.Unmarshal(ev.Data, &d) == nil && d.MessageID != "" {
				text, ok, capped, dropped := c.addDelta(d.MessageID, d.Text)
				if dropped != "" {
					m.log.WarnContext(ctx, "conversation: too many messages being written at once; the pieces of the oldest are dropped (spec 8.6)",
						"company", c.company, "conversation", c.id, "message", dropped)
				}
				if ok {
					c.mu.Unlock()
					m.emit(Update{Kind: UpdateDelta, Company: c.company, ConversationID: c.id, MessageID: d.MessageID, Text: text})
					c.mu.Lock()
				} else if capped {
					m.log.WarnContext(ctx, "conversation: a message's text-delta pieces passed 1 MiB; later pieces are ignored until the full message arrives (spec 8.6)",
						"company", c.company, "conversation", c.id, "message", d.MessageID)
				}
			}
		case "message":
			prev := c.st.Status + "\x00" + c.st.Responder
			m.handle(ctx, c, cl, json.RawMessage(ev.Data), declares)
			dirty = true
			if c.st.Status+"\x00"+c.st.Responder != prev {
				m.emit(Update{Kind: UpdateState, Company: c.company, ConversationID: c.id, Status: NormalizeStatus(c.st.Status), Responder: NormalizeResponder(c.st.Responder)})
			}
		}
		if !sr.Buffered() {
			flush()
		}
		c.mu.Unlock()
	}
}
