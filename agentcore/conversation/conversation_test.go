package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

func mustCode(t *testing.T, err error, code string) *conversation.Error {
	t.Helper()
	var ce *conversation.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("err = %v, want a conversation.Error with code %q", err, code)
	}
	return ce
}

// TestStartSendWaitCursor: start and send with wait and cursor, the reply in the same response or
// by reading; author types; role (spec 8.3, 8.4, 8.8).
func TestStartSendWaitCursor(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Which jacket is warmer?", Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v.ConversationID == "" || len(v.New) == 0 || v.New[0].Role != "user" || v.New[0].Author.Type != "agent" {
		t.Fatalf("start view = %+v", v)
	}
	es := f.readUntil(t, v.ConversationID, "the Company Agent's answer", hasCompanyText("rated down to -10"))
	if m := companyMessages(es)[0]; m.Author.Type != "agent" || len(m.Data) == 0 {
		t.Fatalf("company message = %+v", m)
	}
	v2, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "Medium, please.", AuthorType: conversation.AuthorHuman, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.New) == 0 || v2.New[0].Text != "Medium, please." || v2.New[0].Author.Type != "human" {
		t.Fatalf("send view = %+v", v2.New)
	}
	sent := f.posts("/messages")
	q, _ := url.ParseQuery(sent[len(sent)-1].Query)
	if q.Get("wait") != "5" || q.Get("cursor") == "" {
		t.Fatalf("the message was sent with query %q, want wait and cursor (spec 8.3)", sent[len(sent)-1].Query)
	}
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "x", AuthorType: "robot"}); err == nil {
		t.Fatal("an author type other than agent or human was sent")
	}
}

// failingStore fails every write after fail is set, to check write-before-send.
type failingStore struct {
	*vault.State
	mu   sync.Mutex
	fail bool
}

func (s *failingStore) PutConversation(ctx context.Context, r store.Conversation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("disk full")
	}
	return s.State.PutConversation(ctx, r)
}

// TestPersistedBeforeSendAndResent: a message is persisted before it is sent (nothing is sent
// when that fails), and one persisted but not known to be accepted is sent again after a restart
// with the same ID and content, which the Company recognizes: no duplicate (spec 8.3).
func TestPersistedBeforeSendAndResent(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hello"})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ConversationID
	// A restart with a store whose writes fail: Send sends nothing.
	fs := &failingStore{State: f.store}
	m2, err := conversation.New(conversation.Config{Engine: f.e, Store: fs})
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.posts("/messages"))
	fs.mu.Lock()
	fs.fail = true
	fs.mu.Unlock()
	if _, err := m2.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "not persisted"}); err == nil {
		t.Fatal("a message that could not be persisted was sent")
	}
	if n := len(f.posts("/messages")); n != before {
		t.Fatalf("%d messages reached the Company although persisting failed", n-before)
	}
	// Persisted, sent, accepted; the process "crashes" before recording that: the record still
	// holds it as pending. Resume sends the same bytes; the Company answers the original response.
	fs.mu.Lock()
	fs.fail = false
	fs.mu.Unlock()
	rec, _ := f.store.GetConversation(ctx, f.company, id)
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "Only once"}); err != nil {
		t.Fatal(err)
	}
	sent := f.posts("/messages")
	last := sent[len(sent)-1]
	var body struct {
		Message json.RawMessage `json:"message"`
	}
	json.Unmarshal(last.Body, &body)
	var st map[string]any
	json.Unmarshal([]byte(rec.State), &st)
	st["pending"] = []any{map[string]any{"id": "x", "body": json.RawMessage(last.Body)}}
	b, _ := json.Marshal(st)
	rec.State = string(b)
	if err := f.store.PutConversation(ctx, rec); err != nil {
		t.Fatal(err)
	}
	f.restart(t) // the Host's start-up work resumes the conversations
	if err := f.m.Resume(ctx, f.company); err != nil {
		t.Fatal(err)
	}
	sent2 := f.posts("/messages")
	if len(sent2) != len(sent)+1 || string(sent2[len(sent2)-1].Body) != string(last.Body) {
		t.Fatalf("the persisted message was not sent again with the same bytes")
	}
	n := 0
	v3, err := f.m.Read(ctx, f.company, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = v3
	_, es, _ := f.m.Get(ctx, f.company, id)
	for _, e := range es {
		if e.Text == "Only once" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the resent message is in the conversation %d times, want 1", n)
	}
}

