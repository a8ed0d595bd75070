package approvals

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Interfaces an operation came through (Item.Interface).
const (
	InterfaceAPI = "api"
	InterfaceMCP = "mcp"
	// InterfaceConversation: an operation in a Company message of a conversation (Operations 4,
	// 6 "Conversations"; conversation.go).
	InterfaceConversation = "conversation"
)

// Outcome statuses (Outcome.Status).
const (
	StatusDone            = "done"
	StatusWaitingForUser  = "waiting_for_user"
	StatusOutcomeUnknown  = "outcome_unknown"
	StatusInProgress      = "in_progress"
	StatusDeclined        = "declined"
	StatusExpired         = "expired"
	StatusFailed          = "failed"
	MessageWaitingForUser = "not performed; waiting for the user's decision in Poppydesk"
)

// Event kinds (Event.Kind).
const (
	EventCreated  = "created"
	EventRevision = "revision"
	EventState    = "state"
)

// Defaults of Config.
const (
	DefaultMaxAttempts = 5
	DefaultBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
	DefaultMaxPoll     = 2 * time.Minute
	// maxRetryAfter bounds how long one Retry-After is honoured.
	maxRetryAfter = time.Minute
	// maxResultNote bounds the Company's response kept in the decision log.
	maxResultNote = 64 << 10
)

// Engine is what the queue needs of agentcore/engine's *Engine: the Companies it discovered, and
// the Client of one Session per (Company, account), which sends through the one signed-request
// pipeline.
type Engine interface {
	Company(ctx context.Context, identifier string) (*discovery.Company, error)
	CompanyNames(ctx context.Context, ids []string) (map[string]store.CompanyName, error)
	Client(ctx context.Context, company, account string) (*engine.Client, error)
	Logger() *slog.Logger
}

// Config configures a Queue. Engine, Store are required.
type Config struct {
	Engine Engine          // discovery, Session-bound clients (*engine.Engine)
	Store  store.Approvals // persistence: *vault.State, or store.NewMemoryApprovals in tests
	Now    func() time.Time
	Logger *slog.Logger
	// OnChange is called (never blocking for long) when an item is created or changes state, so
	// the window can update its list/badge/dialog and the model's Wait can wake up. It is called
	// after the change is durable.
	OnChange func(ev Event)

	// Additions to the contract:

	// Sleep waits d or until ctx ends (nil: a real timer). Backoff between retries and the
	// Retry-After of an operation in progress go through it, so tests inject their clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxAttempts is how many times one approval is sent after failures (network error,
	// timeout, 5xx other than 503) before the item is left outcome_unknown (default 5). 503 with
	// Retry-After ("in progress", Operations 7) does not count: it is polled.
	MaxAttempts int
	// Backoff is the wait before the second attempt, doubled for each later one up to
	// MaxBackoff (defaults 500 ms and 30 s).
	Backoff, MaxBackoff time.Duration
	// MaxPoll bounds how long one call polls an operation the Company reports in progress
	// before returning in_progress (default 2 min); CheckOutcome or Recover continues later.
	MaxPoll time.Duration
	// Conversations sends approvals in conversations (agentcore/conversation's Manager); nil
	// when conversations are not used (conversation.go).
	Conversations ConversationSender
	// Reporter receives the rules a Company broke that the queue refuses it for: an operation
	// returned to a request that did not declare the extension (Operations 2) and a revision
	// reused for other terms (Operations 3). Nil: inspect.Discard.
	Reporter inspect.Reporter
}

// Event tells the window and waiters that an item changed.
type Event struct {
	Kind       string // "created" | "revision" | "state"
	ApprovalID string
	State      string
}

