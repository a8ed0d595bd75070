package conversation

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Limits.
const (
	// maxHandled bounds the event IDs remembered for skipping repeats (spec 8.5).
	maxHandled = 4096
	// MaxWait caps the `wait` Poppydesk asks for, under the transport's 30 s exchange timeout.
	MaxWait = 25 * time.Second
	// sendAttempts bounds how often one message is sent again after a network failure.
	sendAttempts = 3
	maxReadBody  = 8 << 20
	maxEntries   = 20000 // transcript entries kept in memory per conversation (a Store that keeps no transcripts), and returned by Get
	// maxDeltaText bounds the text-delta text kept for one message being written (spec 8.6):
	// pieces past it are ignored; the full message event still replaces the text.
	maxDeltaText = 1 << 20
	// maxDeltaMessages bounds the messages being written at once in one conversation: a piece of
	// a new message past it drops the pieces of the oldest (the full message still arrives).
	maxDeltaMessages = 64
	// maxInvites bounds the pending user_requested invites of a conversation (spec 8.10): a new
	// one past it drops the oldest (logged), like maxHandled, so a Company cannot grow the saved
	// state without end; the newest requests are the ones the user can still answer.
	maxInvites = 32
	// minReconnect is the least time between two stream connections (spec 8.6), so a Company
	// that closes the stream at once (or answers an empty read) cannot make a tight loop of
	// requests; an SSE `retry:` field sets the time, bounded to [minReconnect, maxReconnect].
	minReconnect = time.Second
	maxReconnect = 60 * time.Second
)

// Update kinds (Update.Kind).
const (
	UpdateEntry         = "entry"         // a handled event (Entry)
	UpdateDelta         = "delta"         // text so far of a message being written (spec 8.6)
	UpdateDropDeltas    = "drop_deltas"   // pieces not received in full were dropped after a reconnect
	UpdateState         = "state"         // status / responder changed
	UpdateAuthorization = "authorization" // one authorization need (spec 8.11)
	UpdateUserRequested = "user_requested"
	UpdateStarted       = "started"
)

// Update tells the window and waiting model calls that a conversation changed.
type Update struct {
	Kind           string
	Company        string
	ConversationID string
	Entry          *Entry
	MessageID      string // UpdateDelta
	Text           string // UpdateDelta: the text received so far
	Status         string
	Responder      string
	Scopes         []string // UpdateAuthorization
}

// OperationFound is an operation in a Company message (Operations 4, "Conversations"), for the
// approval queue (agentcore/approvals). It is reported after the event is handled and before the
// cursor is saved, so a restart reports it again (the queue recognizes the same revision).
type OperationFound struct {
	Company, Account, SID string
	ConversationID        string
	MessageID, EventID    string
	Operation             *operations.Operation
	Raw                   json.RawMessage // the operation object as sent
}

// Config configures a Manager. Engine and Store are required. Store is *vault.State in the app
// (a store.Transcripts, so transcripts are kept), or store.NewMemoryConversations in tests.
type Config struct {
	Engine *engine.Engine
	Store  store.Conversations
	Now    func() time.Time
	Logger *slog.Logger
	// Sleep waits between retries and reconnects (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Context returns the user's current context (locale, time_zone, user_available) from the
	// settings and presence; it is sent only when it changes (spec 8.4). Nil: none.
	Context func() map[string]any
	// OnUpdate receives every change (never blocking for long).
	OnUpdate func(Update)
	// OnOperation receives operations in Company messages (the approval queue).
	OnOperation func(ctx context.Context, f OperationFound)
	// NewMessageID makes message IDs (nil: "msg_" and 128 random bits, base64url).
	NewMessageID func() string
}

// Manager runs the conversations of one Poppydesk. Safe for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger
	// es is cfg.Store when it is a store.Transcripts; nil: transcripts of this run only.
	es store.Transcripts

	mu    sync.Mutex
	convs map[string]*conv // company \x00 id
	subs  map[chan struct{}]struct{}
}

// state is the Manager's JSON in the State of a store.Conversation.
type state struct {
	Endpoint    string         `json:"endpoint"`
	Parent      string         `json:"parent,omitempty"`
	Direct      bool           `json:"direct,omitempty"`
	Status      string         `json:"status"`
	Responder   string         `json:"responder"`
	UsedAccount string         `json:"used_account,omitempty"`
	Context     map[string]any `json:"context,omitempty"`
	Pending     []outgoing     `json:"pending,omitempty"`
	Handled     []string       `json:"handled,omitempty"`
	Invites     []Invite       `json:"invites,omitempty"`
	Auth        *AuthNeed      `json:"auth,omitempty"`
	DirectOpen  string         `json:"direct_open,omitempty"`
	Title       string         `json:"title,omitempty"`
	// Start records (ID "start.<message id>"): the conversation it started, once known.
	Started string `json:"started,omitempty"`
}

// outgoing is a message persisted before it is sent (spec 8.3): a retry sends the same bytes.
type outgoing struct {
	ID   string          `json:"id"`
	Body json.RawMessage `json:"body"`
}

// Invite is a user_requested event waiting for the user's answer in the window (spec 8.10).
type Invite struct {
	EventID string    `json:"event_id"`
	Reason  string    `json:"reason"` // Company content
	At      time.Time `json:"at"`
}

// AuthNeed is one authorization need of a conversation (spec 8.11).
type AuthNeed struct {
	Scopes  []string  `json:"scopes"`
	EventID string    `json:"event_id,omitempty"`
	At      time.Time `json:"at"`
}

type conv struct {
	mu      sync.Mutex // serializes requests and handling of one conversation
	company string
	id      string
	account string
	cursor  string
	st      state
	handled map[string]bool
	// entries is the transcript of this run when the Store keeps no transcripts.
	entries []Entry
	// With transcripts in the Store: unsaved are entries handled but not yet saved (they are
	// saved with the cursor that covers them, spec 8.5); stored is how many the Store holds, once
	// storedKnown (read lazily: a restart loads no transcript until the window or a tool reads it).
	unsaved     []Entry
	stored      int
	storedKnown bool
	deltas      map[string]*deltaText
	deltaSeq    uint64 // order of the messages in deltas (the oldest is dropped first)
	updated     time.Time
}

// deltaText is the text so far of one message being written (spec 8.6). The builder appends
// each piece without copying the text before it, and its String shares the bytes, so reporting
// the text so far after each piece costs the piece, not the whole text.
type deltaText struct {
	b    strings.Builder
	seq  uint64
	full bool // maxDeltaText reached: later pieces are ignored until the full message arrives
}

// addDelta adds a text-delta piece (the caller holds c.mu) and returns the text so far; ok is
// false when the piece was ignored (the message's text would pass maxDeltaText), capped true
// for the first piece ignored. A new message past
// maxDeltaMessages drops the pieces of the oldest one being written.
func (c *conv) addDelta(messageID, piece string) (text string, ok, capped bool, dropped string) {
	d := c.deltas[messageID]
	if d == nil {
		if len(c.deltas) >= maxDeltaMessages {
			var oldest *deltaText
			for id, o := range c.deltas {
				if oldest == nil || o.seq < oldest.seq {
					oldest, dropped = o, id
				}
			}
			delete(c.deltas, dropped)
		}
		if c.deltas == nil {
			c.deltas = map[string]*deltaText{}
		}
		c.deltaSeq++
		d = &deltaText{seq: c.deltaSeq}
		c.deltas[messageID] = d
	}
	if d.full {
		return "", false, false, dropped
	}
	if d.b.Len()+len(piece) > maxDeltaText {
		d.full = true
		return "", false, true, dropped
	}
	d.b.WriteString(piece)
	return d.b.String(), true, false, dropped
}

