package refcompany

// The reference Company Agent (spec 8): a deterministic, scripted jacket-exchange agent behind
// the `poppy` conversation protocol endpoint https://shop.localhost:PORT/poppy/conversations.
// See companyagent_doc.go for the script and the faults.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// InterfaceConversation is the interface of operations offered in a conversation (Operations 4).
const InterfaceConversation = "conversation"

// Faults of the Company Agent. They are switched with SetAgentFault (they are not in Faults,
// which the discovery and operations faults own).
const (
	// AgentFaultDuplicateEvents: a stream reconnected with Last-Event-ID first sends the two
	// events before that ID again (spec 8.5: "A read after a reconnect can return events again").
	AgentFaultDuplicateEvents = "agent-duplicate-events"
	// AgentFaultStreamCut: each conversation's first stream is closed after two text-delta pieces
	// of a message, before the message (spec 8.6: the Company MAY close a stream at any time).
	AgentFaultStreamCut = "agent-stream-cut"
	// AgentFaultCursorExpired: the next read of each conversation with a cursor gets
	// 410 cursor_expired, once (spec 8.5, 8.13).
	AgentFaultCursorExpired = "agent-cursor-expired"
	// AgentFaultUnknownValues: replies carry an event of an unknown type and a state event with
	// an unknown status and responder (spec 8.5, 8.7: later versions may add values).
	AgentFaultUnknownValues = "agent-unknown-values"
	// AgentFaultSlowStream: text-delta pieces come 40 ms apart instead of 1 ms.
	AgentFaultSlowStream = "agent-slow-stream"
	// AgentFaultNoSSE: the Company doesn't stream: reads asking for text/event-stream get JSON
	// (spec 8.6: "A Company that doesn't stream returns JSON as usual").
	AgentFaultNoSSE = "agent-no-sse"
)

// AgentFaults lists the Company Agent's faults.
var AgentFaults = []string{AgentFaultDuplicateEvents, AgentFaultStreamCut, AgentFaultCursorExpired, AgentFaultUnknownValues,
	AgentFaultSlowStream, AgentFaultNoSSE, AgentFaultRetryNewConversation, AgentFaultMissingFields, AgentFaultAnyUser,
	AgentFaultUserRequestedUnchecked}

// AgentPerson is the simulated person a handoff reaches (spec 8.9) and who talks in Direct
// Conversations (spec 8.10).
const (
	AgentPersonID   = "aut_alex"
	AgentPersonName = "Alex"
)

// Company Agent limits.
const (
	agentMaxWait   = 10 * time.Second // the cap of `wait` (spec 8.5: a larger wait is held only this long)
	agentPageSize  = 50               // events per JSON read; more set has_more (spec 8.5)
	agentMaxBody   = 256 << 10
	agentStreamFor = 25 * time.Second // a stream is closed after this long; the client reconnects
)

func newAgentStore(s *Server) *agentStore {
	return &agentStore{s: s, convs: map[string]*agentConv{}, msgs: map[string]*agentMsgRecord{},
		invites: map[string]string{}, faults: map[string]bool{}, pieceDelay: time.Millisecond, handoffDelay: 30 * time.Millisecond}
}

// agent is the Company Agent's state (this file).
func (s *Server) agent() *agentStore { s.state(); return s.agentSt }

type agentStore struct {
	s *Server

	mu           sync.Mutex
	convs        map[string]*agentConv
	msgs         map[string]*agentMsgRecord // clientID|userID|message id → the accepted message
	invites      map[string]string          // parent|user_requested event id → Direct Conversation
	faults       map[string]bool
	pieceDelay   time.Duration
	handoffDelay time.Duration
	seq          int
}

type agentMsgRecord struct {
	conv    string
	content string // canonical JSON of the message without role
	start   bool
}

type agentOwner struct{ clientID, userID string }

type agentConv struct {
	id         string
	owner      agentOwner
	account    string // "" until the conversation uses an account (spec 8.2)
	parent     string
	direct     bool
	directOpen string
	status     string
	responder  string
	events     []map[string]any
	index      map[string]int
	notify     chan struct{}
	writing    *agentWriting
	jobs       []agentJob
	running    bool
	cutDone    bool
	expireOnce bool
	size       string                 // "m" or "l": what the user asked for
	opAsk      map[string]exchangeAsk // revision → what it was for
	caller     caller
	declares   bool
}

