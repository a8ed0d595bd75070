package store

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Settings keeps small named values; the engine keeps the issuer it found for each Company
// domain there (spec 3.2). A set value is durable when SetSetting returns.
type Settings interface {
	// GetSetting returns an error matching [ErrNotFound] when key is not set.
	GetSetting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
}

// EngineState is the engine's non-secret memory: discovered Companies, cached discovery
// documents, Sessions, and the inspector's exchange log. Every write is durable when it returns.
// Absent records are errors matching [ErrNotFound]. Nothing the engine writes here is secret: no
// token, key, Session JWT, User ID or Agent ID (docs/DESIGN.md invariant 5).
type EngineState interface {
	Settings
	// GetCacheEntry returns the entry for url.
	GetCacheEntry(ctx context.Context, url string) (CacheEntry, error)
	// PutCacheEntry inserts or replaces the entry for e.URL.
	PutCacheEntry(ctx context.Context, e CacheEntry) error
	// DeleteCacheEntry removes the entry for url; an absent entry is no error.
	DeleteCacheEntry(ctx context.Context, url string) error
	// PutCompany inserts or replaces the Company c.Identifier.
	PutCompany(ctx context.Context, c Company) error
	GetCompany(ctx context.Context, identifier string) (Company, error)
	// CompanyNames returns the stored names and domains of the Companies ids (without their
	// documents), in one read; an unknown identifier has no entry.
	CompanyNames(ctx context.Context, ids []string) (map[string]CompanyName, error)
	// AddSession records a new Session. A sid is never reused (spec 5.2, docs/DESIGN.md invariant
	// 7): a sid already recorded fails with an error matching [ErrExists].
	AddSession(ctx context.Context, s Session) error
	// EndSession records when the Session sid ended.
	EndSession(ctx context.Context, sid string, at time.Time) error
	// AddExchange appends e to the exchange log and returns its ID. The log keeps a window, so
	// an old exchange may be gone later.
	AddExchange(ctx context.Context, e Exchange) (int64, error)
	// AddExchanges appends es to the exchange log at once (one transaction: all or none) and
	// returns their IDs in order.
	AddExchanges(ctx context.Context, es []Exchange) ([]int64, error)
}

// Company is a discovered Company (spec 3) as stored: its identifier, the domain it was
// discovered from, the engine's document of it (JSON), and the HTTP cache validators.
type Company struct {
	Identifier string
	Domain     string
	// Name is the organization's name from the document (spec 3) and Agent the Company
	// Agent's poppy endpoint (spec 8.1, "" when none), for lists; both "" when a store from
	// before these columns has not seen the Company discovered again.
	Name, Agent string
	Document    json.RawMessage
	FetchedAt   time.Time
	ETag        string
	Expires     time.Time // zero: no expiry given
}

// CompanyName is a stored Company's name and domain, as [Company] has them.
type CompanyName struct{ Name, Domain string }

// CacheEntry is a cached HTTP response body with its validators (RFC 9111), keyed by URL: the
// public documents discovery reads (spec 3).
type CacheEntry struct {
	URL       string
	Company   string // the Company it belongs to, so forgetting the Company removes it ("" if none)
	Body      []byte
	ETag      string
	FetchedAt time.Time
	Expires   time.Time // zero: no expiry given
}

// Session is one Poppy Session (spec 5.2): its sid, protocol version and the extensions in use.
// The sid is not secret; the User ID it signs for is, and is never part of this record (spec
// 5.1).
type Session struct {
	SID        string
	Company    string
	Account    string
	Version    string
	Extensions []string
	Started    time.Time
	Ended      time.Time // zero while open
}

// Exchange is one HTTP exchange for the inspector, already redacted by agentcore/transport: no
// token, Session JWT, assertion, code or key may be in it (docs/DESIGN.md invariant 5). When no
// response arrived, Status is 0 and ResponseBody holds the (redacted) error text.
type Exchange struct {
	ID              int64 // assigned by AddExchange
	At              time.Time
	Company         string
	Direction       string // "outgoing" (Poppydesk to Company) or "incoming" (a redirect back)
	Method          string
	URL             string
	Status          int
	RequestHeaders  http.Header
	RequestBody     []byte
	ResponseHeaders http.Header
	ResponseBody    []byte
	Duration        time.Duration
	// Details is what agentcore/inspect decoded before redaction (JSON of inspect.Details: the
	// cause, the Session ID, JWT headers and claims without signatures, token values or User
	// IDs, and findings); nil when nothing was decoded.
	Details json.RawMessage
}

