package operator

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver (PostgreSQL)
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver (embedded)
)

// Store keeps the operator's state: enrolled devices (their public keys), enrollment tokens
// (as SHA-256 hashes), the replay cache of device proofs, and quota counters. PostgreSQL lets
// several operator instances behind a load balancer serve the same devices and share their
// quotas; SQLite (modernc.org/sqlite, pure Go) is the embedded default for one instance. Nothing
// here names a Company, an issuer, a User ID, or anything a device had signed.
//
// Nothing here joins a device to a time finer than its quota window either (spec 10.7: the
// operator sees when a device asks, and must not keep it): the replay cache holds a hash of
// each proof's jti with the end of the hour after it — no device; quota counters hold a
// device's count per UTC hour and day; a device's enrollment (and revocation) day is kept, not
// its second. A JWT's iat therefore points at no row that names a device.
type Store struct {
	db       *sql.DB
	postgres bool
}

// Store errors.
var (
	ErrUnknownDevice = errors.New("no such device")
	ErrBadToken      = errors.New("the enrollment token is unknown, used up or expired")
	ErrReplay        = errors.New("this device proof was already used")
)

// OverQuota says a subject has used a window's quota.
type OverQuota struct {
	Subject string
	Window  string // "hour" or "day"
	Limit   int
	Until   time.Time // when the window ends
}

func (e *OverQuota) Error() string {
	return fmt.Sprintf("the quota of %d signatures per %s is used up until %s", e.Limit, e.Window, e.Until.Format(time.RFC3339))
}

// OpenStore opens (and migrates) the database named by dsn: "sqlite:PATH" (or a path ending in
// .sqlite or .db), or a PostgreSQL URL "postgres://…" / "postgresql://…" or key=value DSN
// ("host=/run/postgresql dbname=operator").
func OpenStore(ctx context.Context, dsn string) (*Store, error) {
	return openStore(ctx, dsn, len(migrations))
}

// openStore opens the database and migrates it to version upTo.
func openStore(ctx context.Context, dsn string, upTo int) (*Store, error) {
	driver, conn, pg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if !pg {
		if err := privateFiles(sqlitePath(dsn)); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open(driver, conn)
	if err != nil {
		return nil, fmt.Errorf("opening the operator's database: %w", err)
	}
	if pg {
		db.SetMaxOpenConns(20)
		db.SetMaxIdleConns(10)
	} else {
		// One connection: SQLite writes one transaction at a time anyway, and one connection
		// makes that wait in Go rather than in busy retries.
		db.SetMaxOpenConns(1)
	}
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{db: db, postgres: pg}
	if err := s.migrate(ctx, upTo); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func parseDSN(dsn string) (driver, conn string, pg bool, err error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"), strings.Contains(dsn, "host=") || strings.Contains(dsn, "dbname="):
		return "pgx", dsn, true, nil
	case strings.HasPrefix(dsn, "sqlite:"):
		dsn = strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
	case strings.HasSuffix(dsn, ".sqlite"), strings.HasSuffix(dsn, ".db"):
	default:
		return "", "", false, fmt.Errorf("the database %q is neither sqlite:PATH nor a PostgreSQL URL (postgres://user@host/db)", dsn)
	}
	if dsn == "" {
		return "", "", false, errors.New("sqlite: needs a file path, e.g. sqlite:/var/lib/poppydesk-operator/operator.sqlite")
	}
	return "sqlite", "file:" + dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate", false, nil
}

func sqlitePath(dsn string) string {
	return strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
}

// privateFiles makes the SQLite database file readable by its owner only (0600), creating it
// empty if need be, and tightens the write-ahead log and shared-memory files an older version
// left; SQLite creates those with the database file's mode.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the operator's database file: %w", err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("making the operator's database file %s private (0600): %w", p, err)
		}
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Postgres reports whether the store is PostgreSQL.
func (s *Store) Postgres() bool { return s.postgres }