const startPrefix = "start."

// New returns a Manager. It does no I/O; call Resume at start.
func New(cfg Config) (*Manager, error) {
	if cfg.Engine == nil || cfg.Store == nil {
		return nil, errors.New("conversation: Config needs Engine (agentcore/engine) and Store (the state database)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = cfg.Engine.Logger()
	}
	if cfg.Sleep == nil {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if cfg.NewMessageID == nil {
		cfg.NewMessageID = func() string {
			var b [16]byte
			rand.Read(b[:])
			return "msg_" + base64.RawURLEncoding.EncodeToString(b[:])
		}
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, convs: map[string]*conv{}, subs: map[chan struct{}]struct{}{}}
	m.es, _ = cfg.Store.(store.Transcripts)
	return m, nil
}

func (m *Manager) emit(u Update) {
	m.mu.Lock()
	for ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	m.mu.Unlock()
	if m.cfg.OnUpdate != nil {
		m.cfg.OnUpdate(u)
	}
}

func (m *Manager) subscribe() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() { m.mu.Lock(); delete(m.subs, ch); m.mu.Unlock() }
}

// ---- errors ----

// Error is a conversation failure with the spec's words: the Company's *transport.ProtocolError
// (spec 8.13) when it refused, and what Poppydesk did about it.
type Error struct {
	Op, Company, ConversationID string
	// Code is the spec 8.13 (or spec 7) error code, or a Poppydesk code: "ownership",
	// "sign_in_needed", "no_endpoint", "not_found".
	Code string
	// DirectConversationID is the open Direct Conversation (direct_conversation_open).
	DirectConversationID string
	Scopes               []string
	Msg                  string
	Err                  error
}

func (e *Error) Error() string {
	s := "conversation: " + e.Op
	if e.ConversationID != "" {
		s += " " + e.ConversationID
	}
	s += " at " + e.Company + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// explain turns a Company refusal into an *Error that says what happened and what to do.
func explain(op, company, id string, err error) error {
	var pe *transport.ProtocolError
	if !errors.As(err, &pe) {
		return &Error{Op: op, Company: company, ConversationID: id, Code: "network", Msg: "the Company could not be reached or did not answer; nothing is lost, try again", Err: err}
	}
	e := &Error{Op: op, Company: company, ConversationID: id, Code: pe.Code, Err: err, Scopes: pe.Scopes}
	switch {
	case pe.NeedsScopes():
		e.Code = "sign_in_needed"
		e.Msg = fmt.Sprintf("the Company needs the user's account (scopes %q) for this conversation; the message was not accepted and is kept to send after the user signs in in Poppydesk (spec 8.11)", strings.Join(pe.Scopes, " "))
	case pe.Code == transport.CodeConversationNotFound:
		e.Msg = "the Company does not know this conversation for this Personal Agent, user and account (spec 8.2, 8.13); start a new one"
	case pe.Code == transport.CodeConversationClosed:
		e.Msg = "the conversation is closed and takes no more messages (spec 8.12, 8.13); start a new one"
	case pe.Code == transport.CodeDirectConversationOpen:
		e.DirectConversationID = pe.ConversationID
		e.Msg = fmt.Sprintf("a Direct Conversation (%s) is open, so the parent takes no messages or handoff until it closes (spec 8.10, 8.13)", pe.ConversationID)
	case pe.Code == transport.CodeMessageIDConflict:
		e.Msg = "the Company already accepted a different message with this message ID (spec 8.3, 8.13); Poppydesk never sends a silent duplicate, so this message was NOT sent. Send it again as a new message"
	case pe.Code == transport.CodeInvalidCursor:
		e.Msg = "the Company does not know the saved cursor (spec 8.13)"
	case pe.Code == transport.CodeCursorExpired:
		e.Msg = "the Company no longer has the events at the saved cursor (spec 8.5)"
	case pe.Code == transport.CodeInvalidRequest:
		e.Msg = "the Company says the request is malformed (spec 8.13); this is a Poppydesk or Company bug, report it with the inspector's exchange"
	case pe.Code == transport.CodeExtensionRequired:
		e.Msg = fmt.Sprintf("the Company requires extension %q for conversations, which this Session does not use (spec 3.3, 8.13)", pe.Extension)
	default:
		e.Msg = "the Company refused the request"
	}
	return e
}

// ---- loading and saving ----

func key(company, id string) string { return company + "\x00" + id }

func (m *Manager) load(ctx context.Context, company, id string) (*conv, error) {
	m.mu.Lock()
	c := m.convs[key(company, id)]
	m.mu.Unlock()
	if c != nil {
		return c, nil
	}
	rec, err := m.cfg.Store.GetConversation(ctx, company, id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Op: "open", Company: company, ConversationID: id, Code: "not_found", Msg: "Poppydesk has no conversation with this ID at this Company; list the conversations or start one", Err: err}
		}
		return nil, fmt.Errorf("conversation: reading conversation %s from the state database: %w", id, err)
	}
	c = &conv{company: company, id: id, account: rec.Account, cursor: rec.Cursor, handled: map[string]bool{}, deltas: map[string]*deltaText{}, updated: rec.Updated}
	if err := json.Unmarshal([]byte(rec.State), &c.st); err != nil {
		return nil, fmt.Errorf("conversation: the stored state of conversation %s is unreadable: %w", id, err)
	}
	for _, h := range c.st.Handled {
		c.handled[h] = true
	}
	m.mu.Lock()
	if old := m.convs[key(company, id)]; old != nil {
		c = old
	} else if !m.done(c) {
		m.convs[key(company, id)] = c
	}
	m.mu.Unlock()
	return c, nil
}

// save writes c durably (the caller holds c.mu): with transcripts in the Store, the entries
// handled since the last save go in the same transaction as the cursor and handled IDs that cover
// them, so after a crash the transcript and the cursor agree (spec 8.5); on failure they stay
// unsaved and go with the next save. The write must land even when the caller's context ended.
func (m *Manager) save(ctx context.Context, c *conv) error {
	c.updated = m.cfg.Now()
	b, err := json.Marshal(c.st)
	if err != nil {
		return err
	}
	rec := store.Conversation{Company: c.company, ID: c.id, Account: c.account, Cursor: c.cursor, State: string(b), Updated: c.updated}
	ctx = context.WithoutCancel(ctx)
	if m.es == nil || len(c.unsaved) == 0 {
		if err := m.cfg.Store.PutConversation(ctx, rec); err != nil {
			return fmt.Errorf("conversation: saving conversation %s failed: %w", c.id, err)
		}
		m.dropIfDone(c)
		return nil
	}
	recs := make([]store.ConversationEntry, 0, len(c.unsaved))
	for _, e := range c.unsaved {
		eb, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("conversation: encoding transcript entry %s of conversation %s: %w", e.EventID, c.id, err)
		}
		recs = append(recs, store.ConversationEntry{EventID: e.EventID, Entry: string(eb)})
	}
	n, err := m.es.SaveConversation(ctx, rec, recs)
	if err != nil {
		return fmt.Errorf("conversation: saving conversation %s and %d transcript entries failed: %w", c.id, len(recs), err)
	}
	c.unsaved, c.stored, c.storedKnown = nil, n, true
	m.dropIfDone(c)
	return nil
}

// dropIfDone lets go of a closed conversation once everything of it is saved (the caller holds
// c.mu): a closed conversation takes no more messages (spec 8.12), and when the Store keeps
// transcripts, reading it again loads it from there (load does not keep it either). So the
// Manager holds only the conversations that can still change, however many a long run closed.
func (m *Manager) dropIfDone(c *conv) {
	if !m.done(c) {
		return
	}
	m.mu.Lock()
	if m.convs[key(c.company, c.id)] == c {
		delete(m.convs, key(c.company, c.id))
	}
	m.mu.Unlock()
}