// Queue turns a model's action into a Company call, and an operation returned by the Company into
// a durable pending approval that only the window can decide (docs/DESIGN.md invariants 1-3).
// Safe for concurrent use. All its state is in the Store: several processes may share one
// Store as long as only one of them sends at a time (the kill test does exactly that).
type Queue struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	locksMu sync.Mutex
	locks   map[string]*keyLock

	waitMu  sync.Mutex
	changed chan struct{}

	mcpMu sync.Mutex
	mcps  map[mcpKey]*mcpConn // one cached MCP connection per Session and MCP server
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// New returns a Queue. It does no I/O; call Recover at start.
func New(cfg Config) (*Queue, error) {
	if cfg.Engine == nil || cfg.Store == nil {
		return nil, errors.New("approvals: Config needs Engine (agentcore/engine) and Store (the state database)")
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
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxPoll <= 0 {
		cfg.MaxPoll = DefaultMaxPoll
	}
	if cfg.Reporter == nil {
		cfg.Reporter = inspect.Discard
	}
	return &Queue{cfg: cfg, log: cfg.Logger, now: cfg.Now, locks: map[string]*keyLock{}, changed: make(chan struct{}), mcps: map[mcpKey]*mcpConn{}}, nil
}

// lock takes the in-process lock of key (an action target or an approval ID). Lock order: a
// target before an approval.
func (q *Queue) lock(key string) func() {
	q.locksMu.Lock()
	l := q.locks[key]
	if l == nil {
		l = &keyLock{}
		q.locks[key] = l
	}
	l.refs++
	q.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		q.locksMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(q.locks, key)
		}
		q.locksMu.Unlock()
	}
}

// emit tells OnChange and wakes waiters. Called after the change is durable.
func (q *Queue) emit(kind, id, state string) {
	q.waitMu.Lock()
	close(q.changed)
	q.changed = make(chan struct{})
	q.waitMu.Unlock()
	if q.cfg.OnChange != nil {
		q.cfg.OnChange(Event{Kind: kind, ApprovalID: id, State: state})
	}
}

