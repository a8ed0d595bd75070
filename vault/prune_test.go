package vault

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// logSize reads the log's size as the prune does (exchange_log_size) and as the rows add up.
func logSize(t *testing.T, s *State) (kept, summed int64) {
	t.Helper()
	must(t, s.r.QueryRowContext(context.Background(), `SELECT (SELECT bytes FROM exchange_log_size), (SELECT COALESCE(SUM(size), 0) FROM exchanges)`).Scan(&kept, &summed))
	return kept, summed
}

// TestExchangeLogSize: the log's size that the prune reads is the sum of its rows' sizes after
// every way rows come and go: recorded, pruned by age and by size, deleted with their Company,
// and all deleted by Reset.
func TestExchangeLogSize(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(t0)
	s := openTest(t, StateOptions{Now: clk.Now, ExchangeMaxAge: time.Hour, ExchangeMaxBytes: 5000, PruneBatch: 3})
	add := func(company string, n int) {
		for range n {
			_, err := s.AddExchange(ctx, store.Exchange{At: clk.Now(), Company: company, ResponseBody: make([]byte, 100)})
			must(t, err)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"recorded", func() { add("https://a.example", 10); add("https://b.example", 10) }},
		{"pruned by age", func() {
			clk.Advance(2 * time.Hour)
			add("https://a.example", 5)
			_, err := s.PruneExchanges(ctx)
			must(t, err)
		}},
		{"pruned by size", func() { add("https://b.example", 60); _, err := s.PruneExchanges(ctx); must(t, err) }},
		{"deleted with a Company", func() { must(t, s.ForgetCompany(ctx, "https://b.example")) }},
		{"reset", func() { must(t, s.Reset(ctx)) }},
	}
	for _, st := range steps {
		st.do()
		if kept, summed := logSize(t, s); kept != summed || kept > 5000 && st.name != "recorded" {
			t.Fatalf("%s: the log's size is kept as %d bytes, its rows add up to %d (window 5000)", st.name, kept, summed)
		}
	}
}

// TestPruneNothingToDoReadsOnly: a prune with nothing to do (no exchange older than the window,
// the log within its bytes) only reads, whatever else the database holds: it succeeds while
// another connection holds the write lock, in a database many times larger than the log's
// window.
func TestPruneNothingToDoReadsOnly(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(t0)
	s := openTest(t, StateOptions{Now: clk.Now, ExchangeMaxBytes: 10 << 10, BusyTimeout: 50 * time.Millisecond})
	for i := range 50 {
		_, err := s.AddExchange(ctx, store.Exchange{At: clk.Now(), Company: "https://a.example", ResponseBody: make([]byte, 100)})
		must(t, err)
		// Other rows that make the database far larger than the log's 10 KiB.
		host := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example"
		must(t, s.PutCompany(ctx, store.Company{Identifier: "https://" + host, Domain: host,
			Document: []byte(`{"pad":"` + strings.Repeat("x", 8<<10) + `"}`), FetchedAt: clk.Now()}))
	}
	var pages, size int64
	must(t, s.r.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages))
	must(t, s.r.QueryRowContext(ctx, "PRAGMA page_size").Scan(&size))
	if pages*size < 4*(10<<10) {
		t.Fatalf("the database is %d bytes, not much larger than the log's window", pages*size)
	}
	lock, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(50)")
	must(t, err)
	defer lock.Close()
	conn, err := lock.Conn(ctx)
	must(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	must(t, err)
	defer conn.ExecContext(ctx, "ROLLBACK")
	if n, err := s.PruneExchanges(ctx); err != nil || n != 0 {
		t.Fatalf("PruneExchanges with nothing to do = %d, %v; want 0 without writing", n, err)
	}
}

// seedExchanges stores rows small exchanges, a millisecond apart from at, in one transaction.
func seedExchanges(t *testing.T, s *State, at time.Time, rows int) {
	t.Helper()
	ctx := context.Background()
	must(t, s.tx(ctx, "seed", func(tx *sql.Tx) error {
		for i := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT INTO exchanges (at, company, direction, method, url, status, request_headers, request_body,
				response_headers, response_body, duration_ns, size) VALUES (?, 'https://a.example', 'outgoing', 'GET', 'https://a.example/x', 200, '{}', x'', '{}', x'', 0, 10)`,
				at.Add(time.Duration(i)*time.Millisecond).UnixNano()); err != nil {
				return err
			}
		}
		return nil
	}))
}

// TestPruneInSteps: a catch-up over a log far outside its window deletes in bounded steps, each
// its own transaction: a reader sees the log shrink step by step, and a recorded exchange
// between two steps does not wait for the whole catch-up.
func TestPruneInSteps(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(t0)
	s := openTest(t, StateOptions{Now: clk.Now, ExchangeMaxAge: time.Hour, PruneBatch: 20, PruneLater: true})
	const rows = 4000
	seedExchanges(t, s, clk.Now(), rows)
	clk.Advance(2 * time.Hour)
	count := func() int {
		var n int
		must(t, s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM exchanges WHERE at < ?", clk.Now().Add(-time.Hour).UnixNano()).Scan(&n))
		return n
	}
	done := make(chan error, 1)
	go func() { _, err := s.PruneExchanges(ctx); done <- err }()
	midway := false
	for !midway {
		select {
		case err := <-done:
			t.Fatalf("the prune finished (%v) without a reader ever seeing it midway", err)
		default:
		}
		n := count()
		midway = n > 0 && n < rows
	}
	_, err := s.AddExchange(ctx, store.Exchange{At: clk.Now(), Company: "https://a.example"})
	must(t, err)
	if n := count(); n == 0 {
		t.Logf("the catch-up ended while the exchange was recorded (possible on a loaded machine)")
	}
	must(t, <-done)
	if n := count(); n != 0 {
		t.Fatalf("%d aged exchanges left after the prune", n)
	}
}

// TestRecordingPrunesOneStep: recording exchanges over a long aged log prunes one bounded step per
// pruneEvery inserts, never the whole catch-up (which the Host runs beside everything else), so a
// recording waits at most one step.
func TestRecordingPrunesOneStep(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(t0)
	const batch, rows = 20, 1000
	s := openTest(t, StateOptions{Now: clk.Now, ExchangeMaxAge: time.Hour, PruneBatch: batch, PruneLater: true})
	seedExchanges(t, s, clk.Now(), rows)
	clk.Advance(2 * time.Hour)
	for range pruneEvery {
		_, err := s.AddExchange(ctx, store.Exchange{At: clk.Now(), Company: "https://a.example"})
		must(t, err)
	}
	var aged int
	must(t, s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM exchanges WHERE at < ?", clk.Now().Add(-time.Hour).UnixNano()).Scan(&aged))
	if aged != rows-batch {
		t.Fatalf("%d aged exchanges left after %d recordings; want %d (one step of %d)", aged, pruneEvery, rows-batch, batch)
	}
	n, err := s.PruneExchanges(ctx)
	must(t, err)
	if n != rows-batch {
		t.Fatalf("the catch-up deleted %d; want the remaining %d", n, rows-batch)
	}
}