// done reports whether c is closed with nothing of it left to save or send, and the Store keeps
// its transcript.
func (m *Manager) done(c *conv) bool {
	return m.es != nil && NormalizeStatus(c.st.Status) == StatusClosed && len(c.unsaved) == 0 && len(c.st.Pending) == 0 && len(c.deltas) == 0
}

// count returns the length of c's transcript (the caller holds c.mu). With transcripts in the
// Store the stored count is read once (one index seek), then kept by save.
func (m *Manager) count(ctx context.Context, c *conv) (int, error) {
	if m.es == nil {
		return len(c.entries), nil
	}
	if !c.storedKnown {
		_, n, err := m.es.ConversationEntries(ctx, c.company, c.id, 0, 0)
		if err != nil {
			return 0, fmt.Errorf("conversation: reading the transcript length of conversation %s from the state database: %w", c.id, err)
		}
		c.stored, c.storedKnown = n, true
	}
	return c.stored + len(c.unsaved), nil
}

// entriesRange returns entries [from, from+limit) of c's transcript and its length (the caller
// holds c.mu): stored entries are read by range from the Store, the unsaved ones follow.
func (m *Manager) entriesRange(ctx context.Context, c *conv, from, limit int) ([]Entry, int, error) {
	n, err := m.count(ctx, c)
	if err != nil {
		return nil, 0, err
	}
	from = max(0, min(from, n))
	end := min(n, from+max(limit, 0))
	if m.es == nil {
		return append([]Entry(nil), c.entries[from:end]...), n, nil
	}
	out := make([]Entry, 0, end-from)
	if from < c.stored {
		recs, _, err := m.es.ConversationEntries(ctx, c.company, c.id, from, min(end, c.stored)-from)
		if err != nil {
			return nil, 0, fmt.Errorf("conversation: reading the transcript of conversation %s from the state database: %w", c.id, err)
		}
		for _, r := range recs {
			var e Entry
			if err := json.Unmarshal([]byte(r.Entry), &e); err != nil {
				return nil, 0, fmt.Errorf("conversation: the stored transcript entry %s of conversation %s is unreadable (move the state database aside to start fresh): %w", r.EventID, c.id, err)
			}
			out = append(out, e)
		}
	}
	for i := max(from, c.stored); i < end; i++ {
		out = append(out, c.unsaved[i-c.stored])
	}
	return out, n, nil
}

func (c *conv) markHandled(id string) {
	if c.handled[id] {
		return
	}
	c.handled[id] = true
	c.st.Handled = append(c.st.Handled, id)
	if n := len(c.st.Handled); n > maxHandled {
		for _, old := range c.st.Handled[:n-maxHandled] {
			delete(c.handled, old)
		}
		c.st.Handled = append([]string(nil), c.st.Handled[n-maxHandled:]...)
	}
}

// ---- the Company's endpoint and clients ----

// usesOperations reports whether the Session declares Operations v2 (the engine declares it
// exactly when the Company lists version "2"): extension content is sent and read only then
// (spec 8.4, Operations 2).
func usesOperations(co *discovery.Company) bool {
	for _, e := range co.Extensions["operations"] {
		if e.Version == "2" {
			return true
		}
	}
	return false
}

// client returns the engine client for the conversation's account, refusing what 8.2 forbids:
// a conversation that used account A is continued only signed in to A.
func (m *Manager) client(ctx context.Context, c *conv, op string) (*engine.Client, error) {
	if c.st.UsedAccount != "" && c.account != c.st.UsedAccount {
		return nil, &Error{Op: op, Company: c.company, ConversationID: c.id, Code: "ownership",
			Msg: fmt.Sprintf("this conversation used account %q, so it continues only signed in to that account, never signed out or with account %q (spec 8.2)", c.st.UsedAccount, c.account)}
	}
	cl, err := m.cfg.Engine.Client(ctx, c.company, c.account)
	if err != nil {
		return nil, fmt.Errorf("conversation: opening a Session with %s: %w", c.company, err)
	}
	return cl, nil
}

// noteToken records that a request carried the account's token (the conversation now uses the
// account, spec 8.2, 8.11). The caller holds c.mu.
func (c *conv) noteToken(resp *transport.Response) bool {
	if resp != nil && resp.AccessToken != "" && c.account != "" && c.st.UsedAccount == "" {
		c.st.UsedAccount = c.account
		return true
	}
	return false
}

func withQuery(u string, q url.Values) string {
	if len(q) == 0 {
		return u
	}
	return u + "?" + q.Encode()
}

func waitSeconds(d time.Duration) string {
	return strconv.Itoa(int(min(d, MaxWait) / time.Second))
}

// ---- starting and sending ----

// Start is a request to start a conversation (spec 8.3) or a Direct Conversation (8.10).
type Start struct {
	Company string
	Account string // "" signed out
	// Message: Text and/or Data; AuthorType is AuthorAgent unless the user typed it in the window.
	Text       string
	Data       json.RawMessage
	AuthorType string
	// Parent starts a Direct Conversation linked to it (spec 8.10); the user's words, AuthorHuman.
	Parent string
	// Wait asks for the Company's reply in the same response (spec 8.3).
	Wait time.Duration
}

// View is a conversation as the window and the model see it.
type View struct {
	Company        string    `json:"company"`
	ConversationID string    `json:"conversation_id"`
	Account        string    `json:"account"`
	Parent         string    `json:"parent,omitempty"`
	Direct         bool      `json:"direct,omitempty"`
	Status         string    `json:"status"`
	Responder      string    `json:"responder"`
	RawStatus      string    `json:"raw_status,omitempty"`
	RawResponder   string    `json:"raw_responder,omitempty"`
	Title          string    `json:"title,omitempty"`
	Pending        int       `json:"pending"`
	Auth           *AuthNeed `json:"auth,omitempty"`
	Invites        []Invite  `json:"invites,omitempty"`
	DirectOpen     string    `json:"direct_open,omitempty"`
	UsedAccount    string    `json:"used_account,omitempty"`
	Updated        time.Time `json:"updated"`
	// New are the entries handled by the call that returned this View.
	New []Entry `json:"new,omitempty"`
	// Writing is the text so far of messages being written (spec 8.6), by message ID.
	Writing map[string]string `json:"writing,omitempty"`
}

func (c *conv) view() *View {
	v := &View{Company: c.company, ConversationID: c.id, Account: c.account, Parent: c.st.Parent, Direct: c.st.Direct,
		Status: NormalizeStatus(c.st.Status), Responder: NormalizeResponder(c.st.Responder), Title: c.st.Title,
		Pending: len(c.st.Pending), Auth: c.st.Auth, Invites: append([]Invite(nil), c.st.Invites...), DirectOpen: c.st.DirectOpen,
		UsedAccount: c.st.UsedAccount, Updated: c.updated}
	if v.Status != c.st.Status {
		v.RawStatus = c.st.Status
	}
	if v.Responder != c.st.Responder {
		v.RawResponder = c.st.Responder
	}
	if len(c.deltas) > 0 {
		v.Writing = make(map[string]string, len(c.deltas))
		for id, d := range c.deltas {
			v.Writing[id] = d.b.String()
		}
	}
	return v
}

