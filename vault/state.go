package vault

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"modernc.org/sqlite" // database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Defaults of the exchange log window.
const (
	DefaultExchangeMaxAge   = 30 * 24 * time.Hour
	DefaultExchangeMaxBytes = 200 << 20
	DefaultBusyTimeout      = 5 * time.Second
	DefaultPruneBatch       = 500
	pruneEvery              = 64 // AddExchange prunes after this many inserts
)

// StateOptions configure [OpenState]. The zero value means the defaults.
type StateOptions struct {
	Now              func() time.Time // default time.Now; used for the exchange window
	ExchangeMaxAge   time.Duration    // default DefaultExchangeMaxAge
	ExchangeMaxBytes int64            // default DefaultExchangeMaxBytes
	BusyTimeout      time.Duration    // default DefaultBusyTimeout
	Logger           *slog.Logger     // default slog.Default()
	// PruneLater leaves the exchange log as it is at open: the caller runs PruneExchanges when
	// it suits it (the Host, in its start-up work beside the window's first reads, so a log
	// unused for weeks does not hold up the start).
	PruneLater bool
	// PruneBatch is how many exchanges one step of PruneExchanges deletes at most (default
	// DefaultPruneBatch).
	PruneBatch int
}

// State is Poppydesk's non-secret memory in one SQLite file (WAL mode). One connection writes;
// a small pool reads. Every method that changes data commits before it returns, with
// synchronous=FULL, so a write is durable when the call returns (write-before-send). Safe for
// concurrent use.
type State struct {
	path   string
	w, r   *sql.DB
	opts   StateOptions
	log    *slog.Logger
	writes atomic.Int64

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // readRow's prepared statements on r, by query
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q does not start with a number", e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, e.Name(), string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered 1..n without gaps: %q is number %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// OpenState opens (creating if needed) the state database at path, applies the embedded
// migrations that it lacks (forward only), and prunes the exchange log (unless
// opts.PruneLater).
func OpenState(ctx context.Context, path string, opts StateOptions) (*State, error) {
	s, err := openState(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, s.w, path, -1); err != nil {
		s.Close()
		return nil, err
	}
	if opts.PruneLater {
		return s, nil
	}
	if _, err := s.PruneExchanges(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openState opens the two pools without migrating.
func openState(ctx context.Context, path string, opts StateOptions) (*State, error) {
	if path == "" {
		return nil, errors.New("no path was given for the state database")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ExchangeMaxAge <= 0 {
		opts.ExchangeMaxAge = DefaultExchangeMaxAge
	}
	if opts.ExchangeMaxBytes <= 0 {
		opts.ExchangeMaxBytes = DefaultExchangeMaxBytes
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.PruneBatch <= 0 {
		opts.PruneBatch = DefaultPruneBatch
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the folder of the state database: %w", err)
	}
	// Create the file private to the user; SQLite gives the -wal and -shm files the same mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the state database %s: %w", path, err)
	}
	f.Close()

	common := "_pragma=busy_timeout(" + strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)"
	// The path goes into a file: URI, where "?" starts the parameters and "#" a fragment: a
	// folder named with either (or "%") must still name this file.
	uri := "file:" + uriPathEscaper.Replace(path)
	writerDSN := uri + "?_pragma=auto_vacuum(INCREMENTAL)&" + common +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=secure_delete(1)&_txlock=immediate"
	readerDSN := uri + "?" + common + "&_pragma=query_only(1)"

	w, err := sql.Open("sqlite", writerDSN)
	if err != nil {
		return nil, fmt.Errorf("open the state database %s: %w", path, err)
	}
	w.SetMaxOpenConns(1) // one writer
	w.SetConnMaxIdleTime(0)
	mode, err := journalMode(ctx, w, opts.BusyTimeout)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open the state database %s (is it an SQLite file? move it aside to start fresh): %w", path, err)
	}
	if mode != "wal" {
		w.Close()
		return nil, fmt.Errorf("state database %s: journal mode is %q, want wal (is the file on a network filesystem?)", path, mode)
	}
	r, err := sql.Open("sqlite", readerDSN)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open the state database %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	return &State{path: path, w: w, r: r, opts: opts, log: opts.Logger}, nil
}

// journalMode opens the writer's connection, which switches the file to WAL, and reports the
// journal mode. Two processes switching one new file at the same moment can both hold a shared
// lock and want the exclusive one; SQLite then answers SQLITE_BUSY at once instead of calling the
// busy handler (it would wait forever), so the open is tried again, after a short pause, until
// the busy timeout has passed.
func journalMode(ctx context.Context, w *sql.DB, timeout time.Duration) (string, error) {
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	pause := 5 * time.Millisecond
	for {
		var mode string
		err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
			return mode, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-expired.C:
			return "", err
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// migrate applies the migrations after the database's user_version, up to target (-1: all),
// each in its own transaction together with the new user_version.
func migrate(ctx context.Context, db *sql.DB, path string, target int) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("embedded migrations: %w", err)
	}
	if target < 0 {
		target = len(ms)
	}
	var cur int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return fmt.Errorf("read the schema version of %s: %w", path, err)
	}
	if cur > len(ms) {
		return fmt.Errorf("state database %s has schema version %d, written by a newer Poppydesk (this build knows up to %d); update Poppydesk, or move the file aside to start fresh", path, cur, len(ms))
	}
	for _, m := range ms[cur:target] {
		// The writer's transactions take the write lock when they begin (_txlock=immediate), so
		// the version read inside one is the last one committed: another process opening the same
		// new database at the same moment (the window and `poppydesk check`) has either applied
		// this step already, and it is skipped, or waits.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", path, err)
		}
		var now int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&now); err != nil {
			tx.Rollback()
			return fmt.Errorf("read the schema version of %s: %w", path, err)
		}
		if now >= m.version {
			tx.Rollback()
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s with %s: %w", path, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s with %s: %w", path, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s with %s: %w", path, m.name, err)
		}
	}
	return nil
}

