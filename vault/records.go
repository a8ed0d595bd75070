package vault

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// PutCompany inserts or replaces a discovered Company.
func (s *State) PutCompany(ctx context.Context, c store.Company) error {
	if c.Identifier == "" || c.Domain == "" {
		return errors.New("put company: identifier and domain must not be empty")
	}
	if !json.Valid(c.Document) {
		return fmt.Errorf("put company %s: the document is not valid JSON", c.Identifier)
	}
	return s.tx(ctx, "put company "+c.Identifier, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO companies (identifier, domain, name, agent, document, fetched_at, etag, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (identifier) DO UPDATE SET domain = excluded.domain, name = excluded.name, agent = excluded.agent, document = excluded.document,
				fetched_at = excluded.fetched_at, etag = excluded.etag, expires_at = excluded.expires_at`,
			c.Identifier, c.Domain, c.Name, c.Agent, string(c.Document), c.FetchedAt.UnixNano(), c.ETag, ns(c.Expires))
		return err
	})
}

const companyCols = `identifier, domain, name, agent, document, fetched_at, etag, expires_at`

func scanCompany(sc interface{ Scan(...any) error }) (store.Company, error) {
	var c store.Company
	var doc string
	var fetched, exp sql.NullInt64
	if err := sc.Scan(&c.Identifier, &c.Domain, &c.Name, &c.Agent, &doc, &fetched, &c.ETag, &exp); err != nil {
		return c, err
	}
	c.Document = json.RawMessage(doc)
	c.FetchedAt, c.Expires = fromNS(fetched), fromNS(exp)
	return c, nil
}

// GetCompany returns the Company with this identifier, or an error matching store.ErrNotFound.
func (s *State) GetCompany(ctx context.Context, identifier string) (store.Company, error) {
	c, err := scanCompany(s.r.QueryRowContext(ctx, `SELECT `+companyCols+` FROM companies WHERE identifier = ?`, identifier))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFoundf("company %s is not known", identifier)
	}
	if err != nil {
		return c, fmt.Errorf("get company %s: %w", identifier, err)
	}
	return c, nil
}

// inList is the SQL list "(?, ?, ...)" of len(vals) placeholders, and vals as its arguments;
// vals must not be empty.
func inList[T any](vals []T) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return "(?" + strings.Repeat(", ?", len(vals)-1) + ")", args
}

// CompanyNames implements store.EngineState: one read of the primary key, no document.
func (s *State) CompanyNames(ctx context.Context, ids []string) (map[string]store.CompanyName, error) {
	out := make(map[string]store.CompanyName, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, args := inList(ids)
	rows, err := s.r.QueryContext(ctx, `SELECT identifier, name, domain FROM companies WHERE identifier IN `+list, args...)
	if err != nil {
		return nil, fmt.Errorf("company names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n store.CompanyName
		if err := rows.Scan(&id, &n.Name, &n.Domain); err != nil {
			return nil, fmt.Errorf("company names: %w", err)
		}
		out[id] = n
	}
	return out, rows.Err()
}

// CompanyRef names a stored Company for a list: its identifier, name, domain and Company Agent
// endpoint (store.Company).
type CompanyRef struct{ Identifier, Name, Domain, Agent string }

// CompanyQuery selects a page of Companies in name order (names compared without ASCII case,
// then identifiers): those after AfterName and AfterID (the last of the previous page) when
// AfterID is set, at most Limit (default 50). Talk keeps only those with a Company Agent, and
// those stored before the agent column (an empty name), whose document says.
type CompanyQuery struct {
	AfterName, AfterID string
	Limit              int
	Talk               bool
}

// ListCompanyRefs returns a page of Companies in name order, one range scan of the
// companies_name index; documents are not read.
func (s *State) ListCompanyRefs(ctx context.Context, q CompanyQuery) ([]CompanyRef, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	var where []string
	var args []any
	if q.AfterID != "" {
		where = append(where, `(name COLLATE NOCASE > ? OR name COLLATE NOCASE = ? AND identifier > ?)`)
		args = append(args, q.AfterName, q.AfterName, q.AfterID)
	}
	if q.Talk {
		where = append(where, `(agent != '' OR name = '')`)
	}
	query := `SELECT identifier, name, domain, agent FROM companies INDEXED BY companies_name`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.r.QueryContext(ctx, query+` ORDER BY name COLLATE NOCASE, identifier LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list a page of companies: %w", err)
	}
	defer rows.Close()
	var out []CompanyRef
	for rows.Next() {
		var r CompanyRef
		if err := rows.Scan(&r.Identifier, &r.Name, &r.Domain, &r.Agent); err != nil {
			return nil, fmt.Errorf("list a page of companies: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CountCompanies returns how many Companies are stored.
func (s *State) CountCompanies(ctx context.Context) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM companies`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count companies: %w", err)
	}
	return n, nil
}

// ListCompanies returns every discovered Company, by identifier.
func (s *State) ListCompanies(ctx context.Context) ([]store.Company, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+companyCols+` FROM companies ORDER BY identifier`)
	if err != nil {
		return nil, fmt.Errorf("list companies: %w", err)
	}
	defer rows.Close()
	var out []store.Company
	for rows.Next() {
		c, err := scanCompany(rows)
		if err != nil {
			return nil, fmt.Errorf("list companies: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ForgetCompany deletes everything the state database holds about a Company: the Company, its
// cached documents, Sessions, conversations with their transcripts, approvals with their decision log, exchanges,
// and the feedback reports sent to it.
// (Its secrets are in the keyring: delete them there too.)
func (s *State) ForgetCompany(ctx context.Context, identifier string) error {
	return s.tx(ctx, "forget company "+identifier, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM companies WHERE identifier = ?`,
			`DELETE FROM http_cache WHERE company = ?`,
			`DELETE FROM sessions WHERE company = ?`,
			`DELETE FROM conversation_entries WHERE company = ?`,
			`DELETE FROM conversations WHERE company = ?`,
			`DELETE FROM approvals WHERE company = ?`, // cascades to revisions and decisions
			`DELETE FROM exchanges WHERE company = ?`,
			`DELETE FROM feedback_reports WHERE company = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, identifier); err != nil {
				return err
			}
		}
		return nil
	})
}

// PutCacheEntry inserts or replaces the entry for e.URL.
func (s *State) PutCacheEntry(ctx context.Context, e store.CacheEntry) error {
	if e.URL == "" {
		return errors.New("put cache entry: URL must not be empty")
	}
	return s.tx(ctx, "put cache entry", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO http_cache (url, company, body, etag, fetched_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (url) DO UPDATE SET company = excluded.company, body = excluded.body, etag = excluded.etag,
				fetched_at = excluded.fetched_at, expires_at = excluded.expires_at`,
			e.URL, e.Company, nonNil(e.Body), e.ETag, e.FetchedAt.UnixNano(), ns(e.Expires))
		return err
	})
}

// GetCacheEntry returns the entry for url, or an error matching store.ErrNotFound.
func (s *State) GetCacheEntry(ctx context.Context, url string) (store.CacheEntry, error) {
	e := store.CacheEntry{URL: url}
	var fetched, exp sql.NullInt64
	err := s.readRow(ctx, `SELECT company, body, etag, fetched_at, expires_at FROM http_cache WHERE url = ?`, url).
		Scan(&e.Company, &e.Body, &e.ETag, &fetched, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return e, notFoundf("no cached response for %s", url)
	}
	if err != nil {
		return e, fmt.Errorf("get cache entry for %s: %w", url, err)
	}
	e.FetchedAt, e.Expires = fromNS(fetched), fromNS(exp)
	return e, nil
}

// DeleteCacheEntry removes the entry for url (no error if there is none).
func (s *State) DeleteCacheEntry(ctx context.Context, url string) error {
	return s.tx(ctx, "delete cache entry", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM http_cache WHERE url = ?`, url)
		return err
	})
}

// AddSession records a new Session. A sid is never reused (docs/DESIGN.md invariant 7): adding an
// existing sid fails with an error matching store.ErrExists.
func (s *State) AddSession(ctx context.Context, ss store.Session) error {
	if ss.SID == "" || ss.Company == "" {
		return errors.New("add session: sid and company must not be empty")
	}
	ext, err := json.Marshal(nonNilStrings(ss.Extensions))
	if err != nil {
		return err
	}
	return s.tx(ctx, "add session", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO sessions (sid, company, account, version, extensions, started_at, ended_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sid) DO NOTHING`,
			ss.SID, ss.Company, ss.Account, ss.Version, string(ext), ss.Started.UnixNano(), ns(ss.Ended))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("session id %q was already used; sids are never reused (spec 5.3): %w", ss.SID, store.ErrExists)
		}
		return nil
	})
}

