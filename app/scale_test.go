package app_test

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
	"github.com/poppydesk/poppydesk/vault"
)

// firstLists builds a Host from cfg and makes the first calls of each of the window's services
// (what the window does when it opens), then closes the Host. It returns how long the start
// (app.New and its start-up work), the start with the first screen (what the window calls when
// it opens: the header, the sections, the status line and the Approvals list, its default
// section) and the start with the calls of every section took, and what they listed.
func firstLists(tb testing.TB, cfg app.Config) (startup, first, took time.Duration, l listed) {
	tb.Helper()
	start := time.Now()
	h := apptest.Open(tb, cfg)
	startup = time.Since(start)
	fr := fronts.New(h)
	fr.Shell.Info()
	l.sections = len(fr.Shell.Sections())
	fr.Approvals.Status()
	items, err := fr.Approvals.List()
	if err != nil {
		tb.Fatal(err)
	}
	page, err := fr.Approvals.Earlier("", earlierPage) // as the window's Approvals list reads it
	if err != nil {
		tb.Fatal(err)
	}
	fr.Shell.Status()
	first = time.Since(start)
	cos, err := fr.Companies.List("", companiesPage) // as the window's Companies screen reads it
	if err != nil {
		tb.Fatal(err)
	}
	convCos, err := fr.Conversations.Companies()
	if err != nil {
		tb.Fatal(err)
	}
	if len(convCos) > 0 {
		if _, err := fr.Conversations.List(convCos[0].Identifier); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := fr.SignIn.Requests(); err != nil {
		tb.Fatal(err)
	}
	fr.Activity.List(100)
	fr.Browser.State()
	took = time.Since(start)
	l.approvals, l.earlier, l.next, l.companies, l.companiesTotal = len(items), len(page.Items), page.Next, len(cos.Companies), cos.Total
	if err := h.CloseWithin(app.ShutdownGrace); err != nil {
		tb.Fatal(err)
	}
	return startup, first, took, l
}

// earlierPage is the page the window's Approvals list reads first (FIRST_PAGE in
// frontend/src/views/approvals/view.ts).
const earlierPage = 25

// companiesPage is the page the window's Companies screen reads first (COMPANIES_PAGE in
// frontend/src/views/companies.ts).
const companiesPage = 30

type listed struct {
	sections, approvals, earlier, companies, companiesTotal int
	next                                                    string
}

// TestLongHistory: with 200 Companies, 10,000 decided approvals and 100,000 exchanges, the window's
// first lists are pages (List holds the open approvals only, none here; Earlier pages through every
// decided one exactly once), the Companies screen lists all 200, and
// the exchange log is within its retention window (30 days, 200 MiB) once the Host has started.
func TestLongHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a long history")
	}
	f := apptest.LongHistory(t)
	_, _, _, l := firstLists(t, f.Config)
	if l.approvals != 0 || l.earlier != earlierPage || l.next == "" || l.companies != companiesPage || l.companiesTotal != apptest.LongCompanies {
		t.Fatalf("first lists: %+v", l)
	}
	// Every decided approval, a page at a time, once each.
	opened := f.Clock.Now() // the clock runs: the prune's cutoff is at or after this one's
	h, err := app.New(context.Background(), f.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseWithin(app.ShutdownGrace)
	if err := h.WaitCaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := fronts.New(h).Approvals.Earlier(cursor, app.ApprovalsPageMax)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > app.ApprovalsPageMax {
			t.Fatalf("a page of %d", len(p.Items))
		}
		for _, it := range p.Items {
			if seen[it.ID] {
				t.Fatalf("%s listed twice", it.ID)
			}
			seen[it.ID] = true
		}
		if cursor = p.Next; cursor == "" {
			break
		}
		if pages > apptest.LongApprovals {
			t.Fatal("the pages do not end")
		}
	}
	if len(seen) != apptest.LongApprovals {
		t.Fatalf("%d decided approvals paged, want %d", len(seen), apptest.LongApprovals)
	}
	// Every Company, a page at a time, once each, in name order.
	var names []string
	for cursor, pages := "", 0; ; pages++ {
		p, err := fronts.New(h).Companies.List(cursor, companiesPage)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Companies) > companiesPage || p.Total != apptest.LongCompanies {
			t.Fatalf("a page of %d Companies of %d", len(p.Companies), p.Total)
		}
		for _, e := range p.Companies {
			if e.Problem != "" {
				t.Fatalf("%s: %s", e.Company.Identifier, e.Problem)
			}
			names = append(names, strings.ToLower(e.Company.Name)+"\x00"+e.Company.Identifier)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
		if pages > apptest.LongCompanies {
			t.Fatal("the pages do not end")
		}
	}
	if len(names) != apptest.LongCompanies || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != apptest.LongCompanies {
		t.Fatalf("%d Companies paged (want %d, each once, in name order); the first: %q", len(names), apptest.LongCompanies, names[:min(len(names), 5)])
	}
	// The Inspector's timeline starts at the newest exchange (the Host may record more as it
	// works), newest first, and opens it.
	db, err := sql.Open("sqlite", "file:"+f.StatePath()+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var newest int64
	if err := db.QueryRow(`SELECT MAX(id) FROM exchanges`).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	tl, err := fronts.New(h).Inspector.List(fronts.InspectorQuery{Limit: 50})
	if err != nil || len(tl.Rows) != 50 {
		t.Fatalf("Inspector.List: %d rows, %v", len(tl.Rows), err)
	}
	if _, err := fronts.New(h).Inspector.Entry(tl.Rows[0].ID); err != nil {
		t.Fatalf("opening the newest exchange: %v", err)
	}
	// The exchange log within its window once the Host has started (its start-up work prunes).
	var rows, bytes int64
	var oldest sql.NullInt64
	if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(size), 0), MIN(at) FROM exchanges`).Scan(&rows, &bytes, &oldest); err != nil {
		t.Fatal(err)
	}
	cutoff := opened.Add(-vault.DefaultExchangeMaxAge).UnixNano()
	if tl.Rows[0].ID < newest || !slices.IsSortedFunc(tl.Rows, func(a, b fronts.InspectorRow) int { return int(b.ID - a.ID) }) {
		t.Fatalf("the Inspector's timeline starts at exchange %d, the newest is %d (newest first: %v)", tl.Rows[0].ID, newest,
			slices.IsSortedFunc(tl.Rows, func(a, b fronts.InspectorRow) int { return int(b.ID - a.ID) }))
	}
	if rows == 0 || rows >= apptest.LongExchanges || bytes > vault.DefaultExchangeMaxBytes || oldest.Int64 < cutoff {
		t.Fatalf("the exchange log holds %d rows, %d bytes, the oldest at %v: not within 30 days and %d bytes",
			rows, bytes, time.Unix(0, oldest.Int64), vault.DefaultExchangeMaxBytes)
	}
	t.Logf("exchange log after the open: %d of %d rows kept, %d bytes", rows, apptest.LongExchanges, bytes)
}

// BenchmarkStartLongHistory: app.New with its start-up work, then the window's first calls, over
// the long history, against the same over an empty state database, in the same run
// (interleaved). start-ratio is the long history's time to a started Host over the empty
// state's; first-screen-ratio the same up to the window's first screen (the header, sections,
// status and the Approvals list: the open approvals and the first earlierPage decided ones); every-section-ratio with the first call of every other section too, the 200
// Company cards included, which the empty state does not have.
func BenchmarkStartLongHistory(b *testing.B) {
	big := apptest.LongHistory(b)
	empty := apptest.Start(b, apptest.Options{})
	empty.Close()
	apptest.CatchUp(b, big.Config) // the first open prunes the exchange log to its window
	var sBig, sEmpty, fBig, fEmpty, tBig, tEmpty time.Duration
	for b.Loop() {
		s, f, d, _ := firstLists(b, empty.Config)
		sEmpty, fEmpty, tEmpty = sEmpty+s, fEmpty+f, tEmpty+d
		s, f, d, _ = firstLists(b, big.Config)
		sBig, fBig, tBig = sBig+s, fBig+f, tBig+d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(float64(sBig)/float64(sEmpty), "start-ratio")
	b.ReportMetric(float64(fBig)/float64(fEmpty), "first-screen-ratio")
	b.ReportMetric(float64(tBig)/float64(tEmpty), "every-section-ratio")
	b.ReportMetric(ms(sEmpty), "empty-start-ms")
	b.ReportMetric(ms(sBig), "long-start-ms")
	b.ReportMetric(ms(fEmpty), "empty-first-ms")
	b.ReportMetric(ms(fBig), "long-first-ms")
	b.ReportMetric(ms(tEmpty), "empty-window-ms")
	b.ReportMetric(ms(tBig), "long-window-ms")
}

// BenchmarkCallsDuringCatchUp: what the start-up catch-up of a long-unused exchange log costs
// the calls made beside it. A Host starts over the ten-times long history (the long history
// with -short), whose exchange log is months outside its window; once its catch-up has begun
// (app.CatchUpDelay), each iteration makes a write (a setting: one write transaction, what an
// approval's transition and a batch of recorded exchanges each are) and the Inspector
// timeline's read (the newest 200 exchanges, without bodies) while the catch-up deletes most of
// the log in steps; after the catch-up has finished, the same calls are made as many times
// again. write-during-catchup-ratio and read-during-catchup-ratio are the mean time of a call
// during the catch-up over after it (wall time: a call waits for the write lock a step holds);
// write-during-longest-ms the longest write during it.
func BenchmarkCallsDuringCatchUp(b *testing.B) {
	times := 10
	if testing.Short() {
		times = 1
	}
	f := apptest.LongHistoryTimes(b, times)
	ctx := context.Background()
	h, err := app.New(ctx, f.Config)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := h.CloseWithin(app.ShutdownGrace); err != nil {
			b.Error(err)
		}
	}()
	caughtUp := make(chan error, 1)
	go func() { caughtUp <- h.WaitCaughtUp(ctx) }()
	st := h.State()
	call := func(i int) (write, read time.Duration) {
		began := time.Now()
		if err := st.SetSetting(ctx, "bench.catchup", strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		wrote := time.Now()
		if _, err := st.ListExchanges(ctx, vault.ExchangeQuery{Newest: true, NoBodies: true, Limit: 200}); err != nil {
			b.Fatal(err)
		}
		return wrote.Sub(began), time.Since(wrote)
	}
	time.Sleep(app.CatchUpDelay + 100*time.Millisecond)
	var wDuring, rDuring, wLongest time.Duration
	i := 0
	for b.Loop() {
		w, r := call(i)
		wDuring, rDuring, wLongest, i = wDuring+w, rDuring+r, max(wLongest, w), i+1
	}
	select {
	case <-caughtUp:
		b.Fatalf("the catch-up finished before the %d calls made beside it did: the figures would not be of calls during it", i)
	default:
	}
	if err := <-caughtUp; err != nil {
		b.Fatal(err)
	}
	var wAfter, rAfter time.Duration
	for j := range i {
		w, r := call(j)
		wAfter, rAfter = wAfter+w, rAfter+r
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(i) }
	b.ReportMetric(float64(wDuring)/float64(wAfter), "write-during-catchup-ratio")
	b.ReportMetric(float64(rDuring)/float64(rAfter), "read-during-catchup-ratio")
	b.ReportMetric(us(wDuring), "write-during-us")
	b.ReportMetric(us(wAfter), "write-after-us")
	b.ReportMetric(float64(wLongest.Microseconds())/1000, "write-during-longest-ms")
	b.ReportMetric(us(rDuring), "read-during-us")
	b.ReportMetric(us(rAfter), "read-after-us")
}
