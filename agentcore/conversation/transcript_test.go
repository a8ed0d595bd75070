package conversation_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// storeOnly hides the store.Transcripts methods of the state database: a Store without
// transcripts.
type storeOnly struct{ store.Conversations }

// TestTranscriptAfterRestartPaged: with a store.Transcripts the transcript is saved with the cursor
// and, after a restart (a new engine and Manager over the same Store), View reads its length and
// Entries any page of it: the same entries in the same order, none twice (spec 8.5). A Store
// without transcripts keeps the entries of the run only.
func TestTranscriptAfterRestartPaged(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hello", Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ConversationID
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "Where is my order?", Wait: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	before := f.readUntil(t, id, "two Company messages", func(es []conversation.Entry) bool { return len(companyMessages(es)) >= 2 })
	js := func(es []conversation.Entry) string { b, _ := json.Marshal(es); return string(b) }

	f.restart(t)
	_, n, err := f.m.View(ctx, f.company, id)
	if err != nil || n != len(before) {
		t.Fatalf("View after restart: length %d, %v; want %d", n, err, len(before))
	}
	for _, page := range []int{1, 2, 3, len(before)} {
		var got []conversation.Entry
		for from := 0; from < n; from += page {
			es, total, err := f.m.Entries(ctx, f.company, id, from, page)
			if err != nil || total != n || len(es) != min(page, n-from) {
				t.Fatalf("Entries(%d, %d) = %d entries, total %d, %v", from, page, len(es), total, err)
			}
			got = append(got, es...)
		}
		if js(got) != js(before) {
			t.Fatalf("pages of %d after restart:\n%s\nwant\n%s", page, js(got), js(before))
		}
	}
	if es, total, err := f.m.Entries(ctx, f.company, id, n+5, 10); err != nil || len(es) != 0 || total != n {
		t.Fatalf("Entries past the end = %d entries, total %d, %v", len(es), total, err)
	}
	// Reading again after the restart adds only new events: nothing handled before comes back.
	if _, err := f.m.Read(ctx, f.company, id, 0); err != nil {
		t.Fatal(err)
	}
	_, after, err := f.m.Get(ctx, f.company, id)
	if err != nil || js(after[:len(before)]) != js(before) {
		t.Fatalf("Get after restart and read = %v; starts with\n%s\nwant\n%s", err, js(after), js(before))
	}
	seen := map[string]bool{}
	for _, e := range after {
		if seen[e.EventID] {
			t.Fatalf("event %s is in the transcript twice", e.EventID)
		}
		seen[e.EventID] = true
	}

	// A Store without transcripts: the entries of this run only.
	m, err := conversation.New(conversation.Config{Engine: f.e, Store: storeOnly{f.store}})
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := m.View(ctx, f.company, id); err != nil || n != 0 {
		t.Fatalf("View over a Store without transcripts = %d, %v; want 0", n, err)
	}
}