var placeholder = regexp.MustCompile(`\$(\d+)`)

// q adapts a query written with $N placeholders to the driver (SQLite numbers them ?N).
func (s *Store) q(query string) string {
	if s.postgres {
		return query
	}
	return placeholder.ReplaceAllString(query, "?$1")
}

// migrations are applied in order, each once, in one transaction each. They are plain SQL
// that both PostgreSQL and SQLite accept.
var migrations = []string{
	// 1: devices, enrollment tokens, device-proof jtis, quota counters.
	`CREATE TABLE devices (
		id TEXT PRIMARY KEY,
		public_jwk TEXT NOT NULL,
		enrolled_at BIGINT NOT NULL,
		revoked_at BIGINT
	);
	CREATE TABLE enroll_tokens (
		token_hash TEXT PRIMARY KEY,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		uses_left INTEGER NOT NULL
	);
	CREATE TABLE proof_jtis (
		device_id TEXT NOT NULL,
		jti TEXT NOT NULL,
		expires_at BIGINT NOT NULL,
		PRIMARY KEY (device_id, jti)
	);
	CREATE INDEX proof_jtis_expiry ON proof_jtis (expires_at);
	CREATE TABLE quota_usage (
		subject TEXT NOT NULL,
		win TEXT NOT NULL,
		start BIGINT NOT NULL,
		used INTEGER NOT NULL,
		PRIMARY KEY (subject, win, start)
	);
	CREATE INDEX quota_usage_start ON quota_usage (start);`,
	// 2: a replay cache that names no device and keeps only the hour (replay_jtis replaces
	// proof_jtis, whose rows joined a device to a proof's second, and are deleted); enrollment
	// and revocation times kept to the UTC day; one enrollment per device key.
	`CREATE TABLE replay_jtis (
		jti_hash TEXT PRIMARY KEY,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX replay_jtis_expiry ON replay_jtis (expires_at);
	DELETE FROM proof_jtis;
	UPDATE devices SET enrolled_at = enrolled_at - (enrolled_at % 86400);
	UPDATE devices SET revoked_at = revoked_at - (revoked_at % 86400) WHERE revoked_at IS NOT NULL;
	CREATE UNIQUE INDEX devices_public_jwk ON devices (public_jwk);`,
}

// day is a time kept to its UTC day (Unix seconds of its midnight).
func day(t time.Time) int64 { u := t.Unix(); return u - u%86400 }

// SchemaVersion is the number of migrations this build knows.
func SchemaVersion() int { return len(migrations) }

func (s *Store) migrate(ctx context.Context, upTo int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.prepare(ctx); err != nil {
		return fmt.Errorf("the operator's database cannot be prepared: %w; check the DSN and that the database user may create tables", err)
	}
	for v := 1; v <= upTo; v++ {
		if err := s.applyMigration(ctx, v); err != nil {
			return fmt.Errorf("migrating the operator's database to version %d: %w", v, err)
		}
	}
	var max int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&max); err != nil {
		return err
	}
	if max > len(migrations) {
		return fmt.Errorf("the operator's database has schema version %d, newer than this build knows (%d); run a newer poppydesk", max, len(migrations))
	}
	return nil
}

// prepare creates the table of applied migrations, under the lock on PostgreSQL (CREATE TABLE IF
// NOT EXISTS is not safe against a concurrent one there).
func (s *Store) prepare(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.lockMigrations(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	return tx.Commit()
}

// lockMigrations makes instances that start at once take turns on PostgreSQL; the others then
// find the work done. The lock ends with the transaction.
func (s *Store) lockMigrations(ctx context.Context, tx *sql.Tx) error {
	if !s.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7405151)`)
	return err
}

func (s *Store) applyMigration(ctx context.Context, v int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.lockMigrations(ctx, tx); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = $1`), v).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range strings.Split(migrations[v-1], ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`), v, time.Now().Unix()); err != nil {
		return err
	}
	return tx.Commit()
}

// TokenHash is how an enrollment token is kept: base64url SHA-256 (tokens are 256-bit random
// values, so a plain hash suffices).
func TokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// AddEnrollToken stores an enrollment token's hash, valid until expires for uses enrollments.
func (s *Store) AddEnrollToken(ctx context.Context, token string, now, expires time.Time, uses int) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO enroll_tokens (token_hash, created_at, expires_at, uses_left) VALUES ($1, $2, $3, $4)`),
		TokenHash(token), now.Unix(), expires.Unix(), uses)
	return err
}