type agentWriting struct {
	msgID  string
	pieces []string
}

type agentJob struct {
	text   string
	author map[string]any
	data   map[string]any
	ext    map[string]any
	after  func() // runs (locked) after the message is recorded
	idle   bool   // set status idle afterwards
}

// SetAgentFault switches a Company Agent fault on or off.
func (s *Server) SetAgentFault(name string, on bool) error {
	if !slices.Contains(AgentFaults, name) {
		return fmt.Errorf("refcompany: unknown Company Agent fault %q; known: %s", name, strings.Join(AgentFaults, ", "))
	}
	a := s.agent()
	a.mu.Lock()
	a.faults[name] = on
	a.mu.Unlock()
	return nil
}

// SetAgentDelays sets how long the Company Agent takes per text-delta piece (default 1 ms) and
// before a person joins after a handoff (default 30 ms).
func (s *Server) SetAgentDelays(piece, handoff time.Duration) {
	a := s.agent()
	a.mu.Lock()
	a.pieceDelay, a.handoffDelay = piece, handoff
	a.mu.Unlock()
}

// AgentEventCount returns how many events conversation id has (0 when unknown).
func (s *Server) AgentEventCount(id string) int {
	a := s.agent()
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.convs[id]; c != nil {
		return len(c.events)
	}
	return 0
}

// AgentMessageIDs returns the IDs of the Company messages of conversation id, in order.
func (s *Server) AgentMessageIDs(id string) []string {
	a := s.agent()
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	if c := a.convs[id]; c != nil {
		for _, e := range c.events {
			if e["type"] == "message" {
				if m, _ := e["message"].(map[string]any); m["role"] == "company" {
					out = append(out, m["id"].(string))
				}
			}
		}
	}
	return out
}

// AgentBurst appends n Company messages to conversation id at once (benchmarks and long
// conversations: 10,000 events).
func (s *Server) AgentBurst(id string, n int) error {
	a := s.agent()
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.convs[id]
	if c == nil {
		return fmt.Errorf("refcompany: no conversation %q", id)
	}
	for i := 0; i < n; i++ {
		a.addEvent(c, map[string]any{"type": "message", "message": map[string]any{"id": a.newID("msg"), "role": "company",
			"author": map[string]any{"type": "agent"}, "text": "Burst message " + strconv.Itoa(i+1) + " of " + strconv.Itoa(n) + "."}})
	}
	return nil
}

// AgentCloseConversation closes conversation id as the Company does after inactivity (spec 8.12).
func (s *Server) AgentCloseConversation(id string) {
	a := s.agent()
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.convs[id]; c != nil {
		a.closeLocked(c)
	}
}

func (a *agentStore) fault(n string) bool { return a.faults[n] }

// ownedBy reports whether a request of caller may use a conversation of owner (locked): the
// same client_id and User ID (spec 8.2), or under AgentFaultAnyUser the same client_id.
func (a *agentStore) ownedBy(owner, caller agentOwner) bool {
	if a.fault(AgentFaultAnyUser) {
		return owner.clientID == caller.clientID
	}
	return owner == caller
}

func (a *agentStore) newID(prefix string) string {
	a.seq++
	return prefix + "_" + strconv.Itoa(a.seq) + randomID(3)
}

// addEvent appends an event (locked) and wakes readers.
func (a *agentStore) addEvent(c *agentConv, e map[string]any) string {
	id := a.newID("evt")
	e["id"] = id
	e["created_at"] = a.s.now().UTC().Format(time.RFC3339)
	c.index[id] = len(c.events)
	c.events = append(c.events, e)
	c.wake()
	return id
}

func (c *agentConv) wake() {
	close(c.notify)
	c.notify = make(chan struct{})
}

func (a *agentStore) setState(c *agentConv, status, responder string) {
	if c.status == status && c.responder == responder {
		return
	}
	c.status, c.responder = status, responder
	a.addEvent(c, map[string]any{"type": "state", "status": status, "responder": responder})
}

