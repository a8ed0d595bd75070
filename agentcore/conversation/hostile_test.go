package conversation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// hostileRun is what a hostile Company's stream did to a Manager: the requests it got, the
// waits the Manager asked for before reconnecting, and the conversation as the window saw it
// just before the first reconnect.
type hostileRun struct {
	requests int
	sleeps   []time.Duration
	view     *conversation.View
	entries  []conversation.Entry
	maxDelta int
}

// runHostile points a conversation at a Company endpoint served by body (on the reference
// Company's other host) and streams it with an injected sleeper (the fake clock): the run stops
// after 5 reconnect waits, or after 50 requests when the Manager never waits (the tight loop).
func runHostile(t *testing.T, contentType, body string) hostileRun {
	t.Helper()
	// The Company's conversation endpoint is on its other host, served by body.
	f := newFixture(t, fixtureOptions{editPoppy: func(s *refcompany.Server, doc map[string]any) {
		doc["agent"] = map[string]any{"protocols": []any{map[string]any{"type": "poppy", "endpoint": s.URL(refcompany.OtherHost, "/poppy/conversations")}}}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var run hostileRun
	f.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		run.requests++
		if run.requests > 50 {
			cancel()
		}
		mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	const id = "conv_hostile"
	st, _ := json.Marshal(map[string]any{"endpoint": f.s.URL(refcompany.OtherHost, "/poppy/conversations"), "status": "working", "responder": "agent"})
	if err := f.store.PutConversation(ctx, store.Conversation{Company: f.company, ID: id, State: string(st), Updated: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	var m *conversation.Manager
	m, err := conversation.New(conversation.Config{Engine: f.e, Store: f.store, Logger: slog.New(slog.DiscardHandler),
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			run.sleeps = append(run.sleeps, d)
			n := len(run.sleeps)
			mu.Unlock()
			if n == 1 {
				v, _, err := m.View(ctx, f.company, id)
				if err != nil {
					t.Error(err)
				}
				es, _, _ := m.Entries(ctx, f.company, id, 0, 1000)
				mu.Lock()
				run.view, run.entries = v, es
				mu.Unlock()
			}
			if n >= 5 {
				cancel()
			}
			return ctx.Err()
		},
		OnUpdate: func(u conversation.Update) {
			if u.Kind == conversation.UpdateDelta {
				mu.Lock()
				run.maxDelta = max(run.maxDelta, len(u.Text))
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Stream(ctx, f.company, id); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return run
}

// TestHostileReconnect: a Company whose stream ends at once (an empty event stream, an instant
// JSON read) gets one request per reconnect wait, never a tight loop; the wait is at least 1 s
// and follows the stream's retry field, bounded to 1 s..60 s (spec 8.6, WHATWG SSE).
func TestHostileReconnect(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		want                    time.Duration
	}{
		{"empty event stream", "text/event-stream", "", time.Second},
		{"instant JSON read", "application/json", `{"events":[],"status":"working","responder":"agent","has_more":false}`, time.Second},
		{"retry 5 s", "text/event-stream", "retry: 5000\n\n", 5 * time.Second},
		{"retry CRLF no space", "text/event-stream", "retry:2500\r\n\r\n", 2500 * time.Millisecond},
		{"retry too short", "text/event-stream", "retry: 10\n\n", time.Second},
		{"retry too long", "text/event-stream", "retry: 99999999999999999999\n\n", time.Minute},
		{"retry not digits", "text/event-stream", "retry: 5s\n\n: retry: 9000\ndata: retry: 9000\n\n", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runHostile(t, tc.contentType, tc.body)
			if len(run.sleeps) != 5 || run.requests != 5 {
				t.Fatalf("%d requests and %d reconnect waits, want 5 of each (no tight loop)", run.requests, len(run.sleeps))
			}
			for _, d := range run.sleeps {
				if d != tc.want {
					t.Fatalf("reconnect waits %v, want %v each", run.sleeps, tc.want)
				}
			}
		})
	}
}

// TestHostileStreamLimits: text-delta pieces are capped per message (1 MiB) and in number of
// messages being written (64, the oldest dropped); the full message still replaces the capped
// text; pending user_requested invites are capped (32, the oldest dropped).
func TestHostileStreamLimits(t *testing.T) {
	piece := func(msg, text string) string {
		b, _ := json.Marshal(map[string]string{"message_id": msg, "text": text})
		return "event: text-delta\ndata: " + string(b) + "\n\n"
	}
	event := func(ev map[string]any) string {
		b, _ := json.Marshal(ev)
		return fmt.Sprintf("id: %s\ndata: %s\n\n", ev["id"], b)
	}
	big := strings.Repeat("x", 32<<10)
	var many, capped, replaced, invites strings.Builder
	for i := range 100 {
		many.WriteString(piece(fmt.Sprintf("msg_%03d", i), "a"))
	}
	for range 48 { // 1.5 MiB
		capped.WriteString(piece("msg_big", big))
	}
	replaced.WriteString(capped.String())
	replaced.WriteString(event(map[string]any{"id": "evt_full", "type": "message",
		"message": map[string]any{"id": "msg_big", "role": "company", "author": map[string]any{"type": "agent"}, "text": "the full text"}}))
	for i := range 40 {
		invites.WriteString(event(map[string]any{"id": fmt.Sprintf("evt_inv%02d", i), "type": "user_requested", "reason": "talk"}))
	}
	for _, tc := range []struct {
		name  string
		body  string
		check func(t *testing.T, run hostileRun)
	}{
		{"many messages being written", many.String(), func(t *testing.T, run hostileRun) {
			if n := len(run.view.Writing); n != 64 {
				t.Fatalf("%d messages being written kept, want 64", n)
			}
			if _, ok := run.view.Writing["msg_099"]; !ok {
				t.Fatal("the newest message being written was dropped")
			}
			if _, ok := run.view.Writing["msg_000"]; ok {
				t.Fatal("the oldest message being written was kept")
			}
		}},
		{"one huge message", capped.String(), func(t *testing.T, run hostileRun) {
			got := len(run.view.Writing["msg_big"])
			if got != 1<<20 || run.maxDelta != 1<<20 {
				t.Fatalf("text so far %d bytes, largest update %d, want both 1 MiB", got, run.maxDelta)
			}
		}},
		{"full message replaces capped text", replaced.String(), func(t *testing.T, run hostileRun) {
			if len(run.view.Writing) != 0 {
				t.Fatalf("pieces remain after the full message: %d", len(run.view.Writing))
			}
			if len(run.entries) != 1 || run.entries[0].Text != "the full text" {
				t.Fatalf("transcript %s, want the full message", dump(run.entries))
			}
		}},
		{"invites", invites.String(), func(t *testing.T, run hostileRun) {
			inv := run.view.Invites
			if len(inv) != 32 || inv[0].EventID != "evt_inv08" || inv[31].EventID != "evt_inv39" {
				t.Fatalf("%d invites kept (%v), want the newest 32", len(inv), inv)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runHostile(t, "text/event-stream", tc.body)
			if run.view == nil {
				t.Fatalf("the Manager never waited before reconnecting (%d requests)", run.requests)
			}
			tc.check(t, run)
		})
	}
}
