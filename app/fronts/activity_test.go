package fronts

import (
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// TestActivityListsNewestFirst: the Inspector's list is the ring's newest entries first, up to
// the limit, with times in UTC. (The Host's ring and its EventActivity: fronts_test.go.)
func TestActivityListsNewestFirst(t *testing.T) {
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
			var added int
			ring.OnChange(func(modelapi.ActivityEntry) { added++ })
			for i := 0; i < tc.add; i++ {
				ring.Add(modelapi.ActivityEntry{Tool: "describe_company", Company: "shop.example", At: at, Status: "done", DurationMS: 3})
			}
			got := activityList(ring, tc.limit)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d", len(got), len(tc.want))
			}
			for i, e := range got {
				if e.Seq != tc.want[i] || e.At != "2026-11-29T17:00:00Z" || e.Tool != "describe_company" {
					t.Fatalf("entry %d = %+v", i, e)
				}
			}
			if added != tc.add {
				t.Fatalf("%d changes for %d entries", added, tc.add)
			}
		})
	}
}