// EndSession records when a Session ended.
func (s *State) EndSession(ctx context.Context, sid string, at time.Time) error {
	return s.tx(ctx, "end session", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET ended_at = ? WHERE sid = ?`, at.UnixNano(), sid)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundf("session %q is not known", sid)
		}
		return nil
	})
}

const sessionCols = `sid, company, account, version, extensions, started_at, ended_at`

func scanSession(sc interface{ Scan(...any) error }) (store.Session, error) {
	var ss store.Session
	var ext string
	var started, ended sql.NullInt64
	if err := sc.Scan(&ss.SID, &ss.Company, &ss.Account, &ss.Version, &ext, &started, &ended); err != nil {
		return ss, err
	}
	if err := json.Unmarshal([]byte(ext), &ss.Extensions); err != nil {
		return ss, fmt.Errorf("extensions of session %q: %w", ss.SID, err)
	}
	ss.Started, ss.Ended = fromNS(started), fromNS(ended)
	return ss, nil
}

// GetSession returns the Session with this sid, or an error matching store.ErrNotFound.
func (s *State) GetSession(ctx context.Context, sid string) (store.Session, error) {
	ss, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE sid = ?`, sid))
	if errors.Is(err, sql.ErrNoRows) {
		return ss, notFoundf("session %q is not known", sid)
	}
	if err != nil {
		return ss, fmt.Errorf("get session: %w", err)
	}
	return ss, nil
}