// TestMessageIDConflict: the same ID with other content is a clear error, never a silent
// duplicate; the message is not kept for resending (spec 8.3, 8.13).
func TestMessageIDConflict(t *testing.T) {
	f := newFixture(t, fixtureOptions{newID: func() string { return "msg_fixed" }})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hello"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "Different"})
	ce := mustCode(t, err, "message_id_conflict")
	if !strings.Contains(ce.Error(), "NOT sent") {
		t.Fatalf("the error does not say the message was not sent: %v", ce)
	}
	got, _, _ := f.m.Get(ctx, f.company, v.ConversationID)
	if got.Pending != 0 {
		t.Fatal("a conflicting message is kept for resending")
	}
}

// TestContextOnlyWhenChanged: context fields are sent only when they change (spec 8.4).
func TestContextOnlyWhenChanged(t *testing.T) {
	f := newFixture(t, fixtureOptions{context: map[string]any{"locale": "en-US", "time_zone": "Europe/Paris", "user_available": true}})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(text string) map[string]any {
		if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: text}); err != nil {
			t.Fatal(err)
		}
		sent := f.posts("/messages")
		var b struct {
			Message struct {
				Context map[string]any `json:"context"`
			} `json:"message"`
		}
		json.Unmarshal(sent[len(sent)-1].Body, &b)
		return b.Message.Context
	}
	var first struct {
		Message struct {
			Context map[string]any `json:"context"`
		} `json:"message"`
	}
	json.Unmarshal(f.posts("")[0].Body, &first)
	if len(first.Message.Context) != 3 {
		t.Fatalf("first context = %v", first.Message.Context)
	}
	if c := send("second"); c != nil {
		t.Fatalf("unchanged context sent again: %v", c)
	}
	f.mu.Lock()
	f.context["user_available"] = false
	f.mu.Unlock()
	if c := send("third"); len(c) != 1 || c["user_available"] != false {
		t.Fatalf("changed context = %v, want only user_available", c)
	}
}

// TestUnknownValues: unknown event types are skipped, an unknown status is working and an
// unknown responder human (spec 8.5, 8.7).
func TestUnknownValues(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.s.SetAgentFault(refcompany.AgentFaultUnknownValues, true)
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Tell me about jackets", Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	es := f.readUntil(t, v.ConversationID, "the reviewing state", func(es []conversation.Entry) bool {
		for _, e := range es {
			if e.RawStatus == "reviewing" {
				return true
			}
		}
		return false
	})
	for _, e := range es {
		if e.Type == "x-shop-typing" {
			t.Fatal("an unknown event type was not skipped")
		}
		if e.RawStatus == "reviewing" && (e.Status != "working" || e.Responder != "human") {
			t.Fatalf("unknown status/responder = %s/%s, want working/human", e.Status, e.Responder)
		}
	}
}

// TestHasMoreAndCursorExpired: has_more reads again at once; cursor_expired reads from the
// beginning and skips events already handled (spec 8.5).
func TestHasMoreAndCursorExpired(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, v.ConversationID, "the first answer", hasCompanyText("-10"))
	if err := f.s.AgentBurst(v.ConversationID, 120); err != nil {
		t.Fatal(err)
	}
	got, err := f.m.Read(ctx, f.company, v.ConversationID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.New) != 120 {
		t.Fatalf("one Read handled %d events, want all 120 over several pages", len(got.New))
	}
	f.s.SetAgentFault(refcompany.AgentFaultCursorExpired, true)
	f.s.AgentBurst(v.ConversationID, 3)
	got, err = f.m.Read(ctx, f.company, v.ConversationID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.New) != 3 {
		t.Fatalf("after cursor_expired %d new events, want exactly the 3 unseen ones", len(got.New))
	}
}