// context returns the context fields that changed since the last message that carried them
// (spec 8.4: fields left out keep their values; send only what changed).
func (m *Manager) contextDiff(st *state) map[string]any {
	if m.cfg.Context == nil {
		return nil
	}
	now := m.cfg.Context()
	diff := map[string]any{}
	for k, v := range now {
		old, ok := st.Context[k]
		if !ok || fmt.Sprint(old) != fmt.Sprint(v) {
			diff[k] = v
		}
	}
	if len(diff) == 0 {
		return nil
	}
	return diff
}

func (m *Manager) newMessage(st *state, text string, data json.RawMessage, authorType string, ext json.RawMessage) (Message, error) {
	if authorType == "" {
		authorType = AuthorAgent
	}
	if authorType != AuthorAgent && authorType != AuthorHuman {
		return Message{}, fmt.Errorf("conversation: author type %q is not agent or human (spec 8.8)", authorType)
	}
	if len(data) > 0 {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return Message{}, errors.New("conversation: data must be a JSON object (spec 8.4)")
		}
	}
	msg := Message{ID: m.cfg.NewMessageID(), Author: Author{Type: authorType}, Text: text, Data: data, Extensions: ext,
		Context: m.contextDiff(st)}
	if msg.Text == "" && len(msg.Data) == 0 && len(msg.Context) == 0 && len(msg.Extensions) == 0 {
		return Message{}, errors.New("conversation: a message needs text, data, context or extensions (spec 8.4); nothing was sent")
	}
	if !ValidID(msg.ID) {
		return Message{}, fmt.Errorf("conversation: the message ID %q does not have the characters of spec 8.2", msg.ID)
	}
	return msg, nil
}

// Start starts a conversation with its first message (spec 8.3), or a Direct Conversation with
// Parent (8.10). The message is persisted BEFORE it is sent; a failure to reach the Company
// sends the same ID and content again; after a restart, Resume does.
func (m *Manager) Start(ctx context.Context, s Start) (*View, error) {
	co, err := m.cfg.Engine.Company(ctx, s.Company)
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	ep, ok := co.AgentEndpoint() // spec 8.1
	if !ok {
		return nil, &Error{Op: "start", Company: co.Identifier, Code: "no_endpoint", Msg: "the Company lists no conversation protocol of type poppy in agent.protocols (spec 8.1), so Poppydesk cannot talk with its agent"}
	}
	if s.Parent != "" && !ValidID(s.Parent) {
		return nil, fmt.Errorf("conversation: the parent ID %q does not have the characters of spec 8.2", s.Parent)
	}
	st := state{Endpoint: ep, Parent: s.Parent, Direct: s.Parent != "", Status: StatusWorking, Responder: ResponderAgent}
	msg, err := m.newMessage(&st, s.Text, s.Data, s.AuthorType, nil)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"message": msg}
	if s.Parent != "" {
		body["parent_conversation_id"] = s.Parent
	}
	return m.startWith(ctx, co.Identifier, s.Account, st, msg, body, s.Wait)
}

func (m *Manager) startWith(ctx context.Context, company, account string, st state, msg Message, body map[string]any, wait time.Duration) (*View, error) {
	raw, _ := json.Marshal(body)
	st.Pending = []outgoing{{ID: msg.ID, Body: raw}}
	st.Title = firstLine(msg.Text)
	maps.Copy(ensure(&st.Context), msg.Context)
	sc := &conv{company: company, id: startPrefix + msg.ID, account: account, st: st, handled: map[string]bool{}, deltas: map[string]*deltaText{}}
	if msg.ID == "" {
		sc.id = startPrefix + m.cfg.NewMessageID()
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if err := m.save(ctx, sc); err != nil {
		return nil, fmt.Errorf("%w; the conversation was not started", err)
	}
	return m.sendStart(ctx, sc, wait)
}

func ensure(m *map[string]any) map[string]any {
	if *m == nil {
		*m = map[string]any{}
	}
	return *m
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// sendStart sends a persisted start (the caller holds sc.mu).
func (m *Manager) sendStart(ctx context.Context, sc *conv, wait time.Duration) (*View, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", waitSeconds(wait))
	}
	cl, err := m.client(ctx, sc, "start")
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, cl, withQuery(sc.st.Endpoint, q), sc.st.Pending[0].Body)
	if err != nil {
		return nil, m.refused(ctx, sc, "start", err)
	}
	defer resp.Body.Close()
	var rr readResponse
	if err := decodeBody(resp, &rr); err != nil || !ValidID(rr.ConversationID) {
		if err == nil {
			err = fmt.Errorf("conversation_id %q is not an ID of spec 8.2", rr.ConversationID)
		}
		// The message may have been accepted: keep it pending; a retry with the same ID returns
		// the conversation the Company already started (spec 8.3).
		return nil, &Error{Op: "start", Company: sc.company, Code: "bad_response", Msg: "the Company's answer to the first message is not a conversation (spec 8.3); the message is kept and will be sent again with the same ID", Err: err}
	}
	c := &conv{company: sc.company, id: rr.ConversationID, account: sc.account, st: sc.st, handled: map[string]bool{}, deltas: map[string]*deltaText{}}
	c.st.Pending = nil
	c.noteToken(resp)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.mu.Lock()
	old := m.convs[key(c.company, c.id)]
	if old == nil {
		m.convs[key(c.company, c.id)] = c
	}
	m.mu.Unlock()
	v, err := m.apply(ctx, c, cl, resp, &rr)
	if old != nil && old != c {
		// The Company returned a conversation already loaded (a start sent again): its stored
		// transcript length is read again when next asked for.
		old.mu.Lock()
		old.storedKnown = false
		old.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	sc.st.Pending, sc.st.Started = nil, c.id
	if err := m.save(ctx, sc); err != nil {
		m.log.WarnContext(ctx, "conversation: could not mark the start as done", "company", c.company, "conversation", c.id, "err", err)
	}
	if c.st.Direct {
		if p, err := m.load(ctx, c.company, c.st.Parent); err == nil && p != c {
			p.mu.Lock()
			p.st.DirectOpen = c.id
			_ = m.save(ctx, p)
			p.mu.Unlock()
		}
	}
	m.emit(Update{Kind: UpdateStarted, Company: c.company, ConversationID: c.id, Status: v.Status, Responder: v.Responder})
	return v, nil
}

// refused handles an error answer to a POST of a persisted message: an authorization need keeps
// the message to send after sign-in; a refusal by the Company drops it; a network failure keeps
// it (the caller holds c.mu).
func (m *Manager) refused(ctx context.Context, c *conv, op string, err error) error {
	e := explain(op, c.company, strings.TrimPrefix(c.id, startPrefix), err)
	var ce *Error
	if errors.As(e, &ce) && ce.Code != "network" {
		if ce.Code == "sign_in_needed" {
			m.needAuth(ctx, c, ce.Scopes, "")
		} else {
			c.st.Pending = nil
		}
		if serr := m.save(ctx, c); serr != nil {
			return errors.Join(e, serr)
		}
	}
	return e
}

// post sends a POST of a persisted body, again with the same bytes after a network failure.
func (m *Manager) post(ctx context.Context, cl *engine.Client, u string, body []byte) (*transport.Response, error) {
	var last error
	for i := 0; i < sendAttempts; i++ {
		resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodPost, URL: u, Body: body,
			Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}})
		if err == nil {
			return resp, nil
		}
		last = err
		var pe *transport.ProtocolError
		if errors.As(err, &pe) && pe.Status < 500 || ctx.Err() != nil {
			return nil, err
		}
		m.log.InfoContext(ctx, "conversation: sending failed; sending the same message again", "attempt", i+1, "err", err)
		if err := m.cfg.Sleep(ctx, time.Duration(i+1)*200*time.Millisecond); err != nil {
			return nil, last
		}
	}
	return nil, last
}