func (q *Queue) changedChan() <-chan struct{} {
	q.waitMu.Lock()
	defer q.waitMu.Unlock()
	return q.changed
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return "apr_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// request is the queue's request record, stored as the Request of its store.Approval: exactly
// what was sent the first time, unsigned (no Session JWT, no access token), so the approval
// re-sends the SAME method, URL and body, or the SAME tool and arguments (Operations 6).
type request struct {
	// API calls.
	API         string            `json:"api,omitempty"`          // apis[].url of the openapi API
	OperationID string            `json:"operation_id,omitempty"` // OpenAPI operationId
	Method      string            `json:"method,omitempty"`
	URL         string            `json:"url,omitempty"`
	Header      map[string]string `json:"header,omitempty"` // Content-Type and declared header parameters
	Body        json.RawMessage   `json:"body,omitempty"`
	PathParams  map[string]string `json:"path_params,omitempty"`
	Query       url.Values        `json:"query,omitempty"`
	// MCP tool calls.
	Server    string          `json:"server,omitempty"` // apis[].url of the mcp API
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Intent is what the model said it intended (checked against terms, Operations 5).
	Intent map[string]string `json:"intent,omitempty"`
	// Target names the action for "no new approval while the outcome is unknown" (Operations 7):
	// the Company and the request target (method + URL, or server + tool + arguments).
	Target string `json:"target"`
	// Conversation is the conversation an operation came in (InterfaceConversation).
	Conversation string `json:"conversation,omitempty"`
	// Requester is the agent that asked, in its own words (APICall.Requester); not part of
	// the digest or the target: it is shown, never sent.
	Requester string `json:"requester,omitempty"`
}

func decodeRequest(rec *store.Approval) (*request, error) {
	var r request
	if err := json.Unmarshal(rec.Request, &r); err != nil {
		return nil, fmt.Errorf("approvals: the stored request of approval %s is unreadable: %w", rec.ID, err)
	}
	return &r, nil
}

func (r *request) facts() operations.RequestFacts {
	f := operations.RequestFacts{Method: r.Method, PathParams: r.PathParams, Query: r.Query, Body: r.Body,
		Tool: r.Tool, Arguments: r.Arguments, Intent: r.Intent}
	if u, err := url.Parse(r.URL); err == nil {
		f.Path = u.Path
	}
	return f
}

// canonicalJSON re-encodes JSON with sorted keys and numbers as written.
func canonicalJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func apiTarget(company, method, u string) string { return company + " api " + method + " " + u }
func toolTarget(company, server, tool string, args json.RawMessage) string {
	return company + " mcp " + server + " " + tool + " " + canonicalJSON(args)
}

// ---- the window's side ----

// Item is one approval as the window shows it.
type Item struct {
	ID            string
	Company       string // identifier
	CompanyName   string // organization.name FROM DISCOVERY (verified), never from the operation
	CompanyDomain string // organization.domain from discovery
	Account       string
	SID           string
	// Interface is the one the current revision came through, which an approval is sent through
	// (Operations 6): "api", "mcp" or "conversation".
	Interface string
	State     string // operations.State values
	Current   OperationView
	Previous  *OperationView       // the revision before, if any
	Changes   *operations.Changes  // Current vs Previous
	Warnings  []operations.Warning // terms vs the request and the model's intent
	Request   RequestView          // what was sent: method + URL + body, or tool + arguments (as data)
	Result    *Outcome             // after a decision: the Company's response, verbatim
	// ApprovedRevision is the revision that was approved and is (re)sent, when one was.
	ApprovedRevision string
	// CanCheckOutcome is true when CheckOutcome applies (approved, being sent, outcome unknown).
	CanCheckOutcome bool
	// Violation, when set, says in Poppydesk's words which rule of the Operations extension the
	// Company broke for this approval, such as other terms under a revision it had already used
	// (WarnRevisionReused, Operations 3); such an item can't be approved and nothing more is sent.
	Violation string
	// Decided is when the user approved or declined (zero while undecided, and for an item
	// that expired or was replaced without a decision).
	Decided          time.Time
	Created, Updated time.Time
}

// OperationView is one revision as the window shows it.
type OperationView struct {
	OperationID, Revision string
	Summary               operations.Summary // the SAFE structure
	SummaryText           string             // the raw summary, for copy
	Terms                 json.RawMessage
	ExpiresAt             time.Time
	// Digest is what Approve must present: it covers the operation (operations.Digest) AND
	// the request this revision would send (approvalDigest), so an approval names exactly what
	// the user saw (docs/DESIGN.md invariant 2).
	Digest string
}

// RequestView is the request, as data.
type RequestView struct {
	Method, URL string
	Body        json.RawMessage
	Tool        string
	Arguments   json.RawMessage
	// Conversation is the conversation the operation came in (InterfaceConversation).
	Conversation string
	// Requester is the agent that asked, in its own words ("" when unknown).
	Requester string
}

// WarnRequestChanged is the code of the Item warning that the request this approval would send
// changed since the previous revision (the model repeated the call with another body or other
// arguments), whether or not the Company's terms changed.
const WarnRequestChanged = "request_changed"

// ErrRequestChanged matches an Approve refused because the digest the window presented is that of
// an earlier revision of the item whose operation is unchanged but whose request is not: the user
// saw another request than the one an approval would send (docs/DESIGN.md invariant 2). It also matches
// operations.ErrDigestMismatch.
var ErrRequestChanged = fmt.Errorf("%w: the request changed since you looked (the model repeated the call with another body or other arguments); review it again", operations.ErrDigestMismatch)

func view(op *operations.Operation, req *request) OperationView {
	return OperationView{OperationID: op.OperationID, Revision: op.Revision, Summary: operations.RenderSummary(op.Summary),
		SummaryText: op.Summary, Terms: op.Terms, ExpiresAt: op.ExpiresAt, Digest: approvalDigest(op, req)}
}

// approvalDigest binds an approval to one stored revision of an item: the operation as the
// Company sent it (operations.Digest: operation_id, revision, summary, terms, expiry) and the
// request an approval of it would send (method, URL, headers and body, or server, tool and
// arguments, and the conversation), JSON in canonical form. The Company's operation alone is not
// enough: the model can repeat a call with another body and the Company may answer with the
// same operation, and then the request sent would not be the one the user saw (docs/DESIGN.md
// invariant 2, Operations 5, 6). Each part is length-prefixed so no two requests share an input.
func approvalDigest(op *operations.Operation, req *request) string {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put("poppydesk-approval-digest-v1")
	put(operations.Digest(op))
	if req == nil {
		req = &request{}
	}
	put(req.Method)
	put(req.URL)
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	put(strconv.Itoa(len(keys)))
	for _, k := range keys {
		put(k)
		put(req.Header[k])
	}
	put(canonicalJSON(req.Body))
	put(req.Server)
	put(req.Tool)
	put(canonicalJSON(req.Arguments))
	put(req.Conversation)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// requestChanged describes how the request of a revision differs from the one before, "" when it
// does not (what the user approves is sent as is, so any difference matters).
func requestChanged(prev, cur *request) string {
	if prev == nil || cur == nil {
		return ""
	}
	var parts []string
	if prev.Method != cur.Method || prev.URL != cur.URL || prev.Server != cur.Server || prev.Tool != cur.Tool {
		parts = append(parts, "what is called")
	}
	if canonicalJSON(prev.Body) != canonicalJSON(cur.Body) {
		parts = append(parts, "the body")
	}
	if canonicalJSON(prev.Arguments) != canonicalJSON(cur.Arguments) {
		parts = append(parts, "the arguments")
	}
	if len(parts) == 0 && !maps.Equal(prev.Header, cur.Header) {
		parts = append(parts, "the headers")
	}
	return strings.Join(parts, " and ")
}

// List returns every item: pending first, then newest first.
func (q *Queue) List(ctx context.Context) ([]Item, error) {
	recs, err := q.cfg.Store.ListApprovals(ctx)
	if err != nil {
		return nil, fmt.Errorf("approvals: reading the approval queue: %w", err)
	}
	out := make([]Item, 0, len(recs))
	for i := range recs {
		it, err := q.item(ctx, &recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *it)
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := out[i].State == string(operations.StatePending), out[j].State == string(operations.StatePending)
		if pi != pj {
			return pi
		}
		return out[i].Created.After(out[j].Created)
	})
	return out, nil
}

// Row is an item as a list shows it: who asked for what, its state and when. It is built from
// the stored records without checking the terms or computing the digest (what Get does for the
// dialog), so a page of a long history is one read of the state database and a small decode
// per row.
type Row struct {
	ID            string
	Company       string // identifier
	CompanyName   string // organization.name from discovery (verified), never from the operation
	CompanyDomain string
	Account       string
	Interface     string
	State         string
	// SummaryText is the current revision's summary as the Company sent it (raw).
	SummaryText string
	// ExpiresAt is when the current revision expires (zero when its text is not a date).
	ExpiresAt time.Time
	// Violation is as in [Item].
	Violation        string
	Decided          time.Time
	Created, Updated time.Time
}

// ListRows returns a page of rows, newest first, for histories too long to list whole: those
// in one of states (any state when empty) and in none of notStates. cursor is the next cursor of
// the previous page ("" for the first); next is "" on the last page.
func (q *Queue) ListRows(ctx context.Context, states, notStates []string, cursor string, limit int) (rows []Row, next string, err error) {
	recs, next, err := q.page(ctx, states, notStates, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	decs, err := q.decisionsOf(ctx, ids, decisionRevisionReused, decisionApprove, decisionDecline) // what decisionFacts reads
	if err != nil {
		return nil, "", err
	}
	var companies []string
	for i := range recs {
		if !slices.Contains(companies, recs[i].Company) {
			companies = append(companies, recs[i].Company)
		}
	}
	names, err := q.cfg.Engine.CompanyNames(ctx, companies)
	if err != nil {
		return nil, "", err
	}
	rows = make([]Row, 0, len(recs))
	for i := range recs {
		rec := &recs[i]
		if len(rec.Revisions) == 0 {
			return nil, "", fmt.Errorf("approvals: approval %s has no revision", rec.ID)
		}
		var cur struct {
			Operation struct {
				Revision  string `json:"revision"`
				Summary   string `json:"summary"`
				ExpiresAt string `json:"expires_at"`
			} `json:"operation"`
			Request struct {
				Tool         string `json:"tool"`
				Conversation string `json:"conversation"`
			} `json:"request"`
		}
		if err := json.Unmarshal(rec.Revisions[len(rec.Revisions)-1].Operation, &cur); err != nil {
			return nil, "", fmt.Errorf("approvals: stored revision of approval %s: %w", rec.ID, err)
		}
		r := Row{ID: rec.ID, Company: rec.Company, Account: rec.Account, Interface: interfaceOf(&request{Tool: cur.Request.Tool, Conversation: cur.Request.Conversation}), State: rec.State,
			SummaryText: cur.Operation.Summary, Created: rec.Created, Updated: rec.Updated}
		r.ExpiresAt, _ = operations.ParseRFC3339(cur.Operation.ExpiresAt)
		org := names[rec.Company]
		r.CompanyName, r.CompanyDomain = org.Name, org.Domain
		var reused bool
		reused, r.Decided = decisionFacts(decs[rec.ID])
		if reused {
			r.Violation = revisionReusedWords(cur.Operation.Revision, rec.State == string(operations.StateOutcomeUnknown))
		}
		rows = append(rows, r)
	}
	return rows, next, nil
}

// page reads a page of records for ListRows.
func (q *Queue) page(ctx context.Context, states, notStates []string, cursor string, limit int) (recs []store.Approval, next string, err error) {
	if limit <= 0 {
		limit = 50
	}
	sq := store.ApprovalQuery{Limit: limit + 1, States: states, NotStates: notStates}
	if cursor != "" {
		at, id, ok := strings.Cut(cursor, ".")
		ns, perr := strconv.ParseInt(at, 10, 64)
		if !ok || perr != nil || id == "" {
			return nil, "", fmt.Errorf("approvals: %q is not a cursor of the approvals list; list again from the start", cursor)
		}
		sq.BeforeCreated, sq.BeforeID = time.Unix(0, ns), id
	}
	if ps, ok := q.cfg.Store.(store.ApprovalPages); ok {
		recs, err = ps.ListApprovalsPage(ctx, sq)
	} else {
		var all []store.Approval
		all, err = q.cfg.Store.ListApprovals(ctx)
		for i := range all {
			if sq.Match(&all[i]) {
				recs = append(recs, all[i])
			}
		}
		slices.SortFunc(recs, func(a, b store.Approval) int { return store.NewestFirst(&a, &b) })
		recs = recs[:min(len(recs), sq.Limit)]
	}
	if err != nil {
		return nil, "", fmt.Errorf("approvals: reading the approval queue: %w", err)
	}
	if len(recs) > limit {
		last := recs[limit-1]
		next = strconv.FormatInt(last.Created.UnixNano(), 10) + "." + last.ID
		recs = recs[:limit]
	}
	return recs, next, nil
}

// decisionsOf reads the decisions of ids of the given kinds, in one read when the store pages.
func (q *Queue) decisionsOf(ctx context.Context, ids []string, kinds ...string) (map[string][]store.Decision, error) {
	if ps, ok := q.cfg.Store.(store.ApprovalPages); ok {
		decs, err := ps.DecisionsOf(ctx, ids, kinds...)
		if err != nil {
			return nil, fmt.Errorf("approvals: reading the decision log: %w", err)
		}
		return decs, nil
	}
	out := make(map[string][]store.Decision, len(ids))
	for _, id := range ids {
		decs, err := q.cfg.Store.Decisions(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("approvals: reading the decision log of %s: %w", id, err)
		}
		out[id] = slices.DeleteFunc(decs, func(d store.Decision) bool { return len(kinds) > 0 && !slices.Contains(kinds, d.Decision) })
	}
	return out, nil
}

// decisionFacts reads what a list shows from a decision log: whether the Company reused a
// revision (Operations 3) and when the user last approved or declined (zero when never).
func decisionFacts(decs []store.Decision) (reused bool, decided time.Time) {
	reused = revisionReusedIn(decs)
	for i := len(decs) - 1; i >= 0; i-- {
		if decs[i].Decision == decisionApprove || decs[i].Decision == decisionDecline {
			return reused, decs[i].At
		}
	}
	return reused, time.Time{}
}

// Get returns one item; an unknown ID is an error matching fs.ErrNotExist.
func (q *Queue) Get(ctx context.Context, id string) (*Item, error) {
	rec, err := q.cfg.Store.GetApproval(ctx, id)
	if err != nil {
		return nil, q.readErr(id, err)
	}
	return q.item(ctx, &rec)
}

func (q *Queue) readErr(id string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("approvals: there is no approval %q in the queue: %w", id, err)
	}
	return fmt.Errorf("approvals: reading approval %q: %w", id, err)
}

// revisionOp parses a stored revision. Stored operations were valid when received.
func revisionOp(rec *store.Approval, i int) (*operations.Operation, error) {
	env, err := decodeEnvelope(rec.Revisions[i].Operation)
	if err != nil {
		return nil, fmt.Errorf("approvals: stored revision %d of approval %s: %w", rec.Revisions[i].Revision, rec.ID, err)
	}
	op, err := operations.Parse(env.Operation)
	if err != nil {
		return nil, fmt.Errorf("approvals: stored revision %d of approval %s: %w", rec.Revisions[i].Revision, rec.ID, err)
	}
	return op, nil
}

func (q *Queue) item(ctx context.Context, rec *store.Approval) (*Item, error) {
	if len(rec.Revisions) == 0 {
		return nil, fmt.Errorf("approvals: approval %s has no revision", rec.ID)
	}
	env, err := decodeEnvelope(rec.Revisions[len(rec.Revisions)-1].Operation)
	if err != nil {
		return nil, err
	}
	req := env.Request
	cur, err := revisionOp(rec, len(rec.Revisions)-1)
	if err != nil {
		return nil, err
	}
	it := &Item{ID: rec.ID, Company: rec.Company, Account: rec.Account, SID: rec.SID, Interface: interfaceOf(req),
		State: rec.State, Current: view(cur, req), Created: rec.Created, Updated: rec.Updated,
		Request:  RequestView{Method: req.Method, URL: req.URL, Body: req.Body, Tool: req.Tool, Arguments: req.Arguments, Conversation: req.Conversation, Requester: req.Requester},
		Warnings: operations.CheckTerms(cur, req.facts())}
	if c, err := q.cfg.Engine.Company(ctx, rec.Company); err == nil {
		it.CompanyName, it.CompanyDomain = c.Organization.Name, c.Organization.Domain
	}
	if err := it.comparePrevious(rec, cur, req); err != nil {
		return nil, err
	}
	switch operations.State(rec.State) {
	case operations.StateApproved, operations.StateSending, operations.StateRetrying, operations.StateOutcomeUnknown:
		it.CanCheckOutcome = true
	}
	decs, err := q.cfg.Store.Decisions(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("approvals: reading the decision log of %s: %w", rec.ID, err)
	}
	it.readDecisions(rec, cur, decs)
	return it, nil
}

// comparePrevious sets what the item shows of the revision before the current one cur (with its
// request req): the earlier revision, what changed in the terms, and whether the request an
// approval sends changed (Operations 3 "New terms", 5).
func (it *Item) comparePrevious(rec *store.Approval, cur *operations.Operation, req *request) error {
	n := len(rec.Revisions)
	if n < 2 {
		return nil
	}
	prev, err := revisionOp(rec, n-2)
	if err != nil {
		return err
	}
	prevEnv, err := decodeEnvelope(rec.Revisions[n-2].Operation)
	if err != nil {
		return err
	}
	pv := view(prev, prevEnv.Request)
	it.Previous = &pv
	ch := operations.Diff(prev, cur)
	it.Changes = &ch
	what := requestChanged(prevEnv.Request, req)
	if what == "" {
		return nil
	}
	// Changes covers the Company's terms only; the request is what an approval sends.
	msg := "The request changed since the previous version: " + what + " of what Poppydesk would send is different now"
	if !ch.Any() {
		msg += ", while the Company's summary and terms stayed the same"
	}
	msg += ". Review what will be sent (below) before you approve; an approval always sends exactly the request shown."
	it.Warnings = append([]operations.Warning{{Code: WarnRequestChanged, Message: msg, Where: what,
		RequestValue: requestValue(req)}}, it.Warnings...)
	return nil
}

// readDecisions sets what the item shows from its decision log: when the user decided, a
// revision the Company reused (Operations 3), the approved revision, and the Company's answer.
func (it *Item) readDecisions(rec *store.Approval, cur *operations.Operation, decs []store.Decision) {
	reused, decided := decisionFacts(decs)
	it.Decided = decided
	if reused {
		// The Company's violation comes first, in its own words; the request changing between
		// the revisions is not the point (and not the model's fault) once nothing can be approved.
		it.Violation = revisionReusedWords(cur.Revision, rec.State == string(operations.StateOutcomeUnknown))
		kept := []operations.Warning{{Code: WarnRevisionReused, Message: it.Violation}}
		for _, w := range it.Warnings {
			if w.Code != WarnRequestChanged {
				kept = append(kept, w)
			}
		}
		it.Warnings, it.CanCheckOutcome = kept, false
	}
	if n, ok := approvedRevision(decs); ok {
		for i := range rec.Revisions {
			if rec.Revisions[i].Revision != n {
				continue
			}
			if op, err := revisionOp(rec, i); err == nil {
				it.ApprovedRevision = op.Revision
			}
		}
	}
	o := outcomeOf(rec, decs)
	if o.Status == StatusDone || o.Status == StatusFailed || o.HTTPStatus != 0 || len(o.Body) > 0 {
		it.Result = o
	}
}

// requestValue is the changed request's body or arguments, as data for the warning.
func requestValue(r *request) json.RawMessage {
	if len(r.Arguments) > 0 {
		return r.Arguments
	}
	return r.Body
}

// approvedRevision is the revision number of the last "approve" decision.
func approvedRevision(decs []store.Decision) (int, bool) {
	for i := len(decs) - 1; i >= 0; i-- {
		if decs[i].Decision == decisionApprove {
			return decs[i].Revision, true
		}
	}
	return 0, false
}

// Decision names in the log: the user's, and those of the way to the wire (operations.BeforeSend,
// AfterSend).
const (
	decisionApprove     = "approve"
	decisionDecline     = "decline"
	decisionExpire      = operations.LogExpire
	decisionSend        = operations.LogSend
	decisionResend      = operations.LogResend
	decisionSucceeded   = operations.LogSucceeded
	decisionFailed      = operations.LogFailed
	decisionNoAnswer    = operations.LogNoAnswer
	decisionInProgress  = operations.LogInProgress
	decisionNewRevision = operations.LogNewRevision
	// decisionNotSendable: an approved item that was never sent can't be sent from the current
	// Session (Operations 3); nothing was performed.
	decisionNotSendable = operations.LogNotSendable
)

// resultNote is the Company's answer as kept in the decision log (note of the final decision).
// Message is Poppydesk's words and never quotes the Company; Detail is Poppydesk's description of
// what the Company answered, which may quote it (an error code, a value it sent).
type resultNote struct {
	HTTPStatus int             `json:"http_status,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
	Text       string          `json:"text,omitempty"`
	Content    []apis.Content  `json:"content,omitempty"`
	Message    string          `json:"message,omitempty"`
	Detail     string          `json:"detail,omitempty"`
}

func (n resultNote) encode() string {
	if len(n.Body) > maxResultNote {
		n.Body = nil
		n.Message += " (the Company's response was larger than 64 KiB and is not kept)"
	}
	if c, err := json.Marshal(n.Content); err == nil && len(c) > maxResultNote {
		// The decision log keeps what each block was, not its bytes.
		n.Content = slices.Clone(n.Content)
		for i := range n.Content {
			if len(n.Content[i].Data) > 0 || len(n.Content[i].Text) > 1024 {
				n.Content[i].Data, n.Content[i].Text, n.Content[i].Omitted = nil, "", true
				n.Content[i].Note = "not kept in Poppydesk's decision log (larger than 64 KiB with the rest of the result)"
			}
		}
	}
	if len(n.Text) > maxResultNote {
		n.Text = n.Text[:maxResultNote] + "…"
	}
	if len(n.Detail) > maxResultNote {
		n.Detail = n.Detail[:maxResultNote] + "…"
	}
	b, _ := json.Marshal(n)
	return string(b)
}

// outcomeOf is the model's and the window's view of an item's state.
func outcomeOf(rec *store.Approval, decs []store.Decision) *Outcome {
	o := &Outcome{ApprovalID: rec.ID}
	var last *store.Decision
	if len(decs) > 0 {
		last = &decs[len(decs)-1]
		var n resultNote
		if json.Unmarshal([]byte(last.Note), &n) == nil {
			o.HTTPStatus, o.Body, o.Text, o.Content, o.Message, o.Detail = n.HTTPStatus, n.Body, n.Text, n.Content, n.Message, n.Detail
		}
	}
	switch operations.State(rec.State) {
	case operations.StatePending:
		o.Status, o.Message = StatusWaitingForUser, MessageWaitingForUser
		if len(rec.Revisions) > 1 {
			o.Message = "not performed; the Company sent new terms, waiting for the user's decision in Poppydesk"
		}
		o.HTTPStatus, o.Body, o.Text, o.Content, o.Detail = 0, nil, "", nil, ""
	case operations.StateApproved, operations.StateSending, operations.StateRetrying:
		o.Status, o.Message = StatusInProgress, "the user approved; Poppydesk is sending the approval to the Company"
	case operations.StateOutcomeUnknown:
		o.Status = StatusOutcomeUnknown
		if last != nil && last.Decision == decisionInProgress {
			o.Status = StatusInProgress
		}
		if o.Message == "" {
			o.Message = "the approval was sent but Poppydesk does not know yet whether the Company performed the action; it will send the same approval again (never a new one)"
		}
	case operations.StateSucceeded:
		o.Status = StatusDone
		if o.Message == "" {
			o.Message = "performed: the Company accepted the user's approval"
		}
	case operations.StateFailed:
		o.Status = StatusFailed
		if o.Message == "" {
			o.Message = "not performed: the Company refused the approved request"
		}

	case operations.StateDeclined:
		o.Status, o.Message = StatusDeclined, "not performed: the user declined in Poppydesk"
	case operations.StateExpired:
		o.Status, o.Message = StatusExpired, "not performed: the terms expired before the approval was sent"
	default:
		o.Status, o.Message = StatusFailed, "not performed: the approval is "+rec.State
	}
	if revisionReusedIn(decs) {
		// Operations 3: the Company reused a revision; its words from the decision log say
		// whether the approval had gone out (the outcome stays unknown) or not (failed).
		o.Status = StatusCompanyError
	}
	return o
}

// Wait blocks until the item reaches a final state, a state that needs the user's or Poppydesk's
// attention it was not in when Wait began (a new revision to decide, an unknown outcome), or
// timeout, and returns its outcome. It changes nothing.
func (q *Queue) Wait(ctx context.Context, id string, timeout time.Duration) (*Outcome, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var startState string
	var startRevs int
	for first := true; ; first = false {
		ch := q.changedChan()
		rec, err := q.cfg.Store.GetApproval(ctx, id)
		if err != nil {
			return nil, q.readErr(id, err)
		}
		if first {
			startState, startRevs = rec.State, len(rec.Revisions)
		}
		st := operations.State(rec.State)
		changed := rec.State != startState || len(rec.Revisions) != startRevs
		if st.Final() || (changed && (st == operations.StatePending || st == operations.StateOutcomeUnknown)) {
			return q.outcome(ctx, &rec)
		}
		select {
		case <-ch:
		case <-timer.C:
			return q.outcome(ctx, &rec)
		case <-ctx.Done():
			return nil, fmt.Errorf("approvals: waiting for approval %s: %w", id, ctx.Err())
		}
	}
}

func (q *Queue) outcome(ctx context.Context, rec *store.Approval) (*Outcome, error) {
	decs, err := q.cfg.Store.Decisions(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("approvals: reading the decision log of %s: %w", rec.ID, err)
	}
	return outcomeOf(rec, decs), nil
}