// Approvals is the durable memory of the approval queue (Operations extension v2, sections 5 to
// 7). Every method returns only after the change is durable: the queue writes before it sends or
// tells anyone (write-before-send, docs/DESIGN.md invariant 3). Absent records are errors matching
// [ErrNotFound], an existing ID [ErrExists], and a failed compare-and-set [ErrConflict].
type Approvals interface {
	// CreateApproval stores a new approval with its first revision, in one transaction.
	CreateApproval(ctx context.Context, a Approval, first Revision) error
	// AddRevision records a newer revision of the operation (a Revision number greater than
	// every stored one, else [ErrConflict]) and sets the approval's state to newState: a new
	// revision needs a new decision (docs/DESIGN.md invariant 2).
	AddRevision(ctx context.Context, id string, r Revision, newState string) error
	// TransitionApproval is the write-before-send step: in one transaction it checks that the
	// approval is in state from and that d.Revision is its latest revision (else [ErrConflict]
	// and nothing changes), sets the state to d.To, and appends d to the decision log with
	// d.From set to from.
	TransitionApproval(ctx context.Context, id, from string, d Decision) error
	// GetApproval returns the approval with all its revisions.
	GetApproval(ctx context.Context, id string) (Approval, error)
	// ListApprovals returns the approvals in any of states (all when none), oldest first, with
	// their revisions.
	ListApprovals(ctx context.Context, states ...string) ([]Approval, error)
	// Decisions returns the decision log of one approval ("" for all), in order.
	Decisions(ctx context.Context, id string) ([]Decision, error)
}

// ApprovalPages lists approvals a page at a time, newest first, for long histories (the window
// shows thousands of decided approvals). vault.State and MemoryApprovals implement it; a store
// without it is listed whole (Approvals.ListApprovals) and paged in memory.
type ApprovalPages interface {
	// ListApprovalsPage returns at most q.Limit approvals matching q, newest first (Created,
	// then ID, descending), with their revisions.
	ListApprovalsPage(ctx context.Context, q ApprovalQuery) ([]Approval, error)
	// DecisionsOf returns the decisions of the approvals ids whose Decision is one of kinds (all
	// when none), each approval's in order, in one read (a page of a list needs them all); an
	// approval without such decisions has no entry.
	DecisionsOf(ctx context.Context, ids []string, kinds ...string) (map[string][]Decision, error)
}

// ApprovalQuery selects a page of approvals.
type ApprovalQuery struct {
	// States, when set, keeps only approvals in one of them; NotStates drops those in one of
	// them.
	States, NotStates []string
	// BeforeCreated and BeforeID, when BeforeID is set, keep only approvals older than that one
	// (the last of the previous page).
	BeforeCreated time.Time
	BeforeID      string
	// Company, when set, keeps only that Company's approvals; OperationID, when set, only those
	// with a revision of that operation ([Revision.OperationID], Operations 3).
	Company, OperationID string
	// Limit is the page size (default 50).
	Limit int
}

// Match reports whether a passes q's filters and cursor (not its limit).
func (q ApprovalQuery) Match(a *Approval) bool {
	if len(q.States) > 0 && !slices.Contains(q.States, a.State) {
		return false
	}
	if slices.Contains(q.NotStates, a.State) {
		return false
	}
	if q.Company != "" && a.Company != q.Company {
		return false
	}
	if q.OperationID != "" && !slices.ContainsFunc(a.Revisions, func(r Revision) bool { return r.OperationID() == q.OperationID }) {
		return false
	}
	if q.BeforeID != "" {
		if a.Created.After(q.BeforeCreated) || a.Created.Equal(q.BeforeCreated) && a.ID >= q.BeforeID {
			return false
		}
	}
	return true
}

