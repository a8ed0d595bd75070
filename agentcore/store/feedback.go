package store

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// FeedbackReports remembers the reports of tasks Poppydesk could not do that it sent to
// Companies (spec 9.3), so that each task is reported once per Company, not once per attempt, and
// the window can show every report sent. A report is added before it is sent (write before
// send), so a crash between sending and recording never leads to a second report. Every write
// is durable when it returns; an absent report is an error matching [ErrNotFound].
type FeedbackReports interface {
	// AddFeedbackReport records r before it is sent. A report with the same (Company, Key)
	// fails with an error matching [ErrExists] and changes nothing.
	AddFeedbackReport(ctx context.Context, r FeedbackReport) error
	// SetFeedbackReportStatus records the Company's answer to the report (company, key).
	SetFeedbackReportStatus(ctx context.Context, company, key, status string, at time.Time) error
	// DeleteFeedbackReport removes the report (company, key), when the Company did not take it,
	// so that it can be sent again later. An absent report is no error.
	DeleteFeedbackReport(ctx context.Context, company, key string) error
	// GetFeedbackReport returns the report (company, key).
	GetFeedbackReport(ctx context.Context, company, key string) (FeedbackReport, error)
	// ListFeedbackReports returns the reports sent to company ("" for every Company), newest
	// first.
	ListFeedbackReports(ctx context.Context, company string) ([]FeedbackReport, error)
}

// Statuses of a [FeedbackReport].
const (
	FeedbackSending     = "sending"     // recorded, not answered yet
	FeedbackAccepted    = "accepted"    // the Company answered 202 (or another success)
	FeedbackAlternative = "alternative" // the Company answered 200 with an alternative (spec 9.2)
)

// FeedbackReport is one report as sent to a Company's feedback endpoint (spec 9.3): the text
// exactly as sent, after Poppydesk removed secrets and the identifiers it knows, so it holds no
// secret (docs/DESIGN.md invariant 5). Key is the task in a normalised form: one report per
// (Company, Key).
type FeedbackReport struct {
	Company     string
	Key         string
	Task        string
	Description string
	Status      string
	Created     time.Time
	Answered    time.Time // zero while Status is FeedbackSending
}

// MemoryFeedbackReports is an in-memory [FeedbackReports] for tests. Safe for concurrent use.
type MemoryFeedbackReports struct {
	mu sync.Mutex
	m  map[[2]string]FeedbackReport
}

var _ FeedbackReports = (*MemoryFeedbackReports)(nil)

// NewMemoryFeedbackReports returns an empty MemoryFeedbackReports.
func NewMemoryFeedbackReports() *MemoryFeedbackReports {
	return &MemoryFeedbackReports{m: map[[2]string]FeedbackReport{}}
}

// AddFeedbackReport implements [FeedbackReports].
func (m *MemoryFeedbackReports) AddFeedbackReport(_ context.Context, r FeedbackReport) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{r.Company, r.Key}
	if _, ok := m.m[k]; ok {
		return fmt.Errorf("the task %q was already reported to %s: %w", r.Key, r.Company, ErrExists)
	}
	m.m[k] = r
	return nil
}

// SetFeedbackReportStatus implements [FeedbackReports].
func (m *MemoryFeedbackReports) SetFeedbackReportStatus(_ context.Context, company, key, status string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{company, key}
	r, ok := m.m[k]
	if !ok {
		return fmt.Errorf("no report of %q to %s: %w", key, company, ErrNotFound)
	}
	r.Status, r.Answered = status, at
	m.m[k] = r
	return nil
}

// DeleteFeedbackReport implements [FeedbackReports].
func (m *MemoryFeedbackReports) DeleteFeedbackReport(_ context.Context, company, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, [2]string{company, key})
	return nil
}

// GetFeedbackReport implements [FeedbackReports].
func (m *MemoryFeedbackReports) GetFeedbackReport(_ context.Context, company, key string) (FeedbackReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[[2]string{company, key}]
	if !ok {
		return r, fmt.Errorf("no report of %q to %s: %w", key, company, ErrNotFound)
	}
	return r, nil
}

// ListFeedbackReports implements [FeedbackReports].
func (m *MemoryFeedbackReports) ListFeedbackReports(_ context.Context, company string) ([]FeedbackReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []FeedbackReport
	for _, r := range m.m {
		if company == "" || r.Company == company {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].Company+"\x00"+out[i].Key < out[j].Company+"\x00"+out[j].Key
	})
	return out, nil
}
