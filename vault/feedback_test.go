package vault

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// TestFeedbackReports: one report per (Company, task key), durable before it is sent (spec 9.3);
// the answer is recorded; a report the Company did not take can be removed and sent again.
func TestFeedbackReports(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	const co = "https://a.example"
	r := store.FeedbackReport{Company: co, Key: "pay with a gift card", Task: "Pay with a gift card", Description: "d", Status: store.FeedbackSending, Created: t0}
	must(t, s.AddFeedbackReport(ctx, r))
	dup := r
	dup.Description = "another attempt"
	if err := s.AddFeedbackReport(ctx, dup); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a second report of the same task = %v, want ErrExists", err)
	}
	if got, err := s.GetFeedbackReport(ctx, co, r.Key); err != nil || got.Description != "d" || !got.Answered.IsZero() {
		t.Fatalf("GetFeedbackReport = %+v, %v (the second attempt must change nothing)", got, err)
	}
	must(t, s.SetFeedbackReportStatus(ctx, co, r.Key, store.FeedbackAlternative, t0.Add(time.Second)))
	if err := s.SetFeedbackReportStatus(ctx, co, "other", store.FeedbackAccepted, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("status of an unknown report = %v, want ErrNotFound", err)
	}
	must(t, s.AddFeedbackReport(ctx, store.FeedbackReport{Company: "https://b.example", Key: "k", Task: "T", Status: store.FeedbackAccepted, Created: t0.Add(time.Minute)}))
	all, err := s.ListFeedbackReports(ctx, "")
	if err != nil || len(all) != 2 || all[0].Company != "https://b.example" || all[1].Status != store.FeedbackAlternative || !all[1].Answered.Equal(t0.Add(time.Second)) {
		t.Fatalf("ListFeedbackReports = %+v, %v (newest first, with the answer)", all, err)
	}
	must(t, s.DeleteFeedbackReport(ctx, co, r.Key))
	if one, _ := s.ListFeedbackReports(ctx, co); len(one) != 0 {
		t.Fatalf("after delete: %+v", one)
	}
	must(t, s.AddFeedbackReport(ctx, dup))
}
