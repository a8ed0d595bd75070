package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemoryFeedbackReports: the in-memory store keeps the contract of FeedbackReports: one
// report per (Company, key), the answer recorded, newest first, removable.
func TestMemoryFeedbackReports(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryFeedbackReports()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r := FeedbackReport{Company: "https://a.example", Key: "k", Task: "K", Status: FeedbackSending, Created: t0}
	if err := m.AddFeedbackReport(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := m.AddFeedbackReport(ctx, r); !errors.Is(err, ErrExists) {
		t.Fatalf("second add = %v, want ErrExists", err)
	}
	if err := m.SetFeedbackReportStatus(ctx, r.Company, "k", FeedbackAccepted, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetFeedbackReportStatus(ctx, r.Company, "other", FeedbackAccepted, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("status of an unknown report = %v", err)
	}
	if err := m.AddFeedbackReport(ctx, FeedbackReport{Company: "https://b.example", Key: "k", Created: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	all, _ := m.ListFeedbackReports(ctx, "")
	if len(all) != 2 || all[0].Company != "https://b.example" || all[1].Status != FeedbackAccepted {
		t.Fatalf("List = %+v", all)
	}
	m.DeleteFeedbackReport(ctx, r.Company, "k")
	if _, err := m.GetFeedbackReport(ctx, r.Company, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