// ErrKeyEnrolled is a device key that is enrolled already: each enrollment needs a new key.
var ErrKeyEnrolled = errors.New("this device key is enrolled already")

// Enroll adds a device with its public key (compact JSON, as the device sent it), kept with
// the day it enrolled. With token != "", it uses one use of that token in the same
// transaction, and fails with ErrBadToken when there is none left. A key enrolled before fails
// with ErrKeyEnrolled.
func (s *Store) Enroll(ctx context.Context, deviceID string, publicJWK []byte, token string, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if token != "" {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE enroll_tokens SET uses_left = uses_left - 1 WHERE token_hash = $1 AND uses_left > 0 AND expires_at > $2`),
			TokenHash(token), now.Unix())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return ErrBadToken
		}
	}
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO devices (id, public_jwk, enrolled_at) VALUES ($1, $2, $3) ON CONFLICT (public_jwk) DO NOTHING`),
		deviceID, string(publicJWK), day(now))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return ErrKeyEnrolled
	}
	return tx.Commit()
}

// DeviceKey returns an enrolled, not revoked device's public key.
func (s *Store) DeviceKey(ctx context.Context, deviceID string) ([]byte, error) {
	var jwkText string
	var revoked sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT public_jwk, revoked_at FROM devices WHERE id = $1`), deviceID).Scan(&jwkText, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrUnknownDevice
	case err != nil:
		return nil, err
	case revoked.Valid:
		return nil, ErrUnknownDevice
	}
	return []byte(jwkText), nil
}

// Revoke revokes a device: its requests are refused from now on.
func (s *Store) Revoke(ctx context.Context, deviceID string, now time.Time) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE devices SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`), deviceID, day(now))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrUnknownDevice
	}
	return nil
}

// Device is an enrolled device as `poppydesk operator devices` lists it: its ID, the UTC day it
// enrolled and, when revoked, the day of that.
type Device struct {
	ID       string
	Enrolled time.Time
	Revoked  time.Time // zero while enrolled
}