// ListSessions returns the Sessions of (company, account), oldest first.
func (s *State) ListSessions(ctx context.Context, company, account string) ([]store.Session, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE company = ? AND account = ? ORDER BY started_at, sid`, company, account)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, ss)
	}
	return out, rows.Err()
}

// PutConversation inserts or replaces the conversation (Company, ID).
func (s *State) PutConversation(ctx context.Context, c store.Conversation) error {
	if c.Company == "" || c.ID == "" {
		return errors.New("put conversation: company and id must not be empty")
	}
	return s.tx(ctx, "put conversation", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO conversations (company, id, account, cursor, state, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (company, id) DO UPDATE SET account = excluded.account, cursor = excluded.cursor,
				state = excluded.state, updated_at = excluded.updated_at`,
			c.Company, c.ID, c.Account, c.Cursor, c.State, c.Updated.UnixNano())
		return err
	})
}

// GetConversation returns one conversation, or an error matching store.ErrNotFound.
func (s *State) GetConversation(ctx context.Context, company, id string) (store.Conversation, error) {
	c := store.Conversation{Company: company, ID: id}
	var upd sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT account, cursor, state, updated_at FROM conversations WHERE company = ? AND id = ?`, company, id).
		Scan(&c.Account, &c.Cursor, &c.State, &upd)
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFoundf("conversation %q with %s is not known", id, company)
	}
	if err != nil {
		return c, fmt.Errorf("get conversation: %w", err)
	}
	c.Updated = fromNS(upd)
	return c, nil
}

// ConversationCompanies lists the identifiers of the Companies that have conversations (one
// query, for resuming them at start).
func (s *State) ConversationCompanies(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT company FROM conversations ORDER BY company`)
	if err != nil {
		return nil, fmt.Errorf("list the Companies with conversations: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("list the Companies with conversations: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ListConversations returns the conversations with company, most recently updated first.
func (s *State) ListConversations(ctx context.Context, company string) ([]store.Conversation, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT company, id, account, cursor, state, updated_at FROM conversations WHERE company = ? ORDER BY updated_at DESC, id`, company)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	var out []store.Conversation
	for rows.Next() {
		var c store.Conversation
		var upd sql.NullInt64
		if err := rows.Scan(&c.Company, &c.ID, &c.Account, &c.Cursor, &c.State, &upd); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		c.Updated = fromNS(upd)
		out = append(out, c)
	}
	return out, rows.Err()
}

// SaveConversation inserts or replaces the conversation (as PutConversation) and appends
// entries to its transcript in the SAME transaction, so the cursor and the transcript it covers
// are durable together (spec 8.5): after a crash, neither an entry is lost nor one stored twice.
// An entry whose event ID the conversation already has is skipped. It returns the number of
// entries the conversation's transcript holds after the call.
func (s *State) SaveConversation(ctx context.Context, c store.Conversation, entries []store.ConversationEntry) (int, error) {
	if c.Company == "" || c.ID == "" {
		return 0, errors.New("save conversation: company and id must not be empty")
	}
	for _, e := range entries {
		if e.EventID == "" {
			return 0, fmt.Errorf("save conversation %s: a transcript entry has no event ID; nothing was saved", c.ID)
		}
	}
	var total int
	err := s.tx(ctx, "save conversation", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (company, id, account, cursor, state, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (company, id) DO UPDATE SET account = excluded.account, cursor = excluded.cursor,
				state = excluded.state, updated_at = excluded.updated_at`,
			c.Company, c.ID, c.Account, c.Cursor, c.State, c.Updated.UnixNano()); err != nil {
			return err
		}
		next, err := entryCount(ctx, tx, c.Company, c.ID)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			ins, err := tx.PrepareContext(ctx, `INSERT INTO conversation_entries (company, conversation, n, event_id, entry)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (company, conversation, event_id) DO NOTHING`)
			if err != nil {
				return err
			}
			defer ins.Close()
			for _, e := range entries {
				res, err := ins.ExecContext(ctx, c.Company, c.ID, next, e.EventID, e.Entry)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 1 {
					next++
				}
			}
		}
		total = next
		return nil
	})
	return total, err
}