// serveConversations is the `poppy` conversation protocol (spec 8.2).
func (s *Server) serveConversations(w http.ResponseWriter, r *http.Request) {
	p, ok := s.protect(w, r, "")
	if !ok {
		return
	}
	a := s.agent()
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/poppy/conversations"), "/")
	parts := strings.Split(rest, "/")
	if rest == "" {
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		a.start(w, r, p)
		return
	}
	if len(parts) != 2 || !headers.ValidID(parts[0]) {
		writeError(w, http.StatusNotFound, "not_found", "no such conversation URL; use {endpoint}/{id}/messages, events, handoff or close (spec 8.2)")
		return
	}
	want := map[string]string{"messages": http.MethodPost, "events": http.MethodGet, "handoff": http.MethodPost, "close": http.MethodPost}[parts[1]]
	if want == "" {
		writeError(w, http.StatusNotFound, "not_found", "no such conversation URL (spec 8.2)")
		return
	}
	if r.Method != want {
		methodNotAllowed(w, want)
		return
	}
	a.mu.Lock()
	c, status, code := a.owned(parts[0], p, w)
	a.mu.Unlock()
	if c == nil {
		if code != "" {
			writeError(w, status, code, "")
		}
		return
	}
	switch parts[1] {
	case "messages":
		a.message(w, r, p, c)
	case "events":
		a.read(w, r, c, http.StatusOK, "")
	case "handoff":
		a.handoff(w, c)
	case "close":
		a.mu.Lock()
		a.closeLocked(c)
		st, rsp := c.status, c.responder
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"conversation_id": c.id, "status": st, "responder": rsp})
	}
}

// owned applies the ownership table of spec 8.2 (locked). It writes the challenge itself; for
// other failures it returns the status and code.
func (a *agentStore) owned(id string, p *protected, w http.ResponseWriter) (*agentConv, int, string) {
	c := a.convs[id]
	if c == nil || !a.ownedBy(c.owner, agentOwner{p.Caller.ClientID, p.Caller.UserID}) {
		return nil, http.StatusNotFound, "conversation_not_found"
	}
	switch {
	case c.account != "" && p.Caller.Account == "":
		w.Header().Set("WWW-Authenticate", `Bearer realm="shop", scope="orders:read orders:write", error_description="this conversation uses your account; sign in to continue it (spec 8.11)"`)
		w.WriteHeader(http.StatusUnauthorized)
		return nil, 0, ""
	case c.account != "" && p.Caller.Account != c.account:
		return nil, http.StatusNotFound, "conversation_not_found"
	case c.account == "" && p.Caller.Account != "":
		c.account = p.Caller.Account // the conversation now uses this account (spec 8.11)
	}
	c.caller = p.Caller
	return c, 0, ""
}

type agentBody struct {
	ParentConversationID *string         `json:"parent_conversation_id"`
	UserRequestedEventID *string         `json:"user_requested_event_id"`
	Message              json.RawMessage `json:"message"`
}

// parseMessage validates a Personal Agent message (spec 8.4) and returns it with its canonical
// content (for the message ID check of 8.3).
func parseMessage(raw json.RawMessage) (map[string]any, string, string) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, "", "the message must be a JSON object (spec 8.4)"
	}
	id, _ := m["id"].(string)
	if !headers.ValidID(id) {
		return nil, "", "message.id must be 1 to 256 characters of letters, digits, - and _ (spec 8.2)"
	}
	au, _ := m["author"].(map[string]any)
	if t, _ := au["type"].(string); t != "agent" && t != "human" {
		return nil, "", `message.author.type must be "agent" or "human" (spec 8.8)`
	}
	has := false
	for _, k := range []string{"text", "data", "context", "extensions"} {
		if _, ok := m[k]; ok {
			has = true
		}
	}
	if !has {
		return nil, "", "a message needs at least one of text, data, context or extensions (spec 8.4)"
	}
	delete(m, "role") // set by the Company; ignored if sent (spec 8.4)
	canon, _ := json.Marshal(m)
	return m, string(canon), ""
}

func readAgentBody(w http.ResponseWriter, r *http.Request) (*agentBody, bool) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, agentMaxBody))
	var b agentBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be a JSON object (spec 8.3)")
		return nil, false
	}
	return &b, true
}

