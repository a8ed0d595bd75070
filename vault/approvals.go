package vault

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// CreateApproval stores a new approval with its first revision, in one transaction, durable when
// it returns. An existing id fails with an error matching store.ErrExists.
func (s *State) CreateApproval(ctx context.Context, a store.Approval, first store.Revision) error {
	if a.ID == "" || a.Company == "" || a.State == "" {
		return errors.New("create approval: id, company and state must not be empty")
	}
	if !json.Valid(a.Request) || !json.Valid(first.Operation) {
		return fmt.Errorf("create approval %q: the request and the operation must be valid JSON", a.ID)
	}
	if a.Updated.IsZero() {
		a.Updated = a.Created
	}
	return s.tx(ctx, "create approval "+a.ID, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO approvals (id, company, account, sid, interface, request, state, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			a.ID, a.Company, a.Account, a.SID, a.Interface, string(a.Request), a.State, a.Created.UnixNano(), a.Updated.UnixNano())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("approval %q already exists: %w", a.ID, store.ErrExists)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approval_revisions (approval_id, revision, operation, received_at) VALUES (?, ?, ?, ?)`,
			a.ID, first.Revision, string(first.Operation), first.Received.UnixNano())
		return err
	})
}

// AddRevision records a newer revision of the operation and sets the approval's state to
// newState (a new revision needs a new decision: docs/DESIGN.md invariant 2). The revision number must
// be greater than every stored one.
func (s *State) AddRevision(ctx context.Context, id string, r store.Revision, newState string) error {
	if !json.Valid(r.Operation) || newState == "" {
		return fmt.Errorf("add revision to approval %q: the operation must be valid JSON and the state not empty", id)
	}
	return s.tx(ctx, "add revision to approval "+id, func(tx *sql.Tx) error {
		var latest sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(revision) FROM approval_revisions WHERE approval_id = ?`, id).Scan(&latest); err != nil {
			return err
		}
		if !latest.Valid {
			return notFoundf("approval %q is not known", id)
		}
		if int64(r.Revision) <= latest.Int64 {
			return fmt.Errorf("approval %q: revision %d is not newer than stored revision %d: %w", id, r.Revision, latest.Int64, store.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO approval_revisions (approval_id, revision, operation, received_at) VALUES (?, ?, ?, ?)`,
			id, r.Revision, string(r.Operation), r.Received.UnixNano()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE approvals SET state = ?, updated_at = ? WHERE id = ?`, newState, r.Received.UnixNano(), id)
		return err
	})
}

// TransitionApproval is the write-before-send step: in one transaction it checks that the
// approval is in state from, sets it to d.To, and appends d to the decision log (d.From is set to
// from; d.At is the time of the change). It returns after the commit, so the change is durable
// before the caller sends anything. If the state is not from, nothing changes and the error
// matches store.ErrConflict. If d.Revision is not the latest revision, the error matches
// store.ErrConflict too (an approval names exactly the latest revision the user saw).
func (s *State) TransitionApproval(ctx context.Context, id, from string, d store.Decision) error {
	if d.To == "" || d.Decision == "" {
		return fmt.Errorf("transition approval %q: the new state and the decision must not be empty", id)
	}
	return s.tx(ctx, "transition approval "+id, func(tx *sql.Tx) error {
		var cur string
		var latest sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT a.state, (SELECT MAX(revision) FROM approval_revisions r WHERE r.approval_id = a.id)
			FROM approvals a WHERE a.id = ?`, id).Scan(&cur, &latest)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundf("approval %q is not known", id)
		}
		if err != nil {
			return err
		}
		if cur != from {
			return fmt.Errorf("approval %q is %q, not %q: %w", id, cur, from, store.ErrConflict)
		}
		if int64(d.Revision) != latest.Int64 {
			return fmt.Errorf("approval %q: decision for revision %d but the latest is %d: %w", id, d.Revision, latest.Int64, store.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET state = ?, updated_at = ? WHERE id = ?`, d.To, d.At.UnixNano(), id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approval_decisions (approval_id, revision, from_state, to_state, decision, decided_at, note)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, id, d.Revision, from, d.To, d.Decision, d.At.UnixNano(), d.Note)
		return err
	})
}

const approvalCols = `id, company, account, sid, interface, request, state, created_at, updated_at`

func scanApproval(sc interface{ Scan(...any) error }) (store.Approval, error) {
	var a store.Approval
	var req string
	var created, updated sql.NullInt64
	if err := sc.Scan(&a.ID, &a.Company, &a.Account, &a.SID, &a.Interface, &req, &a.State, &created, &updated); err != nil {
		return a, err
	}
	a.Request = json.RawMessage(req)
	a.Created, a.Updated = fromNS(created), fromNS(updated)
	return a, nil
}

// GetApproval returns the approval with all its revisions, or an error matching store.ErrNotFound.
func (s *State) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, notFoundf("approval %q is not known", id)
	}
	if err != nil {
		return a, fmt.Errorf("get approval %q: %w", id, err)
	}
	all := []*store.Approval{&a}
	return a, s.fillRevisions(ctx, all)
}