// Send is a request to send a message in a conversation (spec 8.3).
type Send struct {
	Company, ConversationID string
	Text                    string
	Data                    json.RawMessage
	AuthorType              string
	Wait                    time.Duration
	// extensions is set only by SendApproval (Operations 6).
	extensions json.RawMessage
	messageID  string
	noContext  bool // approval messages: the same content on every retry (spec 8.3)
}

// Send sends a message: persisted BEFORE it is sent, sent again with the same ID and content
// after a network failure, with `wait` and `cursor` to get the reply in the same response.
func (m *Manager) Send(ctx context.Context, s Send) (*View, error) {
	c, err := m.load(ctx, s.Company, s.ConversationID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.st.Pending) > 0 {
		// Earlier messages go first, in order, with their own IDs.
		if _, err := m.flushPending(ctx, c, 0); err != nil {
			return nil, err
		}
	}
	msg, err := m.newMessage(&c.st, s.Text, s.Data, s.AuthorType, s.extensions)
	if err != nil {
		return nil, err
	}
	if s.noContext {
		msg.Context = nil
	}
	if s.messageID != "" {
		msg.ID = s.messageID
	}
	raw, _ := json.Marshal(map[string]any{"message": msg})
	c.st.Pending = append(c.st.Pending, outgoing{ID: msg.ID, Body: raw})
	maps.Copy(ensure(&c.st.Context), msg.Context)
	if err := m.save(ctx, c); err != nil {
		return nil, fmt.Errorf("%w; the message was not sent", err)
	}
	return m.flushPending(ctx, c, s.Wait)
}

// flushPending sends the persisted messages in order (the caller holds c.mu).
func (m *Manager) flushPending(ctx context.Context, c *conv, wait time.Duration) (*View, error) {
	v := c.view()
	var news []Entry
	for len(c.st.Pending) > 0 {
		cl, err := m.client(ctx, c, "send")
		if err != nil {
			return nil, err
		}
		q := url.Values{}
		if wait > 0 && len(c.st.Pending) == 1 {
			q.Set("wait", waitSeconds(wait))
			if c.cursor != "" {
				q.Set("cursor", c.cursor)
			}
		}
		resp, err := m.post(ctx, cl, withQuery(c.st.Endpoint+"/"+url.PathEscape(c.id)+"/messages", q), c.st.Pending[0].Body)
		if err != nil {
			return nil, m.refused(ctx, c, "send", err)
		}
		c.st.Pending = c.st.Pending[1:]
		c.noteToken(resp)
		var rr readResponse
		derr := decodeBody(resp, &rr)
		resp.Body.Close()
		if derr != nil {
			_ = m.save(ctx, c)
			return nil, &Error{Op: "send", Company: c.company, ConversationID: c.id, Code: "bad_response", Msg: "the Company accepted the message but its answer is not JSON (spec 8.3)", Err: derr}
		}
		v, err = m.apply(ctx, c, cl, resp, &rr)
		if err != nil {
			return nil, err
		}
		news = append(news, v.New...)
	}
	v.New = news
	return v, nil
}

// SendApproval sends the user's approval in a conversation (Operations 6, "Conversations"): a
// message with extensions.operations.approval. messageID is chosen by the caller (the approval
// queue derives it from the approval), so every retry of one approval is the same message. The
// text approves nothing (Operations 6). Only agentcore/approvals calls it, after the user's
// decision in the window.
func (m *Manager) SendApproval(ctx context.Context, company, conversationID, messageID string, a operations.Approval, wait time.Duration) (*View, error) {
	co, err := m.cfg.Engine.Company(ctx, company)
	if err != nil {
		return nil, err
	}
	if !usesOperations(co) {
		return nil, &Error{Op: "approve", Company: company, ConversationID: conversationID, Code: "extension_required",
			Msg: "the Company does not list the operations extension version 2, so no approval can be sent in its conversations (Operations 2, spec 8.4)"}
	}
	ext, err := operations.ApprovalExtensions(a)
	if err != nil {
		return nil, err
	}
	c, err := m.load(ctx, company, conversationID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, p := range c.st.Pending {
		if p.ID == messageID { // persisted earlier, not yet accepted: send that same message
			defer c.mu.Unlock()
			return m.flushPending(ctx, c, wait)
		}
	}
	c.mu.Unlock()
	return m.Send(ctx, Send{Company: company, ConversationID: conversationID, Text: "The user approved the operation in Poppydesk.",
		AuthorType: AuthorAgent, Wait: wait, extensions: ext, messageID: messageID, noContext: true})
}

func decodeBody(resp *transport.Response, v any) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReadBody))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("empty body")
	}
	return json.Unmarshal(b, v)
}

// apply handles a read response (events in order, the cursor saved after them) and the status
// in it (the caller holds c.mu).
func (m *Manager) apply(ctx context.Context, c *conv, cl *engine.Client, resp *transport.Response, rr *readResponse) (*View, error) {
	var news []Entry
	declares := usesOperations(cl.Company())
	for _, raw := range rr.Events {
		if e, ok := m.handle(ctx, c, cl, raw, declares); ok {
			news = append(news, e)
		}
	}
	if rr.Cursor != nil && *rr.Cursor != "" && len(rr.Events) > 0 {
		c.cursor = *rr.Cursor
	}
	changed := false
	if rr.Status != "" && (rr.Status != c.st.Status || rr.Responder != c.st.Responder) {
		c.st.Status, c.st.Responder, changed = rr.Status, rr.Responder, true
	}
	if resp != nil {
		m.challengeOnSuccess(ctx, c, resp)
	}
	if err := m.save(ctx, c); err != nil {
		return nil, err
	}
	if changed {
		m.emit(Update{Kind: UpdateState, Company: c.company, ConversationID: c.id, Status: NormalizeStatus(c.st.Status), Responder: NormalizeResponder(c.st.Responder)})
	}
	v := c.view()
	v.New = news
	return v, nil
}

// challengeOnSuccess: a WWW-Authenticate challenge on a successful response is the same
// authorization need as the event (spec 8.11); the accepted message is never sent again.
func (m *Manager) challengeOnSuccess(ctx context.Context, c *conv, resp *transport.Response) {
	vals := resp.Header.Values("WWW-Authenticate")
	if len(vals) == 0 {
		return
	}
	cs, _ := transport.ParseChallenges(vals)
	for _, ch := range cs {
		if ch.Param("error") == transport.CodeInsufficientScope || ch.Param("scope") != "" {
			m.needAuth(ctx, c, strings.Fields(ch.Param("scope")), "")
			return
		}
	}
}

// needAuth records one authorization need (spec 8.11); the same scopes again are the same need.
func (m *Manager) needAuth(_ context.Context, c *conv, scopes []string, eventID string) {
	if a := c.st.Auth; a != nil && sameSet(a.Scopes, scopes) {
		if a.EventID == "" {
			a.EventID = eventID
		}
		return
	}
	c.st.Auth = &AuthNeed{Scopes: scopes, EventID: eventID, At: m.cfg.Now()}
	m.emit(Update{Kind: UpdateAuthorization, Company: c.company, ConversationID: strings.TrimPrefix(c.id, startPrefix), Scopes: scopes})
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}

