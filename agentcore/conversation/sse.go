package conversation

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
)

// sseEvent is one dispatched server-sent event (WHATWG HTML "Server-sent events" §9.2.6).
type sseEvent struct {
	ID    string // the event's id field ("" when it had none)
	HasID bool
	Type  string // the event field, "message" when absent
	Data  []byte
}

// maxSSEEvent bounds one event's data (a Company message is far smaller).
const maxSSEEvent = 4 << 20

// maxSSEStream bounds what one stream connection may deliver. Text-delta pieces are kept
// until their message arrives and are dropped on reconnect (spec 8.6), so this also bounds the
// memory a Company can make the engine hold with pieces of a message it never sends. Past it,
// Next fails with errSSEStreamTooLong and the caller reconnects with Last-Event-ID.
const maxSSEStream = 64 << 20

// errSSEStreamTooLong ends a stream connection that delivered more than maxSSEStream bytes.
var errSSEStreamTooLong = errors.New("the event stream connection delivered more than 64 MiB; reconnecting (spec 8.6)")

// sseReader parses an event stream. It is hand-written (about 60 lines) because neither the
// standard library nor the module's dependencies parse SSE; it follows the WHATWG
// interpretation rules: lines end in CRLF, LF or CR; a leading BOM is skipped; ":" starts a
// comment; "field: value" drops one leading space; data lines are joined with "\n"; an empty
// line dispatches; an id containing NUL is ignored; an event without data is not dispatched.
// FuzzSSE checks it never panics and that what it returns came from the input.
type sseReader struct {
	r     *bufio.Reader
	first bool
	left  int64 // bytes this connection may still deliver (maxSSEStream at start)
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), first: true, left: maxSSEStream}
}

// Buffered reports whether more bytes are already read (so the caller need not save yet).
func (s *sseReader) Buffered() bool { return s.r.Buffered() > 0 }

func (s *sseReader) line() (string, error) {
	var b []byte
	for {
		if s.left <= 0 {
			return "", errSSEStreamTooLong
		}
		c, err := s.r.ReadByte()
		if err != nil {
			if len(b) > 0 && err == io.EOF {
				return "", io.ErrUnexpectedEOF // an unterminated last line is not an event
			}
			return "", err
		}
		s.left--
		switch c {
		case '\n':
			return string(b), nil
		case '\r':
			if n, err := s.r.Peek(1); err == nil && n[0] == '\n' {
				s.r.ReadByte()
				s.left--
			}
			return string(b), nil
		}
		if len(b) >= maxSSEEvent {
			return "", io.ErrShortBuffer
		}
		b = append(b, c)
	}
}

// Next returns the next dispatched event. io.EOF (or another error) ends the stream; a partial
// event at the end is dropped, as the standard says.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	for {
		ln, err := s.line()
		if err != nil {
			return sseEvent{}, err
		}
		if s.first {
			ln = strings.TrimPrefix(ln, "\uFEFF")
			s.first = false
		}
		if ln == "" {
			if !hasData {
				ev = sseEvent{}
				continue
			}
			if ev.Type == "" {
				ev.Type = "message"
			}
			ev.Data = data.Bytes()
			return ev, nil
		}
		if ln[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(ln, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			hasData = true
			if data.Len()+len(value) > maxSSEEvent {
				return sseEvent{}, io.ErrShortBuffer
			}
			data.WriteString(value)
		case "id":
			if !strings.ContainsRune(value, 0) {
				ev.ID, ev.HasID = value, true
			}
		}
	}
}