// waitParam reads `wait` (spec 8.5): a whole number of seconds, capped.
func waitParam(r *http.Request) (time.Duration, bool, bool) {
	v := r.URL.Query().Get("wait")
	if !r.URL.Query().Has("wait") {
		return 0, false, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || strconv.Itoa(n) != v {
		return 0, true, false
	}
	return min(time.Duration(n)*time.Second, agentMaxWait), true, true
}

func (a *agentStore) start(w http.ResponseWriter, r *http.Request, p *protected) {
	// A Company choice, kept from the earlier endpoint: conversations need the operations
	// extension (Operations 2: "or refuses the request with extension_required").
	if !declares(r, "operations", "2") {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "extension_required", "extension": "operations",
			"error_description": "conversations with this Company need the operations extension version 2"})
		return
	}
	if _, _, ok := waitParam(r); !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "wait must be a whole number of seconds (spec 8.5)")
		return
	}
	b, ok := readAgentBody(w, r)
	if !ok {
		return
	}
	owner := agentOwner{p.Caller.ClientID, p.Caller.UserID}
	var msg map[string]any
	var canon string
	if len(b.Message) > 0 && string(b.Message) != "null" {
		var problem string
		if msg, canon, problem = parseMessage(b.Message); problem != "" {
			writeError(w, http.StatusBadRequest, "invalid_request", problem)
			return
		}
	}
	a.mu.Lock()
	// Accepting a user_requested event (spec 8.10).
	if b.UserRequestedEventID != nil {
		if b.ParentConversationID == nil {
			a.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_request", "user_requested_event_id needs parent_conversation_id (spec 8.10)")
			return
		}
		key := *b.ParentConversationID + "|" + *b.UserRequestedEventID
		if did, ok := a.invites[key]; ok {
			d := a.convs[did]
			if d.owner != owner || (d.account != "" && d.account != p.Caller.Account) {
				a.mu.Unlock()
				writeError(w, http.StatusNotFound, "conversation_not_found", "")
				return
			}
			a.mu.Unlock()
			a.read(w, r, d, http.StatusCreated, "")
			return
		}
	}
	if msg == nil && (b.ParentConversationID == nil || b.UserRequestedEventID == nil) {
		a.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request", "a request without message is valid only when accepting a user_requested event (spec 8.3, 8.10)")
		return
	}
	// Message ID check (spec 8.3): the same ID and content returns the original response.
	if msg != nil {
		key := owner.clientID + "|" + owner.userID + "|" + msg["id"].(string)
		if rec := a.msgs[key]; rec != nil && !a.fault(AgentFaultRetryNewConversation) {
			if rec.content != canon || !rec.start {
				a.mu.Unlock()
				writeError(w, http.StatusConflict, "message_id_conflict", "this message ID was accepted with different content (spec 8.3)")
				return
			}
			c := a.convs[rec.conv]
			a.mu.Unlock()
			a.read(w, r, c, http.StatusCreated, "")
			return
		}
	}
	var parent *agentConv
	if b.ParentConversationID != nil {
		parent = a.convs[*b.ParentConversationID]
		switch {
		case parent == nil || !a.ownedBy(parent.owner, owner) || parent.account != "" && parent.account != p.Caller.Account:
			a.mu.Unlock()
			writeError(w, http.StatusNotFound, "conversation_not_found", "the parent conversation is unknown (spec 8.10)")
			return
		case parent.status == "closed":
			a.mu.Unlock()
			writeError(w, http.StatusConflict, "conversation_closed", "the parent conversation is closed (spec 8.10)")
			return
		case parent.direct:
			a.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_request", "the parent is a Direct Conversation itself (spec 8.10)")
			return
		case parent.directOpen != "":
			did := parent.directOpen
			a.mu.Unlock()
			writeJSON(w, http.StatusConflict, map[string]any{"error": "direct_conversation_open", "conversation_id": did})
			return
		}
		if b.UserRequestedEventID != nil {
			i, ok := parent.index[*b.UserRequestedEventID]
			if (!ok || parent.events[i]["type"] != "user_requested") && !a.fault(AgentFaultUserRequestedUnchecked) {
				a.mu.Unlock()
				writeError(w, http.StatusBadRequest, "invalid_request", "user_requested_event_id does not name a user_requested event of the parent (spec 8.10)")
				return
			}
		}
	}
	c := &agentConv{id: a.newID("cnv"), owner: owner, account: p.Caller.Account, status: "idle", responder: "agent",
		index: map[string]int{}, notify: make(chan struct{}), size: "m", opAsk: map[string]exchangeAsk{}, caller: p.Caller}
	c.declares = true
	a.convs[c.id] = c
	if parent != nil {
		c.parent, c.direct = parent.id, true
		c.responder = "human"
		parent.directOpen = c.id
		a.addEvent(parent, map[string]any{"type": "direct_opened", "conversation_id": c.id})
		if b.UserRequestedEventID != nil {
			a.invites[parent.id+"|"+*b.UserRequestedEventID] = c.id
		}
	}
	header := ""
	if msg != nil {
		a.msgs[owner.clientID+"|"+owner.userID+"|"+msg["id"].(string)] = &agentMsgRecord{conv: c.id, content: canon, start: true}
		header = a.accept(c, msg, p)
	} else {
		a.setState(c, "working", c.responder)
		a.enqueue(c, agentJob{text: "Hi, this is Alex from Shop. A specialist needs to confirm the exchange: would you like the insulated jacket in medium?",
			author: a.person(), idle: true})
	}
	a.mu.Unlock()
	a.read(w, r, c, http.StatusCreated, header)
}

