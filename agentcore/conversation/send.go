package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

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
	if !headers.ValidID(msg.ID) {
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
	if s.Parent != "" && !headers.ValidID(s.Parent) {
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
	if err := decodeBody(resp, &rr); err != nil || !headers.ValidID(rr.ConversationID) {
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
	if err := json.Unmarshal(raw, &ev); err != nil || !headers.ValidID(ev.ID) {
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