// entryCount returns the number of entries of a conversation's transcript: one seek of the
// primary key (entries are numbered 0..n-1 without gaps).
func entryCount(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, company, id string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(n) + 1, 0) FROM conversation_entries WHERE company = ? AND conversation = ?`, company, id).Scan(&n)
	return n, err
}

// ConversationEntries returns the entries [from, from+limit) of a conversation's transcript in
// order, and how many it holds (from one snapshot). limit 0 returns only the count. A
// conversation without entries (or not known) has none.
func (s *State) ConversationEntries(ctx context.Context, company, id string, from, limit int) ([]store.ConversationEntry, int, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("read the transcript of conversation %s: %w", id, err)
	}
	defer tx.Rollback()
	total, err := entryCount(ctx, tx, company, id)
	if err != nil {
		return nil, 0, fmt.Errorf("read the transcript of conversation %s: %w", id, err)
	}
	from = max(0, min(from, total))
	end := min(total, from+max(limit, 0))
	if end <= from {
		return nil, total, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT event_id, entry FROM conversation_entries
		WHERE company = ? AND conversation = ? AND n >= ? AND n < ? ORDER BY n`, company, id, from, end)
	if err != nil {
		return nil, 0, fmt.Errorf("read the transcript of conversation %s: %w", id, err)
	}
	defer rows.Close()
	out := make([]store.ConversationEntry, 0, end-from)
	for rows.Next() {
		var e store.ConversationEntry
		if err := rows.Scan(&e.EventID, &e.Entry); err != nil {
			return nil, 0, fmt.Errorf("read the transcript of conversation %s: %w", id, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read the transcript of conversation %s: %w", id, err)
	}
	return out, total, nil
}

// SetSetting stores a setting.
func (s *State) SetSetting(ctx context.Context, key, value string) error {
	if key == "" {
		return errors.New("set setting: key must not be empty")
	}
	return s.tx(ctx, "set setting "+key, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// GetSetting returns a setting, or an error matching store.ErrNotFound.
func (s *State) GetSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.readRow(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFoundf("setting %q is not set", key)
	}
	if err != nil {
		return "", fmt.Errorf("get setting %q: %w", key, err)
	}
	return v, nil
}

// DeleteSetting removes a setting (no error if it was not set).
func (s *State) DeleteSetting(ctx context.Context, key string) error {
	return s.tx(ctx, "delete setting "+key, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, key)
		return err
	})
}

