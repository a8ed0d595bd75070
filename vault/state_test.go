package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openTest(t *testing.T, opts StateOptions) *State {
	t.Helper()
	s, err := OpenState(context.Background(), filepath.Join(t.TempDir(), "state.db"), opts)
	if err != nil {
		t.Fatalf("OpenState: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// seedVersion writes sample rows into a database at schema version v (tables of versions <= v).
func seedVersion(ctx context.Context, t *testing.T, s *State, v int) {
	t.Helper()
	stmts := map[int][]string{
		1: {
			`INSERT INTO settings VALUES ('theme', 'dark')`,
			`INSERT INTO companies (identifier, domain, document, fetched_at, etag, expires_at) VALUES ('https://shop.example', 'shop.example', '{"a":1}', 1, 'W/"e1"', NULL)`,
			`INSERT INTO sessions VALUES ('sid-1', 'https://shop.example', '', '0.4', '["operations"]', 2, NULL)`,
			`INSERT INTO conversations VALUES ('https://shop.example', 'c1', '', 'cur-9', 'open', 3)`,
		},
		2: {
			`INSERT INTO approvals VALUES ('ap-1', 'https://shop.example', '', 'sid-1', 'api', '{}', 'pending', 4, 4)`,
			`INSERT INTO approval_revisions VALUES ('ap-1', 1, '{"id":"op"}', 4)`,
		},
		3: {
			`INSERT INTO exchanges (at, company, direction, method, url, status, request_headers, request_body, response_headers, response_body, duration_ns, size)
			 VALUES (5, 'https://shop.example', 'outgoing', 'GET', 'https://shop.example/x', 200, '{}', x'', '{}', x'', 1, 10)`,
		},
		4: {
			`INSERT INTO conversation_entries VALUES ('https://shop.example', 'c1', 0, 'ev-1', '{"event_id":"ev-1"}')`,
		},
	}
	for version := 1; version <= v; version++ {
		for _, q := range stmts[version] {
			if _, err := s.w.ExecContext(ctx, q); err != nil {
				t.Fatalf("seed version %d: %v", version, err)
			}
		}
	}
}

func TestMigrationsFromEveryEarlierVersion(t *testing.T) {
	ctx := context.Background()
	n := SchemaVersion()
	if n < 4 {
		t.Fatalf("SchemaVersion = %d, want at least 4", n)
	}
	for from := 0; from <= n; from++ {
		t.Run(fmt.Sprintf("from version %d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			old, err := openState(ctx, path, StateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := migrate(ctx, old.w, path, from); err != nil {
				t.Fatalf("migrate to %d: %v", from, err)
			}
			seedVersion(ctx, t, old, from)
			old.Close()

			s, err := OpenState(ctx, path, StateOptions{Now: func() time.Time { return time.Unix(0, 6) }})
			if err != nil {
				t.Fatalf("OpenState after version %d: %v", from, err)
			}
			defer s.Close()
			var v int
			if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != n {
				t.Fatalf("user_version = %d, %v; want %d", v, err, n)
			}
			if err := s.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if from >= 1 {
				if c, err := s.GetCompany(ctx, "https://shop.example"); err != nil || c.ETag != `W/"e1"` {
					t.Fatalf("company after migration = %+v, %v", c, err)
				}
				// A Company stored before version 8 has no name until it is discovered again.
				if n, err := s.CompanyNames(ctx, []string{"https://shop.example"}); err != nil || n["https://shop.example"] != (store.CompanyName{Domain: "shop.example"}) {
					t.Fatalf("company names after migration = %+v, %v", n, err)
				}
			}
			if from >= 2 {
				if a, err := s.GetApproval(ctx, "ap-1"); err != nil || len(a.Revisions) != 1 {
					t.Fatalf("approval after migration = %+v, %v", a, err)
				}
			}
			if from >= 4 {
				if es, total, err := s.ConversationEntries(ctx, "https://shop.example", "c1", 0, 10); err != nil || total != 1 || len(es) != 1 || es[0].EventID != "ev-1" {
					t.Fatalf("transcript after migration = %+v, %d, %v", es, total, err)
				}
			}
			// Every table of the newest schema works after the upgrade.
			if from >= 1 {
				// A conversation written before version 4 gets a transcript.
				total, err := s.SaveConversation(ctx, store.Conversation{Company: "https://shop.example", ID: "c1", Cursor: "ev-2", State: "{}", Updated: time.Unix(0, 9)},
					[]store.ConversationEntry{{EventID: "ev-1", Entry: "{}"}, {EventID: "ev-2", Entry: "{}"}})
				// From version 4, ev-1 is already there and is not stored twice: 2 entries either way.
				if err != nil || total != 2 {
					t.Fatalf("SaveConversation after migration = %d, %v; want 2", total, err)
				}
			}
			if _, err := s.AddExchange(ctx, store.Exchange{At: time.Unix(0, 7), Company: "c"}); err != nil {
				t.Fatal(err)
			}
			if err := s.TransitionApproval(ctx, "ap-1", "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: time.Unix(0, 8)}); from >= 2 && err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := OpenState(ctx, path, StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = OpenState(ctx, path, StateOptions{})
	if err == nil || !strings.Contains(err.Error(), "newer Poppydesk") {
		t.Fatalf("OpenState on a newer schema = %v, want a 'newer Poppydesk' error", err)
	}
}

func TestOpenStateSettingsAndFileMode(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	var mode, sync string
	var busy int
	s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
	s.w.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy)
	if mode != "wal" || sync != "2" || busy != 5000 {
		t.Fatalf("journal_mode=%s synchronous=%s busy_timeout=%d; want wal, 2 (FULL), 5000", mode, sync, busy)
	}
	if err := s.SetSetting(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{s.Path(), s.Path() + "-wal"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		// Windows has no mode bits; there the file inherits the access list of the user's profile.
		if fi.Mode().Perm() != 0o600 && runtime.GOOS != "windows" {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
	// Readers cannot write.
	if _, err := s.r.ExecContext(ctx, `INSERT INTO settings VALUES ('x', 'y')`); err == nil {
		t.Fatal("the reader pool accepted a write")
	}
}

func TestSettings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	tests := []struct{ key, value string }{{"theme", "dark"}, {"theme", "light"}, {"window.width", "1200"}}
	for _, tc := range tests {
		if err := s.SetSetting(ctx, tc.key, tc.value); err != nil {
			t.Fatal(err)
		}
		if v, err := s.GetSetting(ctx, tc.key); err != nil || v != tc.value {
			t.Fatalf("GetSetting(%q) = %q, %v", tc.key, v, err)
		}
	}
	all, err := s.Settings(ctx)
	if err != nil || len(all) != 2 || all["theme"] != "light" {
		t.Fatalf("Settings = %v, %v", all, err)
	}
	if err := s.DeleteSetting(ctx, "theme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSetting(ctx, "theme"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSetting after delete = %v", err)
	}
	if err := s.SetSetting(ctx, "", "x"); err == nil {
		t.Fatal("empty key accepted")
	}
}

func TestCompaniesAndCache(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	tests := []store.Company{
		{Identifier: "https://shop.example", Domain: "shop.example", Name: "Shop", Document: json.RawMessage(`{"v":"0.4"}`), FetchedAt: t0, ETag: `"a"`, Expires: t0.Add(time.Hour)},
		{Identifier: "https://auth.example/t/1", Domain: "books.example", Document: json.RawMessage(`{}`), FetchedAt: t0},
		{Identifier: "https://shop.example", Domain: "shop.example", Name: "Shop, renamed", Agent: "https://shop.example/agent", Document: json.RawMessage(`{"v":"0.5"}`), FetchedAt: t0.Add(time.Minute), ETag: `"b"`},
	}
	for _, c := range tests {
		if err := s.PutCompany(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetCompany(ctx, c.Identifier)
		if err != nil || got.Domain != c.Domain || got.Name != c.Name || got.Agent != c.Agent || string(got.Document) != string(c.Document) ||
			!got.FetchedAt.Equal(c.FetchedAt) || got.ETag != c.ETag || !got.Expires.Equal(c.Expires) {
			t.Fatalf("GetCompany = %+v, %v; want %+v", got, err, c)
		}
	}
	list, err := s.ListCompanies(ctx)
	if err != nil || len(list) != 2 || list[0].Identifier != "https://auth.example/t/1" {
		t.Fatalf("ListCompanies = %+v, %v", list, err)
	}
	// The names of a page's Companies, from the vault and from the in-memory store alike.
	mem := store.NewMemoryEngineState()
	for _, c := range tests {
		must(t, mem.PutCompany(ctx, c))
	}
	for name, st := range map[string]store.EngineState{"vault": s, "memory": mem} {
		got, err := st.CompanyNames(ctx, []string{"https://shop.example", "https://auth.example/t/1", "https://none.example"})
		want := map[string]store.CompanyName{"https://shop.example": {Name: "Shop, renamed", Domain: "shop.example"}, "https://auth.example/t/1": {Name: "", Domain: "books.example"}}
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("%s: CompanyNames = %v, %v; want %v", name, got, err, want)
		}
	}
	if err := s.PutCompany(ctx, store.Company{Identifier: "x", Domain: "x", Document: json.RawMessage(`{`)}); err == nil {
		t.Fatal("invalid JSON document accepted")
	}
	if _, err := s.GetCompany(ctx, "https://none.example"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetCompany(unknown) = %v", err)
	}

	e := store.CacheEntry{URL: "https://shop.example/.well-known/poppy.json", Company: "https://shop.example", Body: []byte("{}"), ETag: `"a"`, FetchedAt: t0, Expires: t0.Add(time.Hour)}
	if err := s.PutCacheEntry(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetCacheEntry(ctx, e.URL)
	if err != nil || string(got.Body) != "{}" || got.ETag != `"a"` || !got.Expires.Equal(e.Expires) {
		t.Fatalf("GetCacheEntry = %+v, %v", got, err)
	}
	if err := s.DeleteCacheEntry(ctx, e.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetCacheEntry(ctx, e.URL); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetCacheEntry after delete = %v", err)
	}
}

func TestSessionsNeverReuseASid(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	ss := store.Session{SID: "sid-1", Company: "https://shop.example", Version: "0.4", Extensions: []string{"operations"}, Started: t0}
	if err := s.AddSession(ctx, ss); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSession(ctx, ss); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second AddSession with the same sid = %v, want store.ErrExists", err)
	}
	if err := s.EndSession(ctx, "sid-1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSession(ctx, "sid-x", t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("EndSession(unknown) = %v", err)
	}
	got, err := s.GetSession(ctx, "sid-1")
	if err != nil || !got.Ended.Equal(t0.Add(time.Hour)) || got.Extensions[0] != "operations" {
		t.Fatalf("GetSession = %+v, %v", got, err)
	}
	if err := s.AddSession(ctx, store.Session{SID: "sid-2", Company: "https://shop.example", Started: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListSessions(ctx, "https://shop.example", "")
	if err != nil || len(list) != 2 || list[1].SID != "sid-2" || len(list[1].Extensions) != 0 {
		t.Fatalf("ListSessions = %+v, %v", list, err)
	}
}

func TestConversations(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	tests := []store.Conversation{
		{Company: "https://a.example", ID: "c1", Cursor: "1", State: "open", Updated: t0},
		{Company: "https://a.example", ID: "c2", Cursor: "", State: "open", Updated: t0.Add(time.Second)},
		{Company: "https://a.example", ID: "c1", Cursor: "7", State: "closed", Updated: t0.Add(2 * time.Second)},
		{Company: "https://b.example", ID: "c1", Cursor: "x", State: "open", Updated: t0},
	}
	for _, c := range tests {
		if err := s.PutConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetConversation(ctx, c.Company, c.ID)
		if err != nil || got != c {
			t.Fatalf("GetConversation = %+v, %v; want %+v", got, err, c)
		}
	}
	list, err := s.ListConversations(ctx, "https://a.example")
	if err != nil || len(list) != 2 || list[0].ID != "c1" || list[0].Cursor != "7" {
		t.Fatalf("ListConversations = %+v, %v", list, err)
	}
}

func TestApprovalLifecycleAndDecisionLog(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	a := store.Approval{ID: "ap-1", Company: "https://shop.example", SID: "sid-1", Interface: "api",
		Request: json.RawMessage(`{"method":"POST","url":"https://shop.example/orders"}`), State: "pending", Created: t0}
	if err := s.CreateApproval(ctx, a, store.Revision{Revision: 1, Operation: json.RawMessage(`{"id":"op1","revision":1}`), Received: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApproval(ctx, a, store.Revision{Revision: 1, Operation: json.RawMessage(`{}`)}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("CreateApproval twice = %v, want store.ErrExists", err)
	}
	steps := []struct {
		name    string
		from    string
		d       store.Decision
		wantErr error
	}{
		{"wrong from state", "approved", store.Decision{Revision: 1, To: "sent", Decision: "send", At: t0}, store.ErrConflict},
		{"stale revision", "pending", store.Decision{Revision: 0, To: "approved", Decision: "approve", At: t0}, store.ErrConflict},
		{"approve", "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: t0.Add(time.Second), Note: "user gesture"}, nil},
		{"approve again", "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: t0}, store.ErrConflict},
		{"sent", "approved", store.Decision{Revision: 1, To: "sent", Decision: "send", At: t0.Add(2 * time.Second)}, nil},
	}
	for _, st := range steps {
		err := s.TransitionApproval(ctx, "ap-1", st.from, st.d)
		if (st.wantErr == nil && err != nil) || (st.wantErr != nil && !errors.Is(err, st.wantErr)) {
			t.Fatalf("%s: TransitionApproval = %v, want %v", st.name, err, st.wantErr)
		}
	}
	if err := s.TransitionApproval(ctx, "ap-x", "pending", store.Decision{To: "a", Decision: "b"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("TransitionApproval(unknown) = %v", err)
	}
	// A new revision needs a new decision: the old revision can no longer be approved.
	if err := s.AddRevision(ctx, "ap-1", store.Revision{Revision: 1, Operation: json.RawMessage(`{}`)}, "pending"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AddRevision with an old number = %v, want store.ErrConflict", err)
	}
	if err := s.AddRevision(ctx, "ap-1", store.Revision{Revision: 2, Operation: json.RawMessage(`{"id":"op1","revision":2}`), Received: t0.Add(3 * time.Second)}, "pending"); err != nil {
		t.Fatal(err)
	}
	if err := s.TransitionApproval(ctx, "ap-1", "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("approving revision 1 after revision 2 arrived = %v, want store.ErrConflict", err)
	}
	got, err := s.GetApproval(ctx, "ap-1")
	if err != nil || got.State != "pending" || len(got.Revisions) != 2 || got.Revisions[1].Revision != 2 || !got.Updated.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("GetApproval = %+v, %v", got, err)
	}
	pending, err := s.ListApprovals(ctx, "pending", "approved")
	if err != nil || len(pending) != 1 || len(pending[0].Revisions) != 2 {
		t.Fatalf("ListApprovals = %+v, %v", pending, err)
	}
	if none, _ := s.ListApprovals(ctx, "sent"); len(none) != 0 {
		t.Fatalf("ListApprovals(sent) = %+v", none)
	}
	log, err := s.Decisions(ctx, "ap-1")
	if err != nil || len(log) != 2 || log[0].Decision != "approve" || log[0].From != "pending" || log[0].Note != "user gesture" || log[1].To != "sent" {
		t.Fatalf("Decisions = %+v, %v", log, err)
	}
	// The log is append-only.
	if _, err := s.w.ExecContext(ctx, `UPDATE approval_decisions SET decision = 'deny'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("UPDATE of the decision log = %v, want the append-only error", err)
	}
}

func TestForgetCompanyAndReset(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{Now: func() time.Time { return t0 }})
	for _, c := range []string{"https://a.example", "https://b.example"} {
		must(t, s.PutCompany(ctx, store.Company{Identifier: c, Domain: "d", Document: json.RawMessage(`{}`), FetchedAt: t0}))
		must(t, s.PutCacheEntry(ctx, store.CacheEntry{URL: c + "/doc", Company: c, FetchedAt: t0}))
		must(t, s.AddSession(ctx, store.Session{SID: "sid" + c, Company: c, Started: t0}))
		must(t, s.PutConversation(ctx, store.Conversation{Company: c, ID: "c", State: "open", Updated: t0}))
		must(t, s.CreateApproval(ctx, store.Approval{ID: "ap" + c, Company: c, Request: json.RawMessage(`{}`), State: "pending", Created: t0},
			store.Revision{Revision: 1, Operation: json.RawMessage(`{}`), Received: t0}))
		must(t, s.TransitionApproval(ctx, "ap"+c, "pending", store.Decision{Revision: 1, To: "denied", Decision: "deny", At: t0}))
		_, err := s.AddExchange(ctx, store.Exchange{At: t0, Company: c})
		must(t, err)
		must(t, s.AddFeedbackReport(ctx, store.FeedbackReport{Company: c, Key: "k", Task: "t", Status: store.FeedbackAccepted, Created: t0}))
	}
	must(t, s.SetSetting(ctx, "k", "v"))
	must(t, s.ForgetCompany(ctx, "https://a.example"))
	counts := func() map[string]int {
		out := map[string]int{}
		for _, tb := range []string{"companies", "http_cache", "sessions", "conversations", "approvals", "approval_revisions", "approval_decisions", "exchanges", "feedback_reports", "settings"} {
			var n int
			must(t, s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tb).Scan(&n))
			out[tb] = n
		}
		return out
	}
	for tb, n := range counts() {
		if n != 1 {
			t.Errorf("after ForgetCompany, %s has %d rows, want 1 (only the other Company's or the setting)", tb, n)
		}
	}
	if _, err := s.GetCompany(ctx, "https://a.example"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("forgotten store.Company still there: %v", err)
	}
	must(t, s.Reset(ctx))
	for tb, n := range counts() {
		if n != 0 {
			t.Errorf("after Reset, %s has %d rows", tb, n)
		}
	}
	must(t, s.Check(ctx))
}

func TestExchangeLogWindow(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(t0)
	s := openTest(t, StateOptions{Now: clk.Now, ExchangeMaxAge: 24 * time.Hour, ExchangeMaxBytes: 1000})
	hdr := http.Header{"Content-Type": {"application/json"}, "Authorization": {"[redacted]"}}
	first, err := s.AddExchange(ctx, store.Exchange{At: clk.Now(), Company: "https://a.example", Direction: "outgoing", Method: "POST",
		URL: "https://a.example/x", Status: 201, RequestHeaders: hdr, RequestBody: []byte(`{"q":1}`), ResponseBody: []byte("ok"), Duration: 15 * time.Millisecond})
	must(t, err)
	got, err := s.ListExchanges(ctx, ExchangeQuery{Company: "https://a.example"})
	if err != nil || len(got) != 1 || got[0].ID != first || got[0].Status != 201 || got[0].RequestHeaders.Get("Authorization") != "[redacted]" ||
		string(got[0].RequestBody) != `{"q":1}` || got[0].Duration != 15*time.Millisecond || !got[0].At.Equal(t0) {
		t.Fatalf("ListExchanges = %+v, %v", got, err)
	}

	tests := []struct {
		name      string
		advance   time.Duration
		add       int // exchanges of 100 bytes of body added at the new time
		wantKept  int
		wantFirst bool
	}{
		{"within the window", 23 * time.Hour, 2, 3, true},
		{"first exchange older than the age", 2 * time.Hour, 0, 2, false},
		{"size limit keeps the newest", time.Minute, 12, 0 /* computed below */, false},
	}
	for _, tc := range tests {
		clk.Advance(tc.advance)
		for range tc.add {
			_, err := s.AddExchange(ctx, store.Exchange{At: clk.Now(), Company: "https://a.example", ResponseBody: make([]byte, 100)})
			must(t, err)
		}
		if _, err := s.PruneExchanges(ctx); err != nil {
			t.Fatal(err)
		}
		all, err := s.ListExchanges(ctx, ExchangeQuery{Limit: 1000})
		must(t, err)
		want := tc.wantKept
		if tc.name == "size limit keeps the newest" {
			want = 1000 / (100 + len("https://a.example")) // rows of 117 bytes that fit in 1000
		}
		if len(all) != want || (len(all) > 0 && (all[0].ID == first) != tc.wantFirst) {
			t.Fatalf("%s: kept %d exchanges (first kept: %v), want %d (%v)", tc.name, len(all), len(all) > 0 && all[0].ID == first, want, tc.wantFirst)
		}
		var total int64
		must(t, s.r.QueryRowContext(ctx, "SELECT COALESCE(SUM(size),0) FROM exchanges").Scan(&total))
		if total > 1000 {
			t.Fatalf("%s: %d bytes kept, over the 1000-byte window", tc.name, total)
		}
	}
	// Paging.
	all, _ := s.ListExchanges(ctx, ExchangeQuery{Limit: 1000})
	page, err := s.ListExchanges(ctx, ExchangeQuery{AfterID: all[0].ID, Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != all[1].ID {
		t.Fatalf("page = %+v, %v", page, err)
	}
	// Newest first, a page before an ID, by IDs, and without headers and bodies.
	newest, err := s.ListExchanges(ctx, ExchangeQuery{Newest: true, Limit: 2})
	if err != nil || len(newest) != 2 || newest[0].ID != all[len(all)-1].ID || newest[1].ID != all[len(all)-2].ID {
		t.Fatalf("newest = %+v, %v", newest, err)
	}
	before, err := s.ListExchanges(ctx, ExchangeQuery{Newest: true, BeforeID: newest[1].ID, Limit: 1, NoBodies: true})
	if err != nil || len(before) != 1 || before[0].ID != all[len(all)-3].ID || len(before[0].ResponseBody) != 0 || before[0].URL != all[len(all)-3].URL {
		t.Fatalf("before = %+v, %v", before, err)
	}
	if len(all[len(all)-3].ResponseBody) == 0 {
		t.Fatal("the exchanges of this test have bodies")
	}
	byID, err := s.ListExchanges(ctx, ExchangeQuery{IDs: []int64{all[2].ID, all[0].ID, 1 << 40}, Limit: 3})
	if err != nil || len(byID) != 2 || byID[0].ID != all[0].ID || byID[1].ID != all[2].ID || len(byID[1].ResponseBody) == 0 {
		t.Fatalf("by IDs = %+v, %v", byID, err)
	}
	if later, _ := s.ListExchanges(ctx, ExchangeQuery{Since: clk.Now().Add(time.Second)}); len(later) != 0 {
		t.Fatalf("Since in the future returned %d exchanges", len(later))
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				if err := s.SetSetting(ctx, fmt.Sprintf("g%d.%d", g, i), "v"); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Settings(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	all, err := s.Settings(ctx)
	if err != nil || len(all) != 100 {
		t.Fatalf("Settings = %d, %v; want 100", len(all), err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func BenchmarkTransitionApproval(b *testing.B) {
	ctx := context.Background()
	s, err := OpenState(ctx, filepath.Join(b.TempDir(), "state.db"), StateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("ap-%d", i)
		i++
		if err := s.CreateApproval(ctx, store.Approval{ID: id, Company: "c", Request: json.RawMessage(`{}`), State: "pending", Created: t0},
			store.Revision{Revision: 1, Operation: json.RawMessage(`{}`), Received: t0}); err != nil {
			b.Fatal(err)
		}
		if err := s.TransitionApproval(ctx, id, "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: t0}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConversationTranscript: entries are saved with the conversation in one transaction,
// numbered in order, an event ID stored once (a crash replay), paged by range, and deleted with
// the conversation's Company and by reset (spec 8.5).
func TestConversationTranscript(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := OpenState(ctx, path, StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	co := "https://shop.example"
	conv := func(cursor string) store.Conversation {
		return store.Conversation{Company: co, ID: "c1", Cursor: cursor, State: `{"status":"working"}`, Updated: time.Unix(0, 1)}
	}
	ents := func(ids ...string) []store.ConversationEntry {
		var out []store.ConversationEntry
		for _, id := range ids {
			out = append(out, store.ConversationEntry{EventID: id, Entry: `{"event_id":"` + id + `"}`})
		}
		return out
	}
	steps := []struct {
		name      string
		cursor    string
		entries   []store.ConversationEntry
		wantTotal int
	}{
		{"no entries yet", "", nil, 0},
		{"first three", "e3", ents("e1", "e2", "e3"), 3},
		{"replay after a crash: known IDs skipped", "e4", ents("e2", "e3", "e4"), 4},
		{"same ID twice in one call", "e5", ents("e5", "e5"), 5},
		{"cursor only", "e5", nil, 5},
	}
	for _, st := range steps {
		total, err := s.SaveConversation(ctx, conv(st.cursor), st.entries)
		if err != nil || total != st.wantTotal {
			t.Fatalf("%s: SaveConversation = %d, %v; want %d", st.name, total, err, st.wantTotal)
		}
		if c, err := s.GetConversation(ctx, co, "c1"); err != nil || c.Cursor != st.cursor {
			t.Fatalf("%s: cursor = %+v, %v; want %q", st.name, c, err, st.cursor)
		}
	}
	if _, err := s.SaveConversation(ctx, conv("x"), []store.ConversationEntry{{Entry: "{}"}}); err == nil {
		t.Fatal("an entry without an event ID was accepted")
	}
	s.Close()

	// Reopened (a restart): pages by range.
	s, err = OpenState(ctx, path, StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pages := []struct {
		from, limit int
		want        []string
	}{
		{0, 2, []string{"e1", "e2"}},
		{2, 2, []string{"e3", "e4"}},
		{4, 2, []string{"e5"}},
		{5, 2, nil},
		{-3, 1, []string{"e1"}},
		{0, 0, nil},
		{99, 5, nil},
		{0, 100, []string{"e1", "e2", "e3", "e4", "e5"}},
	}
	for _, p := range pages {
		es, total, err := s.ConversationEntries(ctx, co, "c1", p.from, p.limit)
		if err != nil || total != 5 {
			t.Fatalf("ConversationEntries(%d, %d) = %d, %v; want total 5", p.from, p.limit, total, err)
		}
		var got []string
		for _, e := range es {
			if e.Entry != `{"event_id":"`+e.EventID+`"}` {
				t.Fatalf("entry %s = %s", e.EventID, e.Entry)
			}
			got = append(got, e.EventID)
		}
		if fmt.Sprint(got) != fmt.Sprint(p.want) {
			t.Fatalf("ConversationEntries(%d, %d) = %v; want %v", p.from, p.limit, got, p.want)
		}
	}
	if es, total, err := s.ConversationEntries(ctx, co, "other", 0, 10); err != nil || total != 0 || len(es) != 0 {
		t.Fatalf("unknown conversation = %v, %d, %v", es, total, err)
	}
	// A transcript row needs its conversation.
	if _, err := s.w.ExecContext(ctx, `INSERT INTO conversation_entries VALUES (?, 'nope', 0, 'e', '{}')`, co); err == nil {
		t.Fatal("a transcript entry without a conversation was stored")
	}
	if err := s.ForgetCompany(ctx, co); err != nil {
		t.Fatal(err)
	}
	if _, total, err := s.ConversationEntries(ctx, co, "c1", 0, 10); err != nil || total != 0 {
		t.Fatalf("after ForgetCompany: total %d, %v; want 0", total, err)
	}
	if _, err := s.SaveConversation(ctx, conv("e1"), ents("e1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, total, err := s.ConversationEntries(ctx, co, "c1", 0, 10); err != nil || total != 0 {
		t.Fatalf("after Reset: total %d, %v; want 0", total, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpenStateOddPaths: a data folder whose name holds "#", "?" or "%" (all legal in file names)
// still opens the database at exactly that path.
func TestOpenStateOddPaths(t *testing.T) {
	for _, name := range []string{"a#b", "a?b=c", "100%", "spa ce"} {
		t.Run(name, func(t *testing.T) {
			if runtime.GOOS == "windows" && strings.Contains(name, "?") {
				t.Skip("? is not allowed in Windows file names")
			}
			dir := filepath.Join(t.TempDir(), name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "state.sqlite")
			st, err := OpenState(context.Background(), path, StateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SetSetting(context.Background(), "k", "v"); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the database is not at %s: %v", path, err)
			}
		})
	}
}

// TestOpenPrunesUnlessLater: OpenState keeps the exchange log within its window at open, except
// with PruneLater (the Host prunes in its start-up work instead).
func TestOpenPrunesUnlessLater(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		opts StateOptions
		kept int
	}{
		{"at open", StateOptions{}, 0},
		{"later", StateOptions{PruneLater: true}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			s, err := OpenState(ctx, path, StateOptions{Now: func() time.Time { return t0 }})
			must(t, err)
			_, err = s.AddExchange(ctx, store.Exchange{At: t0, Company: "https://a.example"})
			must(t, err)
			must(t, s.Close())
			tc.opts.Now = func() time.Time { return t0.Add(DefaultExchangeMaxAge + time.Hour) }
			s, err = OpenState(ctx, path, tc.opts)
			must(t, err)
			defer s.Close()
			if all, err := s.ListExchanges(ctx, ExchangeQuery{Limit: 10}); err != nil || len(all) != tc.kept {
				t.Fatalf("%d exchanges after the open, %v; want %d", len(all), err, tc.kept)
			}
		})
	}
}
