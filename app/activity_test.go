package app

import (
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

type activityEmitter struct {
	mu     sync.Mutex
	events []string
}

func (r *activityEmitter) Emit(event string, data ...any) {
	r.mu.Lock()
	r.events = append(r.events, event)
	r.mu.Unlock()
}

func TestActivityListsNewestFirstAndEmits(t *testing.T) {
	at := time.Date(2026, 11, 29, 18, 0, 0, 0, time.FixedZone("X", 3600))
	tests := []struct {
		name  string
		add   int
		limit int
		want  []int64 // sequence numbers
	}{
		{"empty", 0, 10, []int64{}},
		{"all", 3, 0, []int64{3, 2, 1}},
		{"limited", 5, 2, []int64{5, 4}},
		{"ring wraps", 8, 0, []int64{8, 7, 6, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ring := modelapi.NewActivity(4)
			em := &activityEmitter{}
			a := NewActivity(ring, em, ActivityInfo{Socket: "/run/x/mcp.sock", Listening: true})
			for i := 0; i < tc.add; i++ {
				ring.Add(modelapi.ActivityEntry{Tool: "describe_company", Company: "shop.example", At: at, Status: "done", DurationMS: 3})
			}
			got := a.List(tc.limit)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d", len(got), len(tc.want))
			}
			for i, e := range got {
				if e.Seq != tc.want[i] || e.At != "2026-11-29T17:00:00Z" || e.Tool != "describe_company" {
					t.Fatalf("entry %d = %+v", i, e)
				}
			}
			if len(em.events) != tc.add {
				t.Fatalf("%d events for %d entries", len(em.events), tc.add)
			}
			for _, ev := range em.events {
				if ev != EventActivity {
					t.Fatalf("event %q", ev)
				}
			}
			if a.Info().Socket != "/run/x/mcp.sock" || !a.Info().Listening {
				t.Fatalf("info %+v", a.Info())
			}
		})
	}
}