func (a *agentStore) person() map[string]any {
	return map[string]any{"type": "human", "id": AgentPersonID, "name": AgentPersonName, "image": a.s.Origin() + "/logo.png"}
}

func (a *agentStore) message(w http.ResponseWriter, r *http.Request, p *protected, c *agentConv) {
	if _, _, ok := waitParam(r); !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "wait must be a whole number of seconds (spec 8.5)")
		return
	}
	b, ok := readAgentBody(w, r)
	if !ok {
		return
	}
	msg, canon, problem := parseMessage(b.Message)
	if problem != "" {
		writeError(w, http.StatusBadRequest, "invalid_request", problem)
		return
	}
	a.mu.Lock()
	key := c.owner.clientID + "|" + c.owner.userID + "|" + msg["id"].(string)
	if rec := a.msgs[key]; rec != nil {
		a.mu.Unlock()
		if rec.content != canon || rec.conv != c.id || rec.start {
			writeError(w, http.StatusConflict, "message_id_conflict", "this message ID was accepted with different content (spec 8.3)")
			return
		}
		a.read(w, r, c, http.StatusAccepted, "")
		return
	}
	if a.refuseUnlocked(w, c) {
		return
	}
	c.declares = declares(r, "operations", "2")
	a.msgs[key] = &agentMsgRecord{conv: c.id, content: canon}
	header := a.accept(c, msg, p)
	a.mu.Unlock()
	a.read(w, r, c, http.StatusAccepted, header)
}

const orderScopes = "orders:read orders:write"