// handle handles one event in order (spec 8.5): a repeated ID is skipped, an unknown type is
// skipped (and counts as handled), a known one updates the conversation. It returns the entry
// for known types (the caller holds c.mu).
func (m *Manager) handle(ctx context.Context, c *conv, cl *engine.Client, raw json.RawMessage, declares bool) (Entry, bool) {
	var ev wireEvent
	if err := json.Unmarshal(raw, &ev); err != nil || !ValidID(ev.ID) {
		m.log.WarnContext(ctx, "conversation: skipped an event without a valid id (spec 8.5)", "company", c.company, "conversation", c.id)
		return Entry{}, false
	}
	if c.handled[ev.ID] {
		return Entry{}, false
	}
	c.markHandled(ev.ID)
	c.cursor = ev.ID
	at, _ := time.Parse(time.RFC3339, ev.CreatedAt)
	e := Entry{EventID: ev.ID, Type: ev.Type, CreatedAt: at}
	switch ev.Type {
	case EventMessage:
		var msg Message
		if err := json.Unmarshal(ev.Message, &msg); err != nil || msg.ID == "" {
			m.log.WarnContext(ctx, "conversation: skipped a malformed message event", "company", c.company, "conversation", c.id, "event", ev.ID)
			return Entry{}, false
		}
		a := msg.Author
		if a.Type != AuthorAgent {
			a.Type = AuthorHuman // spec 8.7: a Company message must say; anything else is shown as a person
		}
		e.MessageID, e.Role, e.Author, e.Text, e.Data = msg.ID, msg.Role, &a, msg.Text, msg.Data
		delete(c.deltas, msg.ID) // the full message replaces its pieces (spec 8.6)
		if msg.Role == "company" && declares {
			e.Extensions = msg.Extensions
			if op, ok, err := operations.FromMessage(ev.Message); ok {
				if err != nil {
					m.log.WarnContext(ctx, "conversation: a Company message carries a malformed operation; it is not offered for approval (Operations 3)", "company", c.company, "conversation", c.id, "err", err)
				} else {
					e.OperationID, e.Revision = op.OperationID, op.Revision
					if m.cfg.OnOperation != nil {
						var env struct {
							Extensions struct {
								Operations struct {
									Operation json.RawMessage `json:"operation"`
								} `json:"operations"`
							} `json:"extensions"`
						}
						json.Unmarshal(ev.Message, &env)
						m.cfg.OnOperation(ctx, OperationFound{Company: c.company, Account: c.account, SID: cl.SID(), ConversationID: c.id,
							MessageID: msg.ID, EventID: ev.ID, Operation: op, Raw: env.Extensions.Operations.Operation})
					}
				}
			}
		}
	case EventState:
		e.Status, e.Responder = NormalizeStatus(ev.Status), NormalizeResponder(ev.Responder)
		if e.Status != ev.Status {
			e.RawStatus = ev.Status
		}
		if e.Responder != ev.Responder {
			e.RawResponder = ev.Responder
		}
		c.st.Status, c.st.Responder = ev.Status, ev.Responder
	case EventAuthorization:
		e.Error, e.Scope = ev.Error, ev.Scope
		m.needAuth(ctx, c, strings.Fields(ev.Scope), ev.ID)
	case EventUserRequested:
		e.Reason = ev.Reason
		c.st.Invites = append(c.st.Invites, Invite{EventID: ev.ID, Reason: ev.Reason, At: at})
		if n := len(c.st.Invites); n > maxInvites {
			m.log.WarnContext(ctx, "conversation: too many unanswered user_requested events; the oldest are dropped (spec 8.10)",
				"company", c.company, "conversation", c.id, "dropped", n-maxInvites, "kept", maxInvites)
			c.st.Invites = append([]Invite(nil), c.st.Invites[n-maxInvites:]...)
		}
	case EventDirectOpened:
		e.ConversationID = ev.ConversationID
		c.st.DirectOpen = ev.ConversationID
	case EventDirectClosed:
		e.ConversationID = ev.ConversationID
		if c.st.DirectOpen == ev.ConversationID {
			c.st.DirectOpen = ""
		}
	default:
		return Entry{}, false // spec 8.5: skip types Poppydesk doesn't recognize
	}
	if m.es != nil {
		c.unsaved = append(c.unsaved, e) // saved with the cursor that covers it (save)
	} else {
		c.entries = append(c.entries, e)
		if len(c.entries) > maxEntries {
			c.entries = append([]Entry(nil), c.entries[len(c.entries)-maxEntries:]...)
		}
	}
	m.emit(Update{Kind: UpdateEntry, Company: c.company, ConversationID: c.id, Entry: &e})
	if ev.Type == EventUserRequested {
		m.emit(Update{Kind: UpdateUserRequested, Company: c.company, ConversationID: c.id, Entry: &e})
	}
	return e, true
}

// ---- reading ----

// Read reads the events after the saved cursor (spec 8.5), holding up to wait for the first,
// reading again at once while has_more, from the beginning after cursor_expired.
func (m *Manager) Read(ctx context.Context, company, id string, wait time.Duration) (*View, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var news []Entry
	var v *View
	for {
		cl, err := m.client(ctx, c, "read")
		if err != nil {
			return nil, err
		}
		q := url.Values{}
		if c.cursor != "" {
			q.Set("cursor", c.cursor)
		}
		if wait > 0 {
			q.Set("wait", waitSeconds(wait))
		}
		resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: withQuery(c.st.Endpoint+"/"+url.PathEscape(c.id)+"/events", q),
			Header: http.Header{"Accept": {"application/json"}}})
		if err != nil {
			if transport.IsCode(err, transport.CodeCursorExpired) && c.cursor != "" {
				// spec 8.5: read from the beginning; IDs already handled are skipped.
				m.log.InfoContext(ctx, "conversation: the cursor expired; reading from the beginning (spec 8.5)", "company", company, "conversation", id)
				c.cursor = ""
				continue
			}
			e := explain("read", company, id, err)
			var ce *Error
			if errors.As(e, &ce) && ce.Code == "sign_in_needed" {
				m.needAuth(ctx, c, ce.Scopes, "")
				_ = m.save(ctx, c)
			}
			return nil, e
		}
		c.noteToken(resp)
		var rr readResponse
		derr := decodeBody(resp, &rr)
		resp.Body.Close()
		if derr != nil {
			return nil, &Error{Op: "read", Company: company, ConversationID: id, Code: "bad_response", Msg: "the Company's read is not the JSON of spec 8.5", Err: derr}
		}
		if v, err = m.apply(ctx, c, cl, resp, &rr); err != nil {
			return nil, err
		}
		news = append(news, v.New...)
		if !rr.HasMore {
			break
		}
		wait = 0
	}
	v.New = news
	return v, nil
}

// Stream follows a conversation with server-sent events (spec 8.6) until ctx ends or the
// conversation is closed: each event is handled in order and the cursor saved after it (batched
// while more bytes are already buffered); text-delta pieces are reported as they arrive and
// replaced by the full message; when the stream ends (the Company MAY close it at any time) it
// reconnects with Last-Event-ID and drops the pieces of messages not received in full. A Company
// that answers JSON is read the same way (8.5).
func (m *Manager) Stream(ctx context.Context, company, id string) error {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return err
	}
	failures := 0
	// retry is the reconnection time (spec 8.6, WHATWG SSE): minReconnect until the Company
	// sends a `retry:` field; it stays for later connections, as with an EventSource.
	retry := minReconnect
	for ctx.Err() == nil {
		closed, again, err := m.streamOnce(ctx, c, &retry)
		if closed {
			return nil
		}
		wait := retry
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Code != "network" && ce.Code != "bad_response" {
				return err
			}
			failures++
			if failures > 20 {
				return err
			}
			wait = max(wait, min(time.Duration(failures)*200*time.Millisecond, 5*time.Second))
		} else {
			failures = 0
			if again {
				continue // a JSON read with has_more that handled events: read on at once (spec 8.5)
			}
		}
		// Never reconnect at once after the stream ended (even normally, spec 8.6): a Company
		// that closes every stream at once would otherwise get a tight loop of requests.
		if serr := m.cfg.Sleep(ctx, wait); serr != nil {
			return nil
		}
	}
	return nil
}

