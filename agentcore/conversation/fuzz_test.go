package conversation

import (
	"bytes"
	"testing"
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
