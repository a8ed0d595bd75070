package fronts

import (
	"reflect"
	"testing"
)

func TestShellSections(t *testing.T) {
	tests := []struct {
		name   string
		counts map[string]int
		want   map[string]int
	}{
		{name: "nothing pending: every count is zero", want: map[string]int{}},
		{
			name:   "counts are shown; negatives are clamped",
			counts: map[string]int{SectionApprovals: 2, SectionInspector: -1},
			want:   map[string]int{SectionApprovals: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sectionsOf(tt.counts)
			var ids []string
			for _, sec := range got {
				ids = append(ids, sec.ID)
				if sec.Count != tt.want[sec.ID] {
					t.Errorf("%s count = %d, want %d", sec.ID, sec.Count, tt.want[sec.ID])
				}
				if sec.Title == "" {
					t.Errorf("%s has no title", sec.ID)
				}
			}
			wantIDs := []string{"approvals", "companies", "signin", "conversations", "browser", "inspector", "settings"}
			if !reflect.DeepEqual(ids, wantIDs) {
				t.Errorf("ids = %v, want %v (the frontend's sections.ts uses these)", ids, wantIDs)
			}
		})
	}
}
