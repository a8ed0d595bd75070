package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/internal/benchratio"
	"github.com/poppydesk/poppydesk/vault"
)

// TestConversationSurvivesRestart: a conversation survives a Poppydesk restart in the middle of a
// streamed message (a new Host over the same data folder and secrets): every Company message is
// handled exactly once, none lost or duplicated (spec 8.3, 8.5, 8.6).
func TestConversationSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	f := apptest.Start(t, apptest.Options{})
	f.Company.SetAgentFault(refcompany.AgentFaultSlowStream, true)
	company := f.Discover(t).Identifier

	var mu sync.Mutex
	handled := map[string]int{} // Company message ID → entry events heard by the window
	deltas := 0
	listen := func(h *app.Host) {
		h.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
			if name != app.EventConversationsChanged || len(data) == 0 {
				return
			}
			ch, _ := data[0].(app.ConversationChange)
			mu.Lock()
			defer mu.Unlock()
			switch ch.Kind {
			case conversation.UpdateEntry:
				for _, mid := range f.Company.AgentMessageIDs(ch.ConversationID) {
					if mid == ch.MessageID {
						handled[mid]++
					}
				}
			case conversation.UpdateDelta:
				deltas++
			}
		}))
	}
	listen(f.Host)
	m := f.Host.Conversations()
	v, err := m.Start(ctx, conversation.Start{Company: company, Text: "Tell me a long story"})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ConversationID
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Stream(sctx, company, id) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := deltas
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing streamed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	scancel() // Poppydesk stops mid-message
	<-done
	before := transcript(t, m, company, id)
	if len(before) == 0 {
		t.Fatal("nothing was handled before the restart")
	}

	f.Company.SetAgentFault(refcompany.AgentFaultSlowStream, false)
	f.Restart(t)
	listen(f.Host)
	m2 := f.Host.Conversations()
	// The window reads the history after the restart, before anything new is handled.
	if got := transcript(t, m2, company, id); !sameEntries(got, before) {
		t.Fatalf("transcript after the restart:\n%s\nwant the one before:\n%s", entriesJSON(got), entriesJSON(before))
	}
	sctx2, scancel2 := context.WithCancel(ctx)
	defer scancel2()
	go func() { done <- m2.Stream(sctx2, company, id) }()
	deadline = time.Now().Add(10 * time.Second)
	for {
		want := f.Company.AgentMessageIDs(id)
		mu.Lock()
		ok := len(want) > 0 && len(handled) == len(want)
		for _, mid := range want {
			ok = ok && handled[mid] == 1
		}
		got := len(handled)
		mu.Unlock()
		if ok && f.Company.AgentEventCount(id) > 0 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("after the restart: handled %v (%d), Company messages %v", handled, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	for mid, n := range handled {
		if n != 1 {
			t.Fatalf("message %s was handled %d times", mid, n)
		}
	}
	mu.Unlock()
	scancel2()
	<-done
	final := transcript(t, m2, company, id)
	if !sameEntries(final[:min(len(before), len(final))], before) {
		t.Fatalf("the transcript after the restart does not start with the one before:\n%s\nwant prefix\n%s", entriesJSON(final), entriesJSON(before))
	}
	events, messages := map[string]bool{}, map[string]int{}
	for _, e := range final {
		if events[e.EventID] {
			t.Fatalf("event %s is in the transcript twice:\n%s", e.EventID, entriesJSON(final))
		}
		events[e.EventID] = true
		if e.Role == "company" {
			messages[e.MessageID]++
		}
	}
	for _, mid := range f.Company.AgentMessageIDs(id) {
		if messages[mid] != 1 {
			t.Fatalf("Company message %s is in the transcript %d times, want once:\n%s", mid, messages[mid], entriesJSON(final))
		}
	}
	// A second restart shows the whole history: entries from before and after the first one.
	f.Restart(t)
	if got := transcript(t, f.Host.Conversations(), company, id); !sameEntries(got, final) {
		t.Fatalf("transcript after the second restart:\n%s\nwant:\n%s", entriesJSON(got), entriesJSON(final))
	}
}

// transcript reads a conversation's whole transcript the way the window does: its length from
// View, then pages (of 7 here, so pages cross what was handled before and after a restart).
func transcript(t *testing.T, m *conversation.Manager, company, id string) []conversation.Entry {
	t.Helper()
	ctx := context.Background()
	_, n, err := m.View(ctx, company, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []conversation.Entry
	for from := 0; from < n; from += 7 {
		es, total, err := m.Entries(ctx, company, id, from, 7)
		if err != nil || total != n {
			t.Fatalf("Entries(%d, 7) = total %d, %v; want %d", from, total, err, n)
		}
		out = append(out, es...)
	}
	if len(out) != n {
		t.Fatalf("read %d entries, View says %d", len(out), n)
	}
	return out
}

func entriesJSON(es []conversation.Entry) string {
	b, _ := json.MarshalIndent(es, "", " ")
	return string(b)
}

func sameEntries(a, b []conversation.Entry) bool { return entriesJSON(a) == entriesJSON(b) }

// seedTranscript writes a conversation with n transcript entries into the state file at path
// (in saves of 100, as a stream of batches would) and returns the entries.
func seedTranscript(tb testing.TB, path, company, id string, n int) []conversation.Entry {
	tb.Helper()
	ctx := context.Background()
	st, err := vault.OpenState(ctx, path, vault.StateOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	all := make([]conversation.Entry, 0, n)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for from := 0; from < n; from += 100 {
		var recs []store.ConversationEntry
		for i := from; i < min(n, from+100); i++ {
			e := conversation.Entry{EventID: fmt.Sprintf("evt_%06d", i), Type: conversation.EventMessage, CreatedAt: at.Add(time.Duration(i) * time.Second),
				MessageID: fmt.Sprintf("msg_%06d", i), Role: "company", Author: &conversation.Author{Type: conversation.AuthorAgent, Name: "Shop"},
				Text: fmt.Sprintf("Message %d: your order ships tomorrow; the tracking number follows when the carrier has it.", i)}
			if i%2 == 1 {
				e.Role, e.Author.Type, e.Author.Name, e.Text = "user", conversation.AuthorHuman, "", fmt.Sprintf("Question %d: where is my order?", i)
			}
			b, _ := json.Marshal(e)
			recs = append(recs, store.ConversationEntry{EventID: e.EventID, Entry: string(b)})
			all = append(all, e)
		}
		state := `{"endpoint":"https://shop.example/poppy/conversations","status":"idle","responder":"agent"}`
		if _, err := st.SaveConversation(ctx, store.Conversation{Company: company, ID: id, Cursor: recs[len(recs)-1].EventID, State: state, Updated: at}, recs); err != nil {
			tb.Fatal(err)
		}
	}
	return all
}

// hostOver builds a Host over the data folder dir whose state database was seeded (a restart
// of Poppydesk that reads what an earlier run saved).
func hostOver(tb testing.TB, dir string) *app.Host {
	tb.Helper()
	h, err := app.New(context.Background(), app.Config{Version: "test", Paths: app.Paths{Data: dir, Config: dir, State: dir},
		Secrets: store.NewSecrets(store.NewMemoryKV()), ClientID: "https://agent.example/agent.json", Socket: app.NoSocket,
		Getenv: func(string) string { return "" }, Notifier: app.NotifierFunc(func(string, string) {})})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.CloseWithin(app.ShutdownGrace) })
	return h
}

// TestConversationTranscriptPages: after a restart the window pages a long transcript from the
// state database: View gives the length, Entries any range, in order (spec 8.5).
func TestConversationTranscriptPages(t *testing.T) {
	const company, id, n = "https://shop.example", "conv_long", 1234
	dir := t.TempDir()
	want := seedTranscript(t, filepath.Join(dir, app.StateFile), company, id, n)
	m := hostOver(t, dir).Conversations()
	ctx := context.Background()
	if _, total, err := m.View(ctx, company, id); err != nil || total != n {
		t.Fatalf("View = %d, %v; want %d", total, err, n)
	}
	for _, p := range []struct{ from, limit, wantFrom, wantLen int }{
		{0, 50, 0, 50},
		{600, 50, 600, 50},
		{n - 50, 50, n - 50, 50},
		{n - 10, 50, n - 10, 10},
		{n, 50, n, 0},
		{-5, 3, 0, 3},
		{10, 0, 10, 0},
		{0, n + 100, 0, n},
	} {
		es, total, err := m.Entries(ctx, company, id, p.from, p.limit)
		if err != nil || total != n || len(es) != p.wantLen {
			t.Fatalf("Entries(%d, %d) = %d entries, total %d, %v; want %d, %d", p.from, p.limit, len(es), total, err, p.wantLen, n)
		}
		if !sameEntries(es, want[p.wantFrom:p.wantFrom+p.wantLen]) {
			t.Fatalf("Entries(%d, %d) are not entries %d..%d", p.from, p.limit, p.wantFrom, p.wantFrom+p.wantLen)
		}
	}
}

// BenchmarkTranscriptPageAfterRestart: the window reading a page of 50 of a 10,000-entry
// transcript after a restart, against the baseline of the same 50 rows by one plain SQL query in
// the same run. "manager_cold" builds a new Manager for each page (View then Entries: the first
// read after a restart); "manager_warm" pages with one Manager; both against "sql_json", the
// baseline with decoding the rows, which is itself compared with "sql" without decoding.
func BenchmarkTranscriptPageAfterRestart(b *testing.B) {
	const company, id, n, from, page = "https://shop.example", "conv_long", 10000, 5000, 50
	dir := b.TempDir()
	path := filepath.Join(dir, app.StateFile)
	seedTranscript(b, path, company, id, n)
	ctx := context.Background()
	h := hostOver(b, dir)
	m := h.Conversations()
	check := func(b *testing.B, es []conversation.Entry, total int, err error) {
		if err != nil || total != n || len(es) != page || es[0].EventID != fmt.Sprintf("evt_%06d", from) {
			b.Fatalf("page = %d entries, total %d, %v", len(es), total, err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	query := func(b *testing.B, decode bool) {
		rows, err := db.QueryContext(ctx, `SELECT event_id, entry FROM conversation_entries WHERE company = ? AND conversation = ? AND n >= ? AND n < ? ORDER BY n`, company, id, from, from+page)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		got := 0
		for rows.Next() {
			var ev, raw string
			if err := rows.Scan(&ev, &raw); err != nil {
				b.Fatal(err)
			}
			if decode {
				var e conversation.Entry
				if err := json.Unmarshal([]byte(raw), &e); err != nil {
					b.Fatal(err)
				}
			}
			got++
		}
		if rows.Err() != nil || got != page {
			b.Fatalf("sql read %d rows, %v", got, rows.Err())
		}
	}
	cold := func(b *testing.B) {
		mc, err := conversation.New(conversation.Config{Engine: h.Engine(), Store: h.State()})
		if err != nil {
			b.Fatal(err)
		}
		if _, total, err := mc.View(ctx, company, id); err != nil || total != n {
			b.Fatalf("View = %d, %v", total, err)
		}
		es, total, err := mc.Entries(ctx, company, id, from, page)
		check(b, es, total, err)
	}
	warm := func(b *testing.B) {
		es, total, err := m.Entries(ctx, company, id, from, page)
		check(b, es, total, err)
	}
	sqlJSON := func(b *testing.B) { query(b, true) }
	benchratio.Run(b, "manager_cold", "sql_json", cold, sqlJSON)
	benchratio.Run(b, "manager_warm", "sql_json", warm, sqlJSON)
	benchratio.Run(b, "sql_json", "sql", sqlJSON, func(b *testing.B) { query(b, false) })
}