// accept records a Personal Agent message and decides the Company Agent's answer (locked). It
// returns a WWW-Authenticate challenge to add to the successful response when the answer is an
// authorization event (spec 8.11).
func (a *agentStore) accept(c *agentConv, msg map[string]any, p *protected) string {
	msg["role"] = "user"
	a.addEvent(c, map[string]any{"type": "message", "message": msg})
	text, _ := msg["text"].(string)
	low := strings.ToLower(text)
	var appr *approvalRef
	if ext, ok := msg["extensions"].(map[string]any); ok && c.declares {
		if ops, ok := ext["operations"].(map[string]any); ok {
			if ap, ok := ops["approval"].(map[string]any); ok {
				oid, _ := ap["operation_id"].(string)
				rev, _ := ap["revision"].(string)
				appr = &approvalRef{OperationID: oid, Revision: rev}
			}
		}
	}
	if text == "" && appr == nil {
		return "" // context or data only: recorded, nothing to answer
	}
	human := c.responder == "human"
	author := map[string]any{"type": "agent"}
	if human {
		author = a.person()
	}
	signedIn := p.Token != "" && slices.Contains(p.Scopes, "orders:read") && slices.Contains(p.Scopes, "orders:write")
	a.setState(c, "working", c.responder)
	if a.fault(AgentFaultUnknownValues) {
		a.addEvent(c, map[string]any{"type": "x-shop-typing", "note": "an event type from a later version"})
		c.status, c.responder = "reviewing", "supervisor"
		a.addEvent(c, map[string]any{"type": "state", "status": "reviewing", "responder": "supervisor"})
	}
	needsAccount := appr != nil || strings.Contains(low, "exchange") || strings.Contains(low, "return") || strings.Contains(low, "order") ||
		strings.Contains(low, "large") || strings.Contains(low, "size l")
	switch {
	case needsAccount && !signedIn:
		a.addEvent(c, map[string]any{"type": "authorization", "error": "insufficient_scope", "scope": orderScopes})
		a.enqueue(c, agentJob{text: "I need to see your orders for that. Please sign in to Shop, and I'll continue right here.", author: author, idle: true})
		return `Bearer error="insufficient_scope", scope="` + orderScopes + `"`
	case appr != nil:
		ask, ok := c.opAsk[appr.Revision]
		if !ok {
			ask = exchangeAsk{OrderID: "ord_7Hk2", ItemID: "itm_4Qa", ReplacementSKU: "stormline-insulated-" + c.size}
		}
		out := a.s.ops().exchange(c.caller, InterfaceConversation, ask, appr)
		a.reply(c, out, ask, author)
	case strings.Contains(low, "large") || strings.Contains(low, "size l"):
		c.size = "l"
		ask := exchangeAsk{OrderID: "ord_7Hk2", ItemID: "itm_4Qa", ReplacementSKU: "stormline-insulated-l"}
		a.reply(c, a.s.ops().exchange(c.caller, InterfaceConversation, ask, nil), ask, author)
	case strings.Contains(low, "exchange") || strings.Contains(low, "return") || strings.Contains(low, "order"):
		ask := exchangeAsk{OrderID: "ord_7Hk2", ItemID: "itm_4Qa", ReplacementSKU: "stormline-insulated-" + c.size}
		a.reply(c, a.s.ops().exchange(c.caller, InterfaceConversation, ask, nil), ask, author)
	case strings.Contains(low, "person") || strings.Contains(low, "human"):
		a.enqueue(c, agentJob{text: "Let me get a person for you.", author: author, after: func() { a.startHandoff(c) }})
	case strings.Contains(low, "specialist"):
		a.enqueue(c, agentJob{text: "A specialist will ask to talk with you directly.", author: author, idle: true,
			after: func() {
				a.addEvent(c, map[string]any{"type": "user_requested", "reason": "A specialist needs to confirm the exchange with the customer."})
			}})
	case strings.Contains(low, "long"):
		a.enqueue(c, agentJob{text: strings.TrimSpace(strings.Repeat("The Stormline Insulated Jacket has a recycled fill, taped seams and a two-way zip. ", 8)), author: author, idle: true})
	default:
		a.enqueue(c, agentJob{text: "The Stormline Insulated Jacket is the warmer one: it is rated down to -10 °C. I can exchange your jacket for it if you like.",
			author: author, data: map[string]any{"product": "stormline-insulated-m", "rating_celsius": -10}, idle: true})
	}
	return ""
}

// reply turns the outcome of an exchange into the Company Agent's message (Operations 4, 6).
func (a *agentStore) reply(c *agentConv, out outcome, ask exchangeAsk, author map[string]any) {
	switch out.kind {
	case outNeedApproval:
		c.opAsk[out.op.Revision] = ask
		text := "I can exchange it for the " + catalog[ask.ReplacementSKU].Name + ". I'll do it once you approve."
		job := agentJob{text: text, author: author, idle: true}
		if c.declares {
			job.ext = map[string]any{"operations": map[string]any{"operation": out.op}}
		} else {
			job.text += " Approve it on our website: your agent doesn't use the operations extension."
		}
		a.enqueue(c, job)
	case outPerformed, outReplay:
		var res struct {
			Message string `json:"message"`
		}
		json.Unmarshal(out.result, &res)
		var data map[string]any
		json.Unmarshal(out.result, &data)
		a.enqueue(c, agentJob{text: "Done. " + res.Message, author: author, data: data, idle: true})
	case outChallenge:
		a.addEvent(c, map[string]any{"type": "authorization", "error": "insufficient_scope", "scope": orderScopes})
		a.enqueue(c, agentJob{text: "Please sign in again to approve this exchange.", author: author, idle: true})
	case outInProgress:
		a.enqueue(c, agentJob{text: "The exchange is being performed; I'll confirm shortly.", author: author, idle: true})
	default:
		a.enqueue(c, agentJob{text: "I can't do that: " + out.desc + ".", author: author, idle: true})
	}
}

// enqueue schedules a Company message; one writer per conversation writes them in order,
// streaming text-delta pieces first (spec 8.6).
func (a *agentStore) enqueue(c *agentConv, j agentJob) {
	c.jobs = append(c.jobs, j)
	if c.running {
		return
	}
	c.running = true
	go a.writer(c)
}

