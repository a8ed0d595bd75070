// Package vaulttest grows a state database to the size of a long-used Poppydesk, for the tests
// and benchmarks of scale: many discovered Companies, a long history of decided approvals and a
// full exchange log. It clones rows that a real run wrote (a Company, a decided approval with
// its revisions and decisions, an exchange) rather than inventing them, so every clone is a
// record the product itself can read. The clones are written in one transaction, much faster
// than a run could write them.
package vaulttest

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// Scale is the size to grow to.
type Scale struct {
	// Companies, Approvals and Exchanges are the totals wanted: discovered Companies, decided
	// approvals and exchanges in the log.
	Companies, Approvals, Exchanges int
	// Now and Span place the clones: approvals and exchanges are spread evenly over the Span
	// before Now (newest first).
	Now  time.Time
	Span time.Duration
}

// Grow clones the rows of the state database at path until it holds s's totals. The database
// must have been written by a run (at least one Company, one approval in a final state and one
// exchange) and must not be open in a Host. Cloned Companies are at cN.localhost, named as the
// first with " N" added; cloned approvals are spread over the cloned Companies.
func Grow(ctx context.Context, path string, s Scale) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	count := func(table, where string) (int, error) {
		var n int
		err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" "+where).Scan(&n)
		return n, err
	}
	const seq = `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?) `
	have, err := count("companies", "")
	if err != nil {
		return err
	}
	if have == 0 {
		return fmt.Errorf("vaulttest: %s has no Company to clone; discover one first", path)
	}
	if add := s.Companies - have; add > 0 {
		if _, err := tx.ExecContext(ctx, seq+`INSERT INTO companies (identifier, domain, name, agent, document, fetched_at, etag, expires_at)
			SELECT 'https://auth.c' || n || '.localhost', 'c' || n || '.localhost', c.name || ' ' || n, replace(c.agent, c.domain, 'c' || n || '.localhost'),
				replace(replace(replace(c.document, c.identifier, 'https://auth.c' || n || '.localhost'), c.domain, 'c' || n || '.localhost'),
					'"' || c.name || '"', '"' || c.name || ' ' || n || '"'),
				c.fetched_at, c.etag, c.expires_at
			FROM seq, (SELECT * FROM companies ORDER BY identifier LIMIT 1) c`, add); err != nil {
			return fmt.Errorf("vaulttest: cloning Companies: %w", err)
		}
	}
	final := `WHERE state IN ('succeeded', 'failed', 'declined', 'expired', 'superseded')`
	if have, err = count("approvals", final); err != nil {
		return err
	}
	if add := s.Approvals - have; add > 0 {
		var tmpl string
		if err := tx.QueryRowContext(ctx, `SELECT id FROM approvals `+final+` ORDER BY created_at LIMIT 1`).Scan(&tmpl); err != nil {
			return fmt.Errorf("vaulttest: no decided approval to clone (decide one first): %w", err)
		}
		step := int64(s.Span) / int64(add)
		now := s.Now.UnixNano()
		stmts := []string{
			seq + `INSERT INTO approvals (id, company, account, sid, interface, request, state, created_at, updated_at)
				SELECT 'apr_seed_' || n, CASE WHEN n % 4 = 0 THEN a.company ELSE 'https://auth.c' || (n % ? + 1) || '.localhost' END,
					a.account, a.sid, a.interface, a.request, a.state, ? - n * ?, ? - n * ? + 1000
				FROM seq, (SELECT * FROM approvals WHERE id = ?) a`,
			seq + `INSERT INTO approval_revisions (approval_id, revision, operation, received_at)
				SELECT 'apr_seed_' || n, r.revision, r.operation, r.received_at FROM seq, approval_revisions r WHERE r.approval_id = ?`,
			seq + `INSERT INTO approval_decisions (approval_id, revision, from_state, to_state, decision, decided_at, note)
				SELECT 'apr_seed_' || n, d.revision, d.from_state, d.to_state, d.decision, d.decided_at, d.note
				FROM seq, approval_decisions d WHERE d.approval_id = ? ORDER BY n, d.seq`,
		}
		spread := max(s.Companies-1, 1) // the clones cN.localhost
		args := [][]any{{add, spread, now, step, now, step, tmpl}, {add, tmpl}, {add, tmpl}}
		for i, q := range stmts {
			if _, err := tx.ExecContext(ctx, q, args[i]...); err != nil {
				return fmt.Errorf("vaulttest: cloning approvals: %w", err)
			}
		}
	}
	if have, err = count("exchanges", ""); err != nil {
		return err
	}
	if have == 0 {
		return fmt.Errorf("vaulttest: %s has no exchange to clone", path)
	}
	if add := s.Exchanges - have; add > 0 {
		step := int64(s.Span) / int64(add)
		if _, err := tx.ExecContext(ctx, seq+`, tmpl AS (SELECT *, ROW_NUMBER() OVER (ORDER BY id) - 1 AS k, COUNT(*) OVER () AS total FROM exchanges)
			INSERT INTO exchanges (at, company, direction, method, url, status, request_headers, request_body, response_headers, response_body, duration_ns, size)
			SELECT ? - n * ?, t.company, t.direction, t.method, t.url, t.status, t.request_headers, t.request_body, t.response_headers, t.response_body, t.duration_ns, t.size
			FROM seq JOIN tmpl t ON t.k = n % t.total ORDER BY n DESC`, add, s.Now.UnixNano(), step); err != nil {
			return fmt.Errorf("vaulttest: cloning exchanges: %w", err)
		}
	}
	return tx.Commit()
}