// retryWatcher passes an event stream to the SSE parser and notes its `retry:` field: a value
// of ASCII digits only is the reconnection time in milliseconds (WHATWG SSE "retry"); anything
// else is ignored, as the standard says. The lines end in CR, LF or CRLF as in sseReader (an
// extra empty line between CR and LF changes nothing here). It reads no byte the parser doesn't.
type retryWatcher struct {
	r     io.Reader
	line  []byte // the start of the current line (at most 32 bytes: "retry: " and digits)
	long  bool   // the current line is longer than line keeps: not a retry field
	first bool   // the first line, which may start with a BOM
	retry time.Duration
}

func (w *retryWatcher) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n' || b == '\r':
			w.endLine()
		case len(w.line) < 32:
			w.line = append(w.line, b)
		default:
			w.long = true
		}
	}
	return n, err
}

func (w *retryWatcher) endLine() {
	ln := string(w.line)
	if w.first {
		ln, w.first = strings.TrimPrefix(ln, "\uFEFF"), false
	}
	if v, ok := strings.CutPrefix(ln, "retry:"); ok && !w.long {
		v = strings.TrimPrefix(v, " ")
		digits := v != ""
		for i := 0; i < len(v); i++ {
			digits = digits && v[i] >= '0' && v[i] <= '9'
		}
		if digits {
			d := maxReconnect
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms < int64(maxReconnect/time.Millisecond) {
				d = time.Duration(ms) * time.Millisecond
			}
			w.retry = min(max(d, minReconnect), maxReconnect)
		}
	}
	w.line, w.long = w.line[:0], false
}

// streamOnce runs one stream connection. It reports whether the conversation is closed, and
// whether to read again at once (a JSON read with has_more that handled events); a `retry:`
// field of the stream sets *retry.
func (m *Manager) streamOnce(ctx context.Context, c *conv, retry *time.Duration) (closed, again bool, err error) {
	c.mu.Lock()
	cl, err := m.client(ctx, c, "stream")
	if err != nil {
		c.mu.Unlock()
		return false, false, err
	}
	// Pieces of a message not received in full are dropped on (re)connect (spec 8.6).
	if len(c.deltas) > 0 {
		clear(c.deltas)
		c.mu.Unlock()
		m.emit(Update{Kind: UpdateDropDeltas, Company: c.company, ConversationID: c.id})
		c.mu.Lock()
	}
	hdr := http.Header{"Accept": {"text/event-stream"}}
	q := url.Values{}
	if c.cursor != "" {
		hdr.Set("Last-Event-ID", c.cursor)
		q.Set("cursor", c.cursor)
	}
	q.Set("wait", waitSeconds(MaxWait))
	u := withQuery(c.st.Endpoint+"/"+url.PathEscape(c.id)+"/events", q)
	c.mu.Unlock()
	resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: u, Header: hdr})
	if err != nil {
		if transport.IsCode(err, transport.CodeCursorExpired) {
			c.mu.Lock()
			c.cursor = ""
			_ = m.save(ctx, c)
			c.mu.Unlock()
			return false, false, nil
		}
		return false, false, explain("stream", c.company, c.id, err)
	}
	defer resp.Body.Close()
	c.mu.Lock()
	if c.noteToken(resp) {
		_ = m.save(ctx, c)
	}
	c.mu.Unlock()
	if !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		// The Company doesn't stream: a JSON read (spec 8.6).
		var rr readResponse
		if err := decodeBody(resp, &rr); err != nil {
			return false, false, &Error{Op: "stream", Company: c.company, ConversationID: c.id, Code: "bad_response", Msg: "the Company's read is not the JSON of spec 8.5", Err: err}
		}
		c.mu.Lock()
		before := c.cursor
		v, err := m.apply(ctx, c, cl, resp, &rr)
		progress := c.cursor != before
		c.mu.Unlock()
		if err != nil {
			return false, false, err
		}
		return v.Status == StatusClosed && !rr.HasMore, rr.HasMore && progress, nil
	}
	declares := usesOperations(cl.Company())
	rw := &retryWatcher{r: resp.Body, first: true}
	defer func() {
		if rw.retry > 0 {
			*retry = rw.retry
		}
	}()
	sr := newSSEReader(rw)
	dirty := false
	flush := func() {
		if dirty {
			if err := m.save(ctx, c); err != nil {
				m.log.WarnContext(ctx, "conversation: saving the cursor failed", "err", err)
			}
			dirty = false
		}
	}
	for {
		ev, err := sr.Next()
		if err != nil {
			c.mu.Lock()
			flush()
			closed := NormalizeStatus(c.st.Status) == StatusClosed
			c.mu.Unlock()
			if ctx.Err() != nil || closed {
				return closed, false, nil
			}
			return false, false, nil // the Company closed the stream (normal): reconnect after retry
		}
		c.mu.Lock()
		switch ev.Type {
		case "text-delta":
			var d textDelta
			if json.Unmarshal(ev.Data, &d) == nil && d.MessageID != "" {
				text, ok, capped, dropped := c.addDelta(d.MessageID, d.Text)
				if dropped != "" {
					m.log.WarnContext(ctx, "conversation: too many messages being written at once; the pieces of the oldest are dropped (spec 8.6)",
						"company", c.company, "conversation", c.id, "message", dropped)
				}
				if ok {
					c.mu.Unlock()
					m.emit(Update{Kind: UpdateDelta, Company: c.company, ConversationID: c.id, MessageID: d.MessageID, Text: text})
					c.mu.Lock()
				} else if capped {
					m.log.WarnContext(ctx, "conversation: a message's text-delta pieces passed 1 MiB; later pieces are ignored until the full message arrives (spec 8.6)",
						"company", c.company, "conversation", c.id, "message", d.MessageID)
				}
			}
		case "message":
			prev := c.st.Status + "\x00" + c.st.Responder
			m.handle(ctx, c, cl, json.RawMessage(ev.Data), declares)
			dirty = true
			if c.st.Status+"\x00"+c.st.Responder != prev {
				m.emit(Update{Kind: UpdateState, Company: c.company, ConversationID: c.id, Status: NormalizeStatus(c.st.Status), Responder: NormalizeResponder(c.st.Responder)})
			}
		}
		if !sr.Buffered() {
			flush()
		}
		c.mu.Unlock()
	}
}

// ---- handoff, close, Direct Conversations, sign-in ----

// Handoff asks for a person at the Company (spec 8.9).
func (m *Manager) Handoff(ctx context.Context, company, id string) (*View, error) {
	return m.simplePost(ctx, company, id, "handoff")
}

// Close closes the conversation (spec 8.12). Closing cancels a pending handoff; it doesn't
// cancel anything the conversation started.
func (m *Manager) Close(ctx context.Context, company, id string) (*View, error) {
	return m.simplePost(ctx, company, id, "close")
}