// Path returns the database file path.
func (s *State) Path() string { return s.path }

// uriPathEscaper percent-encodes what would end or change a file: URI's path.
var uriPathEscaper = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// Close closes the database.
func (s *State) Close() error {
	s.stmtMu.Lock()
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	return errors.Join(append(errs, s.r.Close(), s.w.Close())...)
}

// readRow is s.r.QueryRowContext with query prepared once: the reads that every tool call
// naming a Company makes (its cached responses, its known issuer) would otherwise have SQLite
// parse and plan their SQL each time, about a third of their cost. The statements are those
// of this package's constant queries, so there are as many as there are such call sites.
func (s *State) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	s.stmtMu.Lock()
	st, ok := s.stmts[query]
	s.stmtMu.Unlock()
	if !ok {
		prepared, err := s.r.PrepareContext(ctx, query)
		if err != nil {
			return s.r.QueryRowContext(ctx, query, args...) // reports the same error
		}
		s.stmtMu.Lock()
		if st, ok = s.stmts[query]; ok {
			prepared.Close() // another call prepared it meanwhile
		} else {
			if s.stmts == nil {
				s.stmts = map[string]*sql.Stmt{}
			}
			s.stmts[query], st = prepared, prepared
		}
		s.stmtMu.Unlock()
	}
	return st.QueryRowContext(ctx, args...)
}

// Check runs SQLite's integrity_check and foreign_key_check and reports any problem.
func (s *State) Check(ctx context.Context) error {
	var res string
	if err := s.w.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return fmt.Errorf("integrity check of %s: %w", s.path, err)
	}
	if res != "ok" {
		return fmt.Errorf("integrity check of %s failed: %s; move the file aside to start fresh", s.path, res)
	}
	rows, err := s.w.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return fmt.Errorf("foreign key check of %s: %w", s.path, err)
	}
	defer rows.Close()
	if rows.Next() {
		return fmt.Errorf("foreign key check of %s found dangling rows", s.path)
	}
	return rows.Err()
}

// tx runs fn in one write transaction and commits.
func (s *State) tx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict) {
			return err
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	return nil
}

// Reset deletes every row of every table ("reset Poppydesk") and truncates the WAL.
func (s *State) Reset(ctx context.Context) error {
	err := s.tx(ctx, "reset the state database", func(tx *sql.Tx) error {
		for _, t := range []string{"settings", "companies", "http_cache", "sessions", "conversation_entries", "conversations",
			"approval_decisions", "approval_revisions", "approvals", "exchanges", "feedback_reports"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.compact(ctx)
}

// compact returns free pages to the file system and truncates the WAL.
func (s *State) compact(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
		return fmt.Errorf("compact %s: %w", s.path, err)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("checkpoint %s: %w", s.path, err)
	}
	return nil
}

// ns stores t as Unix nanoseconds; the zero time is NULL.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}

func notFoundf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, store.ErrNotFound)...)
}