func (a *agentStore) writer(c *agentConv) {
	for {
		a.mu.Lock()
		if len(c.jobs) == 0 || c.status == "closed" {
			c.jobs, c.running = nil, false
			a.mu.Unlock()
			return
		}
		j := c.jobs[0]
		c.jobs = c.jobs[1:]
		msgID := a.newID("msg")
		c.writing = &agentWriting{msgID: msgID}
		delay := a.pieceDelay
		if a.fault(AgentFaultSlowStream) {
			delay = 40 * time.Millisecond
		}
		a.mu.Unlock()
		words := strings.SplitAfter(j.text, " ")
		for i := 0; i < len(words); i += 3 {
			time.Sleep(delay)
			a.mu.Lock()
			if c.writing == nil || c.writing.msgID != msgID {
				a.mu.Unlock()
				break // closed meanwhile
			}
			c.writing.pieces = append(c.writing.pieces, strings.Join(words[i:min(i+3, len(words))], ""))
			c.wake()
			a.mu.Unlock()
		}
		a.mu.Lock()
		m := map[string]any{"id": msgID, "role": "company", "author": j.author, "text": j.text}
		if a.fault(AgentFaultMissingFields) {
			delete(m, "author") // the fault (lenient.go)
		}
		if j.data != nil {
			m["data"] = j.data
		}
		if j.ext != nil {
			m["extensions"] = j.ext
		}
		c.writing = nil
		if c.status != "closed" {
			a.addEvent(c, map[string]any{"type": "message", "message": m})
			if j.after != nil {
				j.after()
			}
			if j.idle && len(c.jobs) == 0 && c.status != "queued" {
				a.setState(c, "idle", c.responder)
			}
		}
		a.mu.Unlock()
	}
}

// refuseUnlocked answers conversation_closed or direct_conversation_open (spec 8.12, 8.10) when
// the conversation takes no new message or handoff now. Called with a.mu held; when it refuses it
// releases a.mu and reports true.
func (a *agentStore) refuseUnlocked(w http.ResponseWriter, c *agentConv) bool {
	switch {
	case c.status == "closed":
		a.mu.Unlock()
		writeError(w, http.StatusConflict, "conversation_closed", "the conversation is closed (spec 8.12)")
		return true
	case c.directOpen != "":
		did := c.directOpen
		a.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]any{"error": "direct_conversation_open", "conversation_id": did})
		return true
	}
	return false
}

func (a *agentStore) handoff(w http.ResponseWriter, c *agentConv) {
	a.mu.Lock()
	if a.refuseUnlocked(w, c) {
		return
	}
	a.startHandoff(c)
	st, rsp := c.status, c.responder
	a.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"conversation_id": c.id, "status": st, "responder": rsp})
}

// startHandoff queues the conversation for a person (spec 8.9), locked; a person joins after
// handoffDelay. Already queued or handled by a person: nothing changes.
func (a *agentStore) startHandoff(c *agentConv) {
	if c.status == "queued" || c.responder == "human" || c.status == "closed" {
		return
	}
	a.setState(c, "queued", "agent")
	d := a.handoffDelay
	time.AfterFunc(d, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if c.status != "queued" {
			return // closed meanwhile: closing cancels a pending handoff (spec 8.9)
		}
		a.setState(c, "idle", "human")
		a.addEvent(c, map[string]any{"type": "message", "message": map[string]any{"id": a.newID("msg"), "role": "company",
			"author": a.person(), "text": "Hi, I'm Alex from Shop. I've read the conversation. How can I help?"}})
	})
}

// closeLocked closes c (spec 8.12): a state event, the end of a pending handoff, the parent's
// direct_closed, and the open Direct Conversation of a parent.
func (a *agentStore) closeLocked(c *agentConv) {
	if c.status == "closed" {
		return
	}
	if c.directOpen != "" {
		if d := a.convs[c.directOpen]; d != nil {
			a.closeLocked(d)
		}
	}
	c.writing, c.jobs = nil, nil
	a.setState(c, "closed", c.responder)
	if c.direct {
		if p := a.convs[c.parent]; p != nil && p.directOpen == c.id {
			p.directOpen = ""
			a.addEvent(p, map[string]any{"type": "direct_closed", "conversation_id": c.id})
		}
	}
}