func (m *Manager) simplePost(ctx context.Context, company, id, what string) (*View, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, err := m.client(ctx, c, what)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, cl, c.st.Endpoint+"/"+url.PathEscape(id)+"/"+what, []byte(`{}`))
	if err != nil {
		e := explain(what, company, id, err)
		var ce *Error
		if errors.As(e, &ce) && ce.Code == "sign_in_needed" {
			m.needAuth(ctx, c, ce.Scopes, "")
			_ = m.save(ctx, c)
		}
		return nil, e
	}
	defer resp.Body.Close()
	c.noteToken(resp)
	var rr readResponse
	if err := decodeBody(resp, &rr); err != nil {
		return nil, &Error{Op: what, Company: company, ConversationID: id, Code: "bad_response", Msg: "the Company's answer has no status and responder (spec 8.7)", Err: err}
	}
	rr.Events = nil
	v, err := m.apply(ctx, c, cl, resp, &rr)
	if err != nil {
		return nil, err
	}
	if what == "close" && c.st.Direct {
		if p, err := m.load(ctx, company, c.st.Parent); err == nil && p != c {
			p.mu.Lock()
			if p.st.DirectOpen == id {
				p.st.DirectOpen = ""
				_ = m.save(ctx, p)
			}
			p.mu.Unlock()
		}
	}
	return v, nil
}

// AcceptUserRequest starts the Direct Conversation the Company asked for (spec 8.10), after the
// user agreed IN THE WINDOW: only the window's service calls it; no model tool can. Without a
// message, so the Company speaks first; the reply is read with wait.
func (m *Manager) AcceptUserRequest(ctx context.Context, company, parentID, eventID string, wait time.Duration) (*View, error) {
	p, err := m.load(ctx, company, parentID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	found := false
	for _, inv := range p.st.Invites {
		found = found || inv.EventID == eventID
	}
	st := state{Endpoint: p.st.Endpoint, Parent: parentID, Direct: true, Status: StatusWorking, Responder: ResponderHuman, Title: "Direct Conversation"}
	account := p.account
	p.mu.Unlock()
	if !found {
		return nil, &Error{Op: "accept", Company: company, ConversationID: parentID, Code: "not_found", Msg: "the Company did not ask for the user with this event in this conversation (spec 8.10)"}
	}
	body := map[string]any{"parent_conversation_id": parentID, "user_requested_event_id": eventID}
	raw, _ := json.Marshal(body)
	// The acceptance is persisted before it is sent, like a message: the same parent and event
	// IDs return the same Direct Conversation on a retry (spec 8.10).
	sc := &conv{company: company, id: startPrefix + "accept." + eventID, account: account, st: st, handled: map[string]bool{}, deltas: map[string]*deltaText{}}
	sc.st.Pending = []outgoing{{ID: "accept." + eventID, Body: raw}}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if err := m.save(ctx, sc); err != nil {
		return nil, err
	}
	v, err := m.sendStart(ctx, sc, wait)
	if err != nil {
		return nil, err
	}
	m.answerInvite(ctx, p, eventID)
	return v, nil
}

// DeclineUserRequest tells the Company in the parent conversation that the user declined or
// isn't available (spec 8.10), after the user's answer in the window.
func (m *Manager) DeclineUserRequest(ctx context.Context, company, parentID, eventID string) (*View, error) {
	p, err := m.load(ctx, company, parentID)
	if err != nil {
		return nil, err
	}
	v, err := m.Send(ctx, Send{Company: company, ConversationID: parentID, AuthorType: AuthorAgent,
		Text: "The user declined to talk with you directly right now. Please continue with me."})
	if err != nil {
		return nil, err
	}
	m.answerInvite(ctx, p, eventID)
	return v, nil
}

func (m *Manager) answerInvite(ctx context.Context, p *conv, eventID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.st.Invites[:0]
	for _, inv := range p.st.Invites {
		if inv.EventID != eventID {
			out = append(out, inv)
		}
	}
	p.st.Invites = out
	_ = m.save(ctx, p)
}

// SignedIn continues a conversation signed in to account after the user signed in in the window
// (spec 8.11): the same conversation, with the token; a message the Company did not accept is
// sent now with its own ID. A conversation that used another account is refused (8.2).
func (m *Manager) SignedIn(ctx context.Context, company, id, account string) (*View, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if account == "" {
		return nil, errors.New("conversation: SignedIn needs the account the user signed in to")
	}
	if c.st.UsedAccount != "" && c.st.UsedAccount != account {
		return nil, &Error{Op: "sign-in", Company: company, ConversationID: id, Code: "ownership",
			Msg: fmt.Sprintf("this conversation used account %q and cannot continue with account %q (spec 8.2); start a new conversation for that account", c.st.UsedAccount, account)}
	}
	c.account, c.st.Auth = account, nil
	if err := m.save(ctx, c); err != nil {
		return nil, err
	}
	if len(c.st.Pending) > 0 {
		return m.flushPending(ctx, c, 0)
	}
	return c.view(), nil
}

// SetAccount switches the account requests go out with ("" signed out), for example after the
// user signed out. The 8.2 rules apply at the next request.
func (m *Manager) SetAccount(ctx context.Context, company, id, account string) error {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.account = account
	return m.save(ctx, c)
}

// ---- state for the window and the model ----

// Get returns a conversation with its transcript: with transcripts in the Store the stored
// transcript (also from before a restart), otherwise the entries handled in this run; at most
// the last 20000.
// The window pages with View and Entries instead.
func (m *Manager) Get(ctx context.Context, company, id string) (*View, []Entry, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := m.count(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	es, _, err := m.entriesRange(ctx, c, n-maxEntries, maxEntries)
	if err != nil {
		return nil, nil, err
	}
	return c.view(), es, nil
}

// View returns a conversation's current state (status, invites, text being written) and the
// length of its transcript without reading the transcript: the window asks for it on every
// change. After a restart the length is read once from the Store (one index seek).
func (m *Manager) View(ctx context.Context, company, id string) (*View, int, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := m.count(ctx, c)
	if err != nil {
		return nil, 0, err
	}
	return c.view(), n, nil
}

// Entries returns entries [from, from+limit) of the transcript and its length. With transcripts
// in the Store that is the whole history, also from before a restart, read by range (only the
// page asked for is read); otherwise the entries handled in this run.
func (m *Manager) Entries(ctx context.Context, company, id string, from, limit int) ([]Entry, int, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.entriesRange(ctx, c, from, limit)
}

// List returns the conversations with a Company, most recently updated first.
func (m *Manager) List(ctx context.Context, company string) ([]*View, error) {
	recs, err := m.cfg.Store.ListConversations(ctx, company)
	if err != nil {
		return nil, fmt.Errorf("conversation: listing conversations: %w", err)
	}
	var out []*View
	for _, r := range recs {
		if strings.HasPrefix(r.ID, startPrefix) {
			continue
		}
		c, err := m.load(ctx, company, r.ID)
		if err != nil {
			continue
		}
		c.mu.Lock()
		out = append(out, c.view())
		c.mu.Unlock()
	}
	return out, nil
}

// Resume runs at start: starts and messages persisted but not accepted before Poppydesk stopped
// are sent again with the same IDs and content (spec 8.3), never as new messages.
func (m *Manager) Resume(ctx context.Context, company string) error {
	recs, err := m.cfg.Store.ListConversations(ctx, company)
	if err != nil {
		return fmt.Errorf("conversation: reading conversations to resume: %w", err)
	}
	var errs []error
	for _, r := range recs {
		var st state
		if json.Unmarshal([]byte(r.State), &st) != nil || len(st.Pending) == 0 {
			continue
		}
		if strings.HasPrefix(r.ID, startPrefix) {
			sc := &conv{company: r.Company, id: r.ID, account: r.Account, st: st, handled: map[string]bool{}, deltas: map[string]*deltaText{}}
			sc.mu.Lock()
			_, err := m.sendStart(ctx, sc, 0)
			sc.mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		c, err := m.load(ctx, company, r.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.mu.Lock()
		_, err = m.flushPending(ctx, c, 0)
		c.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WaitChange blocks until any conversation changes or d passes.
func (m *Manager) WaitChange(ctx context.Context, d time.Duration) {
	ch, done := m.subscribe()
	defer done()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