// NewestFirst orders approvals as ListApprovalsPage returns them.
func NewestFirst(a, b *Approval) int {
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// Approval is a pending or finished approval (Operations extension v2): the request that got
// `approval_required`, the interface it came through, and every revision of the operation the
// Company sent. State is the queue's state name; a store only compares and sets it.
//
// Request holds no secret: the queue stores the request before signing (no Session JWT, access
// token or DPoP proof) and signs it again when it sends.
type Approval struct {
	ID        string // chosen by the queue, unique across Companies
	Company   string
	Account   string
	SID       string
	Interface string          // "api", "mcp" or "conversation"
	Request   json.RawMessage // the queue's request record
	State     string
	Created   time.Time
	Updated   time.Time
	Revisions []Revision // ascending by Revision
}

// Revision is one revision of the operation: the operation object exactly as the Company sent
// it (JSON). Revision numbers the revisions of one approval from 1.
type Revision struct {
	Revision  int
	Operation json.RawMessage
	Received  time.Time
}

// OperationID is the operation_id of the revision's operation: Operation is the approval
// queue's record of the revision, an object whose "operation" member is the Company's operation
// (Operations 2), so the ID is at operation.operation_id ("" when the record has none).
func (r Revision) OperationID() string {
	var rec struct {
		Operation struct {
			OperationID string `json:"operation_id"`
		} `json:"operation"`
	}
	if json.Unmarshal(r.Operation, &rec) != nil {
		return ""
	}
	return rec.Operation.OperationID
}

// Decision is one entry of the append-only decision log: a state change of an approval, the
// revision it concerned, and what was decided (for example "approve", "deny", "sent",
// "outcome_unknown", "succeeded").
type Decision struct {
	Seq        int64 // assigned by the log
	ApprovalID string
	Revision   int
	From, To   string
	Decision   string
	At         time.Time
	Note       string
}

// Conversations is the conversation manager's memory (spec 8): each conversation with a Company
// Agent, where reading stopped, and the manager's state of it. Every write is durable when it
// returns: messages are persisted before they are sent (spec 8.3). An absent conversation is an
// error matching [ErrNotFound].
type Conversations interface {
	// PutConversation inserts or replaces the conversation (c.Company, c.ID).
	PutConversation(ctx context.Context, c Conversation) error
	GetConversation(ctx context.Context, company, id string) (Conversation, error)
	// ListConversations returns company's conversations, most recently updated first.
	ListConversations(ctx context.Context, company string) ([]Conversation, error)
}

// Transcripts is a [Conversations] that also keeps each conversation's transcript (spec 8.5), so
// a conversation's history is there after a restart. Entries are written only together with the
// conversation whose cursor covers them, in one durable transaction, so after a crash neither an
// entry is lost nor one stored twice.
type Transcripts interface {
	Conversations
	// SaveConversation stores c (as PutConversation) and appends entries to c's transcript in
	// one durable transaction; an entry whose EventID the transcript already holds is skipped,
	// and an entry without EventID fails the call with nothing saved. It returns how many
	// entries the transcript holds afterwards.
	SaveConversation(ctx context.Context, c Conversation, entries []ConversationEntry) (int, error)
	// ConversationEntries returns the transcript entries [from, from+limit) in handling order
	// and how many there are, from one snapshot; limit 0 returns only the count. An unknown
	// conversation has no entries.
	ConversationEntries(ctx context.Context, company, id string, from, limit int) ([]ConversationEntry, int, error)
}

// Conversation is the local state of a conversation with a Company Agent (spec 8): where reading
// stopped (Cursor) and the manager's state of it (JSON chosen by agentcore/conversation; no
// secret).
type Conversation struct {
	Company string
	ID      string
	Account string
	Cursor  string
	State   string
	Updated time.Time
}

// ConversationEntry is one transcript entry of a conversation (spec 8.5): the ID of the event it
// came from and the manager's JSON of it. It is Company content or the user's words, never a
// secret (docs/DESIGN.md invariant 5).
type ConversationEntry struct {
	EventID string
	Entry   string
}
