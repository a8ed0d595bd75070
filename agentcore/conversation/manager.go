package conversation

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// Engine is what the manager needs of agentcore/engine's *Engine: the Companies it discovered,
// and the Client of one Session per (Company, account), which sends through the one
// signed-request pipeline.
type Engine interface {
	Company(ctx context.Context, identifier string) (*discovery.Company, error)
	Client(ctx context.Context, company, account string) (*engine.Client, error)
	Logger() *slog.Logger
}

// Config configures a Manager. Engine and Store are required. Store is *vault.State in the app
// (a store.Transcripts, so transcripts are kept), or store.NewMemoryConversations in tests.
type Config struct {
	Engine Engine
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
		cfg.Sleep = transport.SleepContext
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