// read answers a read of c's events (spec 8.5), or a stream (8.6), or the same as the reply to a
// POST with `wait` (8.3). Without `wait` on a POST, only status and responder are returned.
func (a *agentStore) read(w http.ResponseWriter, r *http.Request, c *agentConv, status int, challenge string) {
	wait, hasWait, ok := waitParam(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "wait must be a whole number of seconds (spec 8.5)")
		return
	}
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	if r.Method == http.MethodPost && !hasWait {
		a.mu.Lock()
		st, rsp := c.status, c.responder
		a.mu.Unlock()
		writeJSON(w, status, map[string]any{"conversation_id": c.id, "status": st, "responder": rsp})
		return
	}
	cursor := r.URL.Query().Get("cursor")
	sse := r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	last := r.Header.Get("Last-Event-ID")
	if sse && last != "" {
		cursor = last // spec 8.6: Last-Event-ID wins
	}
	a.mu.Lock()
	if sse && a.fault(AgentFaultNoSSE) {
		sse = false
	}
	start := 0
	if cursor != "" {
		i, known := c.index[cursor]
		if !known {
			a.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_cursor", "the cursor is not an event of this conversation (spec 8.13)")
			return
		}
		if a.fault(AgentFaultCursorExpired) && !c.expireOnce {
			c.expireOnce = true
			a.mu.Unlock()
			writeError(w, http.StatusGone, "cursor_expired", "the events at this cursor are no longer kept (spec 8.5)")
			return
		}
		start = i + 1
	}
	a.mu.Unlock()
	if sse {
		a.stream(w, r, c, start, last != "")
		return
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		if len(c.events) > start || wait == 0 {
			end := min(len(c.events), start+agentPageSize)
			evs := append([]map[string]any(nil), c.events[start:end]...)
			cur := cursor
			if len(evs) > 0 {
				cur = evs[len(evs)-1]["id"].(string)
			}
			body := map[string]any{"conversation_id": c.id, "events": evs, "cursor": cur, "has_more": end < len(c.events),
				"status": c.status, "responder": c.responder}
			if a.fault(AgentFaultMissingFields) {
				delete(body, "has_more") // the fault (lenient.go)
			}
			enc, _ := json.Marshal(body)
			a.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(enc)
			return
		}
		ch := c.notify
		a.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			wait = 0
		case <-r.Context().Done():
			return
		}
	}
}

// stream serves events as SSE from index start (spec 8.6), with text-delta pieces of the message
// being written. It ends when the conversation is closed and everything was sent, after
// agentStreamFor, when the client goes away, or by a fault.
func (a *agentStore) stream(w http.ResponseWriter, r *http.Request, c *agentConv, start int, reconnect bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "server_error", "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	a.mu.Lock()
	if reconnect && a.fault(AgentFaultDuplicateEvents) {
		start = max(0, start-2)
	}
	a.mu.Unlock()
	sent := start
	deltaMsg, deltaN := "", 0
	stop := time.NewTimer(agentStreamFor)
	defer stop.Stop()
	var buf bytes.Buffer
	for {
		buf.Reset()
		a.mu.Lock()
		for ; sent < len(c.events); sent++ {
			e := c.events[sent]
			b, _ := json.Marshal(e)
			fmt.Fprintf(&buf, "id: %s\ndata: %s\n\n", e["id"], b)
			if e["type"] == "message" {
				if m, _ := e["message"].(map[string]any); m["id"] == deltaMsg {
					deltaMsg, deltaN = "", 0
				}
			}
		}
		cut := false
		if wr := c.writing; wr != nil {
			if wr.msgID != deltaMsg {
				deltaMsg, deltaN = wr.msgID, 0
			}
			for ; deltaN < len(wr.pieces); deltaN++ {
				b, _ := json.Marshal(map[string]any{"message_id": wr.msgID, "text": wr.pieces[deltaN]})
				fmt.Fprintf(&buf, "event: text-delta\ndata: %s\n\n", b)
				if deltaN+1 == 2 && a.fault(AgentFaultStreamCut) && !c.cutDone {
					c.cutDone, cut = true, true
					deltaN++
					break
				}
			}
		}
		done := c.status == "closed" && sent == len(c.events)
		ch := c.notify
		a.mu.Unlock()
		if buf.Len() > 0 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			fl.Flush()
		}
		if cut || done {
			return
		}
		select {
		case <-ch:
		case <-stop.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}
