package vault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// AddFeedbackReport records a report before it is sent (spec 9.3); an existing (Company, Key)
// fails with an error matching store.ErrExists.
func (s *State) AddFeedbackReport(ctx context.Context, r store.FeedbackReport) error {
	if r.Company == "" || r.Key == "" {
		return errors.New("add feedback report: company and key must not be empty")
	}
	return s.tx(ctx, "add feedback report", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO feedback_reports (company, task_key, task, description, status, created_at, answered_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (company, task_key) DO NOTHING`,
			r.Company, r.Key, r.Task, r.Description, r.Status, r.Created.UnixNano(), ns(r.Answered))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("the task %q was already reported to %s: %w", r.Key, r.Company, store.ErrExists)
		}
		return nil
	})
}

// SetFeedbackReportStatus records the Company's answer to a report.
func (s *State) SetFeedbackReportStatus(ctx context.Context, company, key, status string, at time.Time) error {
	return s.tx(ctx, "set feedback report status", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE feedback_reports SET status = ?, answered_at = ? WHERE company = ? AND task_key = ?`,
			status, ns(at), company, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundf("no report of %q to %s", key, company)
		}
		return nil
	})
}

// DeleteFeedbackReport removes a report the Company did not take (no error if there is none).
func (s *State) DeleteFeedbackReport(ctx context.Context, company, key string) error {
	return s.tx(ctx, "delete feedback report", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM feedback_reports WHERE company = ? AND task_key = ?`, company, key)
		return err
	})
}

const feedbackCols = `company, task_key, task, description, status, created_at, answered_at`

func scanFeedback(sc interface{ Scan(...any) error }) (store.FeedbackReport, error) {
	var r store.FeedbackReport
	var created, answered sql.NullInt64
	if err := sc.Scan(&r.Company, &r.Key, &r.Task, &r.Description, &r.Status, &created, &answered); err != nil {
		return r, err
	}
	r.Created, r.Answered = fromNS(created), fromNS(answered)
	return r, nil
}

// GetFeedbackReport returns the report (company, key), or an error matching store.ErrNotFound.
func (s *State) GetFeedbackReport(ctx context.Context, company, key string) (store.FeedbackReport, error) {
	r, err := scanFeedback(s.r.QueryRowContext(ctx, `SELECT `+feedbackCols+` FROM feedback_reports WHERE company = ? AND task_key = ?`, company, key))
	if errors.Is(err, sql.ErrNoRows) {
		return r, notFoundf("no report of %q to %s", key, company)
	}
	if err != nil {
		return r, fmt.Errorf("get feedback report: %w", err)
	}
	return r, nil
}

// ListFeedbackReports returns the reports sent to company ("" for every Company), newest first.
func (s *State) ListFeedbackReports(ctx context.Context, company string) ([]store.FeedbackReport, error) {
	q := `SELECT ` + feedbackCols + ` FROM feedback_reports`
	var args []any
	if company != "" {
		q += ` WHERE company = ?`
		args = append(args, company)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY created_at DESC, company, task_key`, args...)
	if err != nil {
		return nil, fmt.Errorf("list feedback reports: %w", err)
	}
	defer rows.Close()
	var out []store.FeedbackReport
	for rows.Next() {
		r, err := scanFeedback(rows)
		if err != nil {
			return nil, fmt.Errorf("list feedback reports: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