// TestStreaming: text-delta pieces are reported and replaced by the full message; a stream closed
// mid-message reconnects with Last-Event-ID and drops the partial pieces; repeated events after
// the reconnect are skipped (spec 8.5, 8.6).
func TestStreaming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []string
	}{
		{"clean", nil},
		{"cut, duplicates, slow", []string{refcompany.AgentFaultStreamCut, refcompany.AgentFaultDuplicateEvents, refcompany.AgentFaultSlowStream}},
		{"JSON instead of SSE", []string{refcompany.AgentFaultNoSSE}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			for _, fl := range tc.faults {
				f.s.SetAgentFault(fl, true)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hello"})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- f.m.Stream(ctx, f.company, v.ConversationID) }()
			if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "Tell me a long story"}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				_, es, _ := f.m.Get(ctx, f.company, v.ConversationID)
				if hasCompanyText("two-way zip")(es) {
					seen := map[string]bool{}
					for _, e := range es {
						if seen[e.EventID] {
							t.Fatalf("event %s handled twice", e.EventID)
						}
						seen[e.EventID] = true
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the streamed message never arrived: %s", dump(es))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(tc.faults) == 0 || tc.faults[0] == refcompany.AgentFaultStreamCut {
				if len(f.kinds(conversation.UpdateDelta)) == 0 {
					t.Fatal("no text-delta piece was reported")
				}
			}
			if len(tc.faults) > 0 && tc.faults[0] == refcompany.AgentFaultStreamCut && len(f.kinds(conversation.UpdateDropDeltas)) == 0 {
				t.Fatal("the partial pieces were not dropped after the reconnect")
			}
			got, _, _ := f.m.Get(ctx, f.company, v.ConversationID)
			if len(got.Writing) != 0 {
				t.Fatalf("pieces remain after the full message: %v", got.Writing)
			}
			cancel()
			<-done
		})
	}
}

// TestHandoff: queued, then a person joins with a name (spec 8.7, 8.9); a second handoff
// changes nothing.
func TestHandoff(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, v.ConversationID, "the answer", hasCompanyText("-10"))
	hv, err := f.m.Handoff(ctx, f.company, v.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if hv.Status != "queued" || hv.Responder != "agent" {
		t.Fatalf("after handoff %s/%s, want queued/agent", hv.Status, hv.Responder)
	}
	es := f.readUntil(t, v.ConversationID, "a person joins", hasCompanyText("I'm Alex"))
	last := companyMessages(es)[len(companyMessages(es))-1]
	if last.Author.Type != "human" || last.Author.Name != refcompany.AgentPersonName {
		t.Fatalf("the person's message author = %+v", last.Author)
	}
	hv, err = f.m.Handoff(ctx, f.company, v.ConversationID)
	if err != nil || hv.Responder != "human" {
		t.Fatalf("second handoff = %+v, %v", hv, err)
	}
}