// Devices lists every device, oldest enrollment first.
func (s *Store) Devices(ctx context.Context) ([]Device, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, enrolled_at, revoked_at FROM devices ORDER BY enrolled_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Device
	for rows.Next() {
		var d Device
		var enrolled int64
		var revoked sql.NullInt64
		if err := rows.Scan(&d.ID, &enrolled, &revoked); err != nil {
			return nil, err
		}
		d.Enrolled = time.Unix(enrolled, 0).UTC()
		if revoked.Valid {
			d.Revoked = time.Unix(revoked.Int64, 0).UTC()
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Limit is a quota: at most Max uses per window ("hour" or "day", aligned to UTC).
type Limit struct {
	Window string
	Max    int
}

// Count is one use of Subject's quota under a Limit.
type Count struct {
	Subject string
	Limit
}

func windowOf(w string, now time.Time) (time.Time, time.Time) {
	now = now.UTC()
	if w == "day" {
		start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	}
	start := now.Truncate(time.Hour)
	return start, start.Add(time.Hour)
}

// ReplayKeep is how long a device proof's jti stays in the replay cache: until the end of the
// UTC hour after the one it was used in, which is always past its iat plus the proof window,
// and says no more about when it was used than the hour a quota counts.
func ReplayKeep(now time.Time) time.Time {
	start, _ := windowOf("hour", now)
	return start.Add(2 * time.Hour)
}

func jtiHash(jti string) string {
	h := sha256.Sum256([]byte("poppydesk-operator-proof-jti\x00" + jti))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Use counts one use under every count, atomically: all of them or none. It also records jti
// (when not "") in the replay cache, without the subject, until ReplayKeep(now), and fails with
// ErrReplay when it is there already. Over a limit, it fails with *OverQuota naming the window
// that ends last among those used up (of those, the last count's), and counts nothing.
func (s *Store) Use(ctx context.Context, jti string, counts []Count, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if jti != "" {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO replay_jtis (jti_hash, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`),
			jtiHash(jti), ReplayKeep(now).Unix())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return ErrReplay
		}
	}
	var over *OverQuota
	for _, c := range counts {
		if c.Max <= 0 {
			continue
		}
		start, end := windowOf(c.Window, now)
		var used int
		err := tx.QueryRowContext(ctx, s.q(`INSERT INTO quota_usage (subject, win, start, used) VALUES ($1, $2, $3, 1)
			ON CONFLICT (subject, win, start) DO UPDATE SET used = quota_usage.used + 1 WHERE quota_usage.used < $4
			RETURNING used`), c.Subject, c.Window, start.Unix(), c.Max).Scan(&used)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// The broadest limit met is the one worth naming (counts go from the narrowest).
			if over == nil || !end.Before(over.Until) {
				over = &OverQuota{Subject: c.Subject, Window: c.Window, Limit: c.Max, Until: end}
			}
		case err != nil:
			return err
		}
	}
	if over != nil {
		return over
	}
	return tx.Commit()
}

// Usage is how much of each limit subject has used now.
func (s *Store) Usage(ctx context.Context, subject string, limits []Limit, now time.Time) (map[string]int, error) {
	out := map[string]int{}
	for _, l := range limits {
		start, _ := windowOf(l.Window, now)
		var used int
		err := s.db.QueryRowContext(ctx, s.q(`SELECT used FROM quota_usage WHERE subject = $1 AND win = $2 AND start = $3`), subject, l.Window, start.Unix()).Scan(&used)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		out[l.Window] = used
	}
	return out, nil
}

// Prune deletes expired jtis, quota windows that ended, and enrollment tokens that expired.
func (s *Store) Prune(ctx context.Context, now time.Time) error {
	for _, stmt := range []struct {
		q string
		t int64
	}{
		{`DELETE FROM replay_jtis WHERE expires_at < $1`, now.Unix()},
		// Rows an instance of an older version wrote while the others were upgraded.
		{`DELETE FROM proof_jtis WHERE expires_at < $1`, now.Unix()},
		{`DELETE FROM quota_usage WHERE start < $1`, now.Add(-48 * time.Hour).Unix()},
		{`DELETE FROM enroll_tokens WHERE expires_at < $1`, now.Unix()},
	} {
		if _, err := s.db.ExecContext(ctx, s.q(stmt.q), stmt.t); err != nil {
			return err
		}
	}
	return nil
}

// Dump returns every row of every table as text ("table col=value …"), on PostgreSQL with each
// row's xmin, for tests that check what the operator keeps.
func (s *Store) Dump(ctx context.Context) ([]string, error) {
	var out []string
	for _, tbl := range []string{"devices", "enroll_tokens", "proof_jtis", "replay_jtis", "quota_usage", "schema_migrations"} {
		query := "SELECT * FROM " + tbl
		if s.postgres {
			// The transaction that wrote each row, which PostgreSQL keeps with it: rows written
			// together share it, and whoever reads the database can join on it.
			query = "SELECT xmin::text AS xmin, * FROM " + tbl
		}
		rows, err := s.db.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			var b strings.Builder
			b.WriteString(tbl)
			for i, v := range vals {
				fmt.Fprintf(&b, " %s=%v", cols[i], textOf(v))
			}
			out = append(out, b.String())
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func textOf(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}