// Settings returns every setting.
func (s *State) Settings(ctx context.Context) (map[string]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT key, value FROM settings`)
	if err != nil {
		return nil, fmt.Errorf("list settings: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("list settings: %w", err)
		}
		out[k] = v
	}
	return out, rows.Err()
}

// exchangeSize is how many bytes of stored fields an exchange counts for in the log's window.
func exchangeSize(e *store.Exchange) int64 {
	n := len(e.Company) + len(e.Direction) + len(e.Method) + len(e.URL) + len(e.RequestBody) + len(e.ResponseBody) + len(e.Details)
	for _, h := range []http.Header{e.RequestHeaders, e.ResponseHeaders} {
		for k, vs := range h {
			n += len(k)
			for _, v := range vs {
				n += len(v)
			}
		}
	}
	return int64(n)
}

// AddExchange appends an exchange to the log and returns its id (AddExchanges of one).
func (s *State) AddExchange(ctx context.Context, e store.Exchange) (int64, error) {
	ids, err := s.AddExchanges(ctx, []store.Exchange{e})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AddExchanges appends exchanges to the log in one transaction (one commit, one flush to disk)
// and returns their ids in order; either all are stored or none. Every few inserts it prunes the
// log to the configured window.
func (s *State) AddExchanges(ctx context.Context, es []store.Exchange) ([]int64, error) {
	if len(es) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(es))
	err := s.tx(ctx, "add exchanges", func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO exchanges (at, company, direction, method, url, status,
			request_headers, request_body, response_headers, response_body, duration_ns, size, details)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for i := range es {
			e := &es[i]
			reqH, err := json.Marshal(nonNilHeader(e.RequestHeaders))
			if err != nil {
				return err
			}
			respH, err := json.Marshal(nonNilHeader(e.ResponseHeaders))
			if err != nil {
				return err
			}
			res, err := st.ExecContext(ctx, e.At.UnixNano(), e.Company, e.Direction, e.Method, e.URL, e.Status,
				string(reqH), nonNil(e.RequestBody), string(respH), nonNil(e.ResponseBody), int64(e.Duration), exchangeSize(e), string(e.Details))
			if err != nil {
				return err
			}
			if ids[i], err = res.LastInsertId(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	n := int64(len(es))
	// One bounded step: recording never waits for a catch-up over a long log, which the Host
	// runs beside everything else; a step per pruneEvery inserts keeps up with any rate of
	// recording, as a step deletes up to PruneBatch rows.
	if w := s.writes.Add(n); w/pruneEvery != (w-n)/pruneEvery {
		if _, _, err := s.PruneExchangesStep(ctx); err != nil {
			s.log.Warn("pruning the exchange log failed", "err", err)
		}
	}
	return ids, nil
}

// ExchangeQuery selects exchanges; zero fields do not filter.
type ExchangeQuery struct {
	Company string
	Since   time.Time
	AfterID int64 // only ids greater than this (paging oldest first)
	// Newest lists newest first, and BeforeID, when set, keeps only ids less than it (paging
	// newest first).
	Newest   bool
	BeforeID int64
	// IDs, when set, keeps only these exchanges.
	IDs []int64
	// NoBodies leaves the headers and bodies out (a timeline's rows do not show them).
	NoBodies bool
	Limit    int // default 100
}

// ListExchanges returns exchanges matching q, oldest first (newest first with q.Newest): one
// range scan of the primary key.
func (s *State) ListExchanges(ctx context.Context, q ExchangeQuery) ([]store.Exchange, error) {
	var where []string
	var args []any
	if q.Company != "" {
		where, args = append(where, "company = ?"), append(args, q.Company)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, q.Since.UnixNano())
	}
	if q.AfterID > 0 {
		where, args = append(where, "id > ?"), append(args, q.AfterID)
	}
	if q.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, q.BeforeID)
	}
	if len(q.IDs) > 0 {
		list, vals := inList(q.IDs)
		where, args = append(where, "id IN "+list), append(args, vals...)
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	cols := `request_headers, request_body, response_headers, response_body`
	if q.NoBodies {
		cols = `'null', x'', 'null', x''`
	}
	query := `SELECT id, at, company, direction, method, url, status, ` + cols + `, duration_ns, details FROM exchanges`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if q.Newest {
		query += " ORDER BY id DESC LIMIT ?"
	} else {
		query += " ORDER BY id LIMIT ?"
	}
	args = append(args, q.Limit)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list exchanges: %w", err)
	}
	defer rows.Close()
	var out []store.Exchange
	for rows.Next() {
		var e store.Exchange
		var at sql.NullInt64
		var reqH, respH string
		var dur int64
		var details string
		if err := rows.Scan(&e.ID, &at, &e.Company, &e.Direction, &e.Method, &e.URL, &e.Status, &reqH,
			&e.RequestBody, &respH, &e.ResponseBody, &dur, &details); err != nil {
			return nil, fmt.Errorf("list exchanges: %w", err)
		}
		if err := json.Unmarshal([]byte(reqH), &e.RequestHeaders); err != nil {
			return nil, fmt.Errorf("list exchanges: request headers of %d: %w", e.ID, err)
		}
		if err := json.Unmarshal([]byte(respH), &e.ResponseHeaders); err != nil {
			return nil, fmt.Errorf("list exchanges: response headers of %d: %w", e.ID, err)
		}
		e.At, e.Duration = fromNS(at), time.Duration(dur)
		if details != "" {
			e.Details = json.RawMessage(details)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// PruneExchanges deletes exchanges older than the window's age (by the injected clock) and then
// the oldest ones until the rest fits the window's size, step by step ([State.PruneExchangesStep])
// until nothing is left to delete. It returns how many were deleted.
func (s *State) PruneExchanges(ctx context.Context) (int64, error) {
	var n int64
	for {
		k, more, err := s.PruneExchangesStep(ctx)
		n += k
		if err != nil || !more {
			return n, err
		}
	}
}

// PruneExchangesStep is one bounded step of [State.PruneExchanges]: one transaction deletes at
// most StateOptions.PruneBatch rows (and frees at most as many pages again), so a catch-up over a
// long log (weeks unused: hundreds of thousands of rows) never holds the write lock for long, and
// a recorded exchange or an approval's transition waits at most one step. It reports how many
// rows it deleted and whether more are to be deleted. Nothing to do costs one read: whether an
// exchange is older than the window (the exchanges_at index) and the log's size (one row kept by
// triggers, migration 9).
func (s *State) PruneExchangesStep(ctx context.Context) (deleted int64, more bool, err error) {
	cutoff := s.opts.Now().Add(-s.opts.ExchangeMaxAge).UnixNano()
	batch := s.opts.PruneBatch
	var aged bool
	var logBytes int64
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM exchanges WHERE at < ?), (SELECT bytes FROM exchange_log_size)`, cutoff).Scan(&aged, &logBytes); err != nil {
		return 0, false, fmt.Errorf("prune the exchange log: %w", err)
	}
	if !aged && logBytes <= s.opts.ExchangeMaxBytes {
		return 0, false, nil
	}
	err = s.tx(ctx, "prune the exchange log", func(tx *sql.Tx) error {
		var res sql.Result
		var err error
		if aged {
			res, err = tx.ExecContext(ctx, `DELETE FROM exchanges WHERE id IN (SELECT id FROM exchanges WHERE at < ? ORDER BY at LIMIT ?)`, cutoff, batch)
		} else {
			// The oldest rows until the rest fits: those whose older rows (before them) add up
			// to less than the excess, read from the covering index exchanges_size.
			res, err = tx.ExecContext(ctx, `DELETE FROM exchanges WHERE id IN (
				SELECT id FROM (SELECT id, SUM(size) OVER (ORDER BY id) - size AS before
					FROM (SELECT id, size FROM exchanges INDEXED BY exchanges_size ORDER BY id LIMIT ?))
				WHERE before < ?)`, batch, logBytes-s.opts.ExchangeMaxBytes)
		}
		if err != nil {
			return err
		}
		deleted, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	if deleted == 0 {
		return 0, false, nil // nothing deletable (cannot happen while the checks above hold)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", batch)); err != nil {
		return deleted, false, fmt.Errorf("compact %s after pruning: %w", s.path, err)
	}
	return deleted, true, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilHeader(h http.Header) http.Header {
	if h == nil {
		return http.Header{}
	}
	return h
}