// TestDirectConversation: the Company's user_requested is accepted only through
// AcceptUserRequest; direct_opened; the parent refuses messages with direct_conversation_open;
// closing the Direct Conversation reopens the parent (spec 8.10, 8.12).
func TestDirectConversation(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Can a specialist help?"})
	if err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, v.ConversationID, "user_requested", hasType(conversation.EventUserRequested))
	pv, _, _ := f.m.Get(ctx, f.company, v.ConversationID)
	if len(pv.Invites) != 1 || !strings.Contains(pv.Invites[0].Reason, "specialist") {
		t.Fatalf("invites = %+v", pv.Invites)
	}
	if _, err := f.m.AcceptUserRequest(ctx, f.company, v.ConversationID, "evt_unknown", time.Second); err == nil {
		t.Fatal("an event the Company never sent was accepted")
	}
	dv, err := f.m.AcceptUserRequest(ctx, f.company, v.ConversationID, pv.Invites[0].EventID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !dv.Direct || dv.Parent != v.ConversationID {
		t.Fatalf("direct view = %+v", dv)
	}
	f.readUntil(t, dv.ConversationID, "the specialist speaks first", hasCompanyText("this is Alex"))
	f.readUntil(t, v.ConversationID, "direct_opened", hasType(conversation.EventDirectOpened))
	_, err = f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "still there?"})
	if ce := mustCode(t, err, "direct_conversation_open"); ce.DirectConversationID != dv.ConversationID {
		t.Fatalf("direct_conversation_open names %q, want %q", ce.DirectConversationID, dv.ConversationID)
	}
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: dv.ConversationID, Text: "Yes, medium.", AuthorType: conversation.AuthorHuman}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Close(ctx, f.company, dv.ConversationID); err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, v.ConversationID, "direct_closed", hasType(conversation.EventDirectClosed))
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "Back here."}); err != nil {
		t.Fatalf("the parent does not take messages after the Direct Conversation closed: %v", err)
	}
	// Starting a Direct Conversation directly with a parent, by the user.
	d2, err := f.m.Start(ctx, conversation.Start{Company: f.company, Parent: v.ConversationID, Text: "Me again", AuthorType: conversation.AuthorHuman})
	if err != nil || !d2.Direct {
		t.Fatalf("direct start = %+v, %v", d2, err)
	}
	_, err = f.m.Start(ctx, conversation.Start{Company: f.company, Parent: v.ConversationID, Text: "a second one"})
	mustCode(t, err, "direct_conversation_open")
}

// TestSignInDuringConversation: an authorization event and the matching challenge on the
// successful response are one need; the accepted message is not sent again; after sign-in the
// same conversation continues with the token; a conversation that used the account is not
// continued signed out or with another account (spec 8.2, 8.11).
func TestSignInDuringConversation(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ConversationID
	sv, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "I want to exchange my jacket from my order", Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, id, "the authorization event", hasType(conversation.EventAuthorization))
	if sv.Auth == nil || strings.Join(sv.Auth.Scopes, " ") != "orders:read orders:write" {
		t.Fatalf("auth need = %+v", sv.Auth)
	}
	if n := len(f.kinds(conversation.UpdateAuthorization)); n != 1 {
		t.Fatalf("%d authorization needs, want exactly 1 for the event and the challenge", n)
	}
	if n := len(f.posts("/messages")); n != 1 {
		t.Fatalf("the accepted message was sent %d times", n)
	}
	f.signIn(t)
	if _, err := f.m.SignedIn(ctx, f.company, id, account); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "Please exchange it now"}); err != nil {
		t.Fatal(err)
	}
	es := f.readUntil(t, id, "the exchange offer", hasCompanyText("once you approve"))
	var offer conversation.Entry
	for _, e := range companyMessages(es) {
		if e.OperationID != "" {
			offer = e
		}
	}
	if ops := f.queued(t); offer.OperationID == "" || len(ops) != 1 || ops[0].Request.Conversation != id || ops[0].Current.OperationID != offer.OperationID {
		t.Fatalf("no operation reached the approval queue: %+v", ops)
	}
	got, _, _ := f.m.Get(ctx, f.company, id)
	if got.UsedAccount != account || got.ConversationID != id || got.Auth != nil {
		t.Fatalf("after sign-in view = %+v", got)
	}
	// Another size: a new revision of the same operation (Operations 3 "New terms").
	if _, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "Actually size L please"}); err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, id, "the new revision", hasCompanyText("(L)"))
	ops := f.queued(t)
	if len(ops) != 1 || ops[0].Previous == nil || ops[0].Previous.OperationID != ops[0].Current.OperationID || ops[0].Previous.Revision == ops[0].Current.Revision {
		t.Fatalf("queued = %+v, want the same operation with a new revision", ops)
	}
	// Approve in the conversation (Operations 6): the Company performs it once.
	a := operations.Approval{OperationID: ops[0].Current.OperationID, Revision: ops[0].Current.Revision}
	for i := 0; i < 2; i++ {
		if _, err := f.m.SendApproval(ctx, f.company, id, "msg_approval_1", a, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	f.readUntil(t, id, "the confirmation", hasCompanyText("Exchange confirmed"))
	if l := f.s.Ledger(); len(l) != 1 || l[0].Interface != refcompany.InterfaceConversation || l[0].ReplacementSKU != "stormline-insulated-l" {
		t.Fatalf("ledger = %+v", l)
	}
	// Ownership (spec 8.2): not signed out, not with another account.
	if err := f.m.SetAccount(ctx, f.company, id, ""); err != nil {
		t.Fatal(err)
	}
	_, err = f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: id, Text: "signed out now"})
	mustCode(t, err, "ownership")
	_, err = f.m.SignedIn(ctx, f.company, id, "bob")
	mustCode(t, err, "ownership")
}

