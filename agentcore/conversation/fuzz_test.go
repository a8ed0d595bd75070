package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// FuzzSSE: the SSE parser never panics, and every event's data and type came from the input.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("id: evt_1\ndata: {\"id\":\"evt_1\"}\n\n"))
	f.Add([]byte("event: text-delta\r\ndata: {\"message_id\":\"m\",\"text\":\"hi \"}\r\n\r\n"))
	f.Add([]byte("\uFEFF: comment\ndata: a\ndata: b\n\nid\x00: x\n"))
	f.Add([]byte("data:x\rdata:y\r\r"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newSSEReader(bytes.NewReader(in))
		for i := 0; i < 1000; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			for _, line := range bytes.Split(ev.Data, []byte("\n")) {
				if !bytes.Contains(in, line) {
					t.Fatalf("data line %q is not in the input", line)
				}
			}
			if ev.Type != "message" && !bytes.Contains(in, []byte(ev.Type)) {
				t.Fatalf("type %q is not in the input", ev.Type)
			}
		}
	})
}

// TestSSEParser checks the WHATWG rules the engine relies on (table-driven).
func TestSSEParser(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []sseEvent
	}{
		{"id and data", "id: e1\ndata: {}\n\n", []sseEvent{{ID: "e1", HasID: true, Type: "message", Data: []byte("{}")}}},
		{"delta without id", "event: text-delta\ndata: x\n\n", []sseEvent{{Type: "text-delta", Data: []byte("x")}}},
		{"multi-line data, CRLF", "data: a\r\ndata: b\r\n\r\n", []sseEvent{{Type: "message", Data: []byte("a\nb")}}},
		{"comment and no data", ": hi\nid: x\n\n", nil},
		{"partial last event dropped", "data: a\n\ndata: b\n", []sseEvent{{Type: "message", Data: []byte("a")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSSEReader(bytes.NewReader([]byte(tc.in)))
			var got []sseEvent
			for {
				ev, err := r.Next()
				if err != nil {
					break
				}
				got = append(got, ev)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events, want %d: %+v", len(got), len(tc.want), got)
			}
			for i := range got {
				if got[i].ID != tc.want[i].ID || got[i].Type != tc.want[i].Type || !bytes.Equal(got[i].Data, tc.want[i].Data) {
					t.Fatalf("event %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzHandle feeds a Company's event stream (spec 8.5, 8.6) through the SSE parser and the
// event handler, as Stream does: nothing panics, every handled event has a valid ID and is
// handled once, authors are only "agent" or "human" (spec 8.7), and statuses and responders
// are normalized.
func FuzzHandle(f *testing.F) {
	f.Add([]byte("id: e1\ndata: {\"id\":\"e1\",\"type\":\"message\",\"message\":{\"id\":\"m1\",\"role\":\"company\",\"author\":{\"type\":\"agent\"},\"text\":\"hi\"}}\n\n"))
	f.Add([]byte("data: {\"id\":\"e2\",\"type\":\"state\",\"status\":\"idle\",\"responder\":\"bot\"}\n\ndata: {\"id\":\"e2\",\"type\":\"state\"}\n\n"))
	f.Add([]byte("data: {\"id\":\"e3\",\"type\":\"authorization\",\"scope\":\"orders:read orders:write\"}\n\n"))
	f.Add([]byte("data: {\"id\":\"e4\",\"type\":\"user_requested\",\"reason\":\"x\"}\n\ndata: {\"id\":\"e5\",\"type\":\"direct_opened\",\"conversation_id\":\"d1\"}\n\n"))
	f.Add([]byte("data: {\"id\":\"e6\",\"type\":\"message\",\"message\":{\"id\":\"m2\",\"role\":\"company\",\"author\":{\"type\":\"robot\"},\"extensions\":{\"operations\":{\"operation\":{\"operation_id\":\"op\",\"revision\":\"1\"}}}}}\n\n"))
	f.Add([]byte("event: text-delta\ndata: {\"message_id\":\"m3\",\"text\":\"pie\"}\n\n"))
	m := &Manager{cfg: Config{Now: time.Now}, log: slog.New(slog.DiscardHandler), convs: map[string]*conv{}, subs: map[chan struct{}]struct{}{}}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &conv{company: "https://auth.shop.example", id: "c1", handled: map[string]bool{}, deltas: map[string]*deltaText{}}
		r := newSSEReader(bytes.NewReader(in))
		for i := 0; i < 1000; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if ev.Type == "text-delta" {
				var d textDelta
				_ = json.Unmarshal(ev.Data, &d)
				continue
			}
			for _, declares := range []bool{true, false} {
				e, ok := m.handle(context.Background(), c, nil, json.RawMessage(ev.Data), declares)
				if !ok {
					continue
				}
				if !declares {
					t.Fatalf("event %s handled twice", e.EventID)
				}
				if !headers.ValidID(e.EventID) || !c.handled[e.EventID] {
					t.Fatalf("handled an event with ID %q", e.EventID)
				}
				if e.Author != nil && e.Author.Type != AuthorAgent && e.Author.Type != AuthorHuman {
					t.Fatalf("author type %q", e.Author.Type)
				}
				if e.Type == EventState && (NormalizeStatus(e.Status) != e.Status || NormalizeResponder(e.Responder) != e.Responder) {
					t.Fatalf("state not normalized: %+v", e)
				}
			}
		}
	})
}