// ListApprovals returns the approvals in any of states (all if none given), oldest first, with
// their revisions.
func (s *State) ListApprovals(ctx context.Context, states ...string) ([]store.Approval, error) {
	q := `SELECT ` + approvalCols + ` FROM approvals`
	var args []any
	if len(states) > 0 {
		list, vals := inList(states)
		q, args = q+` WHERE state IN `+list, vals
	}
	q += ` ORDER BY created_at, id`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	ptrs := make([]*store.Approval, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	return out, s.fillRevisions(ctx, ptrs)
}

// ListApprovalsPage returns a page of approvals, newest first, with their revisions: one range
// scan of the approvals_created or approvals_state_created index (migration 0005), and one
// query for the page's revisions.
func (s *State) ListApprovalsPage(ctx context.Context, q store.ApprovalQuery) ([]store.Approval, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	var where []string
	var args []any
	if len(q.States) > 0 {
		list, vals := inList(q.States)
		where, args = append(where, "state IN "+list), append(args, vals...)
	}
	if len(q.NotStates) > 0 {
		list, vals := inList(q.NotStates)
		where, args = append(where, "state NOT IN "+list), append(args, vals...)
	}
	if q.Company != "" {
		where, args = append(where, "company = ?"), append(args, q.Company)
	}
	from := "approvals"
	if q.OperationID != "" {
		// The operation's revisions by the approval_revisions_operation index (migration 10, the
		// same expression), then their approvals by primary key: without INDEXED BY, SQLite may
		// read every approval of the Company or in the states instead, which grows with the
		// history.
		from = "approvals INDEXED BY sqlite_autoindex_approvals_1"
		where = append(where, "id IN (SELECT approval_id FROM approval_revisions WHERE json_extract(operation, '$.operation.operation_id') = ?)")
		args = append(args, q.OperationID)
	}
	if q.BeforeID != "" {
		at := q.BeforeCreated.UnixNano()
		where = append(where, "(created_at < ? OR created_at = ? AND id < ?)")
		args = append(args, at, at, q.BeforeID)
	}
	query := `SELECT ` + approvalCols + ` FROM ` + from
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY created_at DESC, id DESC LIMIT ?"
	args = append(args, q.Limit)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list a page of approvals: %w", err)
	}
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list a page of approvals: %w", err)
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list a page of approvals: %w", err)
	}
	return out, s.fillPageRevisions(ctx, out)
}

// fillPageRevisions reads the revisions of a page of approvals in one query.
func (s *State) fillPageRevisions(ctx context.Context, page []store.Approval) error {
	if len(page) == 0 {
		return nil
	}
	idx := make(map[string]int, len(page))
	ids := make([]string, len(page))
	for i := range page {
		idx[page[i].ID], ids[i] = i, page[i].ID
	}
	list, args := inList(ids)
	rows, err := s.r.QueryContext(ctx, `SELECT approval_id, revision, operation, received_at FROM approval_revisions
		WHERE approval_id IN `+list+` ORDER BY approval_id, revision`, args...)
	if err != nil {
		return fmt.Errorf("revisions of a page of approvals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, op string
		var r store.Revision
		var at sql.NullInt64
		if err := rows.Scan(&id, &r.Revision, &op, &at); err != nil {
			return fmt.Errorf("revisions of a page of approvals: %w", err)
		}
		r.Operation, r.Received = json.RawMessage(op), fromNS(at)
		a := &page[idx[id]]
		a.Revisions = append(a.Revisions, r)
	}
	return rows.Err()
}

func (s *State) fillRevisions(ctx context.Context, as []*store.Approval) error {
	for _, a := range as {
		rows, err := s.r.QueryContext(ctx, `SELECT revision, operation, received_at FROM approval_revisions WHERE approval_id = ? ORDER BY revision`, a.ID)
		if err != nil {
			return fmt.Errorf("revisions of approval %q: %w", a.ID, err)
		}
		for rows.Next() {
			var r store.Revision
			var op string
			var at sql.NullInt64
			if err := rows.Scan(&r.Revision, &op, &at); err != nil {
				rows.Close()
				return fmt.Errorf("revisions of approval %q: %w", a.ID, err)
			}
			r.Operation, r.Received = json.RawMessage(op), fromNS(at)
			a.Revisions = append(a.Revisions, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("revisions of approval %q: %w", a.ID, err)
		}
	}
	return nil
}

// Decisions returns the decision log of one approval (all approvals if id is ""), in order.
func (s *State) Decisions(ctx context.Context, id string) ([]store.Decision, error) {
	var where string
	var args []any
	if id != "" {
		where, args = ` WHERE approval_id = ?`, []any{id}
	}
	return s.decisions(ctx, where, args)
}

// DecisionsOf implements store.ApprovalPages: the logs of a page of approvals in one query (the
// approval_decisions_approval index).
func (s *State) DecisionsOf(ctx context.Context, ids []string, kinds ...string) (map[string][]store.Decision, error) {
	out := make(map[string][]store.Decision, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, args := inList(ids)
	where := ` WHERE approval_id IN ` + list
	if len(kinds) > 0 {
		list, vals := inList(kinds)
		where, args = where+` AND decision IN `+list, append(args, vals...)
	}
	decs, err := s.decisions(ctx, where, args)
	for _, d := range decs {
		out[d.ApprovalID] = append(out[d.ApprovalID], d)
	}
	return out, err
}

func (s *State) decisions(ctx context.Context, where string, args []any) ([]store.Decision, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, approval_id, revision, from_state, to_state, decision, decided_at, note FROM approval_decisions`+where+` ORDER BY seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("read the decision log: %w", err)
	}
	defer rows.Close()
	var out []store.Decision
	for rows.Next() {
		var d store.Decision
		var at sql.NullInt64
		if err := rows.Scan(&d.Seq, &d.ApprovalID, &d.Revision, &d.From, &d.To, &d.Decision, &at, &d.Note); err != nil {
			return nil, fmt.Errorf("read the decision log: %w", err)
		}
		d.At = fromNS(at)
		out = append(out, d)
	}
	return out, rows.Err()
}