// TestErrors: the errors of spec 8.13 are typed and say what to do.
func TestErrors(t *testing.T) {
	t.Run("extension_required", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{noOperations: true})
		_, err := f.m.Start(context.Background(), conversation.Start{Company: f.company, Text: "Hi"})
		mustCode(t, err, "extension_required")
	})
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	put := func(id, cursor string) {
		rec, _ := f.store.GetConversation(ctx, f.company, v.ConversationID)
		rec.ID, rec.Cursor = id, cursor
		if err := f.store.PutConversation(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	put("cnv_unknown", "")
	put("cnv_badcursor", "")
	rec, _ := f.store.GetConversation(ctx, f.company, v.ConversationID)
	rec.Cursor = "evt_not_mine"
	f.store.PutConversation(ctx, rec)
	f.restart(t) // reload from the store
	for _, tc := range []struct {
		name, code string
		run        func() error
	}{
		{"conversation_not_found", "conversation_not_found", func() error {
			_, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: "cnv_unknown", Text: "x"})
			return err
		}},
		{"invalid_cursor", "invalid_cursor", func() error {
			_, err := f.m.Read(ctx, f.company, v.ConversationID, 0)
			return err
		}},
		{"conversation_closed", "conversation_closed", func() error {
			if _, err := f.m.Close(ctx, f.company, v.ConversationID); err != nil {
				return err
			}
			_, err := f.m.Send(ctx, conversation.Send{Company: f.company, ConversationID: v.ConversationID, Text: "x"})
			return err
		}},
		{"no such conversation locally", "not_found", func() error {
			_, err := f.m.Read(ctx, f.company, "cnv_never", 0)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { mustCode(t, tc.run(), tc.code) })
	}
}

// TestRestartMidStream: a conversation survives a restart (new engine, new Manager, the same
// Store) in the middle of a stream: every Company message is handled exactly once.
func TestRestartMidStream(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.s.SetAgentFault(refcompany.AgentFaultSlowStream, true)
	ctx1, cancel1 := context.WithCancel(context.Background())
	v, err := f.m.Start(ctx1, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ConversationID
	done := make(chan error, 1)
	go func() { done <- f.m.Stream(ctx1, f.company, id) }()
	f.m.Send(ctx1, conversation.Send{Company: f.company, ConversationID: id, Text: "Tell me a long story"})
	// Stop while the long message is being streamed.
	deadline := time.Now().Add(10 * time.Second)
	for len(f.kinds(conversation.UpdateDelta)) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no pieces streamed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel1()
	<-done
	_, first, _ := f.m.Get(context.Background(), f.company, id)
	f.s.SetAgentFault(refcompany.AgentFaultSlowStream, false)
	f.restart(t)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() { done <- f.m.Stream(ctx2, f.company, id) }()
	want := len(f.s.AgentMessageIDs(id))
	deadline = time.Now().Add(10 * time.Second)
	var second []conversation.Entry
	for {
		_, second, _ = f.m.Get(context.Background(), f.company, id)
		all := append(companyMessages(first), companyMessages(second)...)
		if len(all) >= want && hasCompanyText("two-way zip")(all) {
			seen := map[string]int{}
			for _, e := range all {
				seen[e.MessageID]++
			}
			for _, mid := range f.s.AgentMessageIDs(id) {
				if seen[mid] != 1 {
					t.Fatalf("message %s handled %d times across the restart", mid, seen[mid])
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the stream did not continue: first %s second %s", dump(first), dump(second))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel2()
	<-done
}
