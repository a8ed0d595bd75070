package fronts

// The window's conversation view (spec 8.3–8.12, 10.1; Operations 4 "Conversations").
//
// Conversations is the window's side of the Host's agentcore/conversation Manager: it lists the
// conversations with each Company, pages a transcript out (the window renders only the rows on
// screen), follows open conversations with server-sent events (spec 8.6; conversation.Followers)
// so text-delta pieces reach the window as they arrive, and carries the user's own actions: a message typed in the
// window (author.type "human", spec 8.8), Hand off (8.9), Close (8.12), and the answer to a
// Company's request to talk with the user (8.10). AcceptUserRequest is reachable ONLY from here,
// i.e. from the user's click in the window; no model tool can accept for the user.
//
// Everything the Company wrote (text, author names, reasons, data) is Company content (spec
// 10.1): it is passed as text with invisible and direction-changing characters made visible
// (operations.Visible), and author pictures only as data: URLs (the window's CSP forbids remote
// loads; anything else becomes a placeholder in the window).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/app"
)

// ConversationCompany is a Company the user can talk with: its identifier and verified name.
type ConversationCompany struct {
	Identifier string `json:"identifier"`
	Name       string `json:"name"`
}

// conversationsTimeout bounds one call from the window.
const conversationsTimeout = time.Minute

// Conversations is the window's service for conversations with Company Agents, over the Host's
// conversation Manager and its streams ([app.Host.Followers]); a change reaches the window as
// [app.EventConversationsChanged]. Bound to the window only.
type Conversations struct{ h *app.Host }

// ConversationsStatus says whether conversations work, and why not.
type ConversationsStatus struct {
	Available bool   `json:"available"`
	Problem   string `json:"problem"`
}

// ConversationInvite is a Company's request to talk with the user (spec 8.10).
type ConversationInvite struct {
	EventID string `json:"eventId"`
	Reason  string `json:"reason"` // Company content, made visible
	At      string `json:"at"`
}

// ConversationWriting is the text so far of a message being written (spec 8.6).
type ConversationWriting struct {
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
}

// ConversationState is one conversation as the window shows it.
type ConversationState struct {
	Company      string `json:"company"`
	ID           string `json:"id"`
	Title        string `json:"title"`
	Account      string `json:"account"`
	Parent       string `json:"parent"`
	Direct       bool   `json:"direct"`
	Status       string `json:"status"`    // normalized (spec 8.7)
	Responder    string `json:"responder"` // normalized (spec 8.7)
	RawStatus    string `json:"rawStatus"`
	RawResponder string `json:"rawResponder"`
	Pending      int    `json:"pending"`
	// AuthScopes is set while the Company needs the user's account (spec 8.11).
	AuthScopes []string              `json:"authScopes"`
	Invites    []ConversationInvite  `json:"invites"`
	DirectOpen string                `json:"directOpen"`
	Writing    []ConversationWriting `json:"writing"`
	// Total is the number of transcript entries (read them with Entries).
	Total   int    `json:"total"`
	Updated string `json:"updated"`
}

// ConversationAuthor says who wrote a message. Kind is "model" (the user's agent, author.type
// agent on the user's side), "user" (typed by the user in the window), "company-agent" or
// "company-person"; Name and Picture come from the Company (Picture only as a data: URL).
type ConversationAuthor struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Picture string `json:"picture"`
}

// ConversationEntry is one transcript entry (a handled event, spec 8.5).
type ConversationEntry struct {
	EventID   string              `json:"eventId"`
	Type      string              `json:"type"`
	At        string              `json:"at"`
	MessageID string              `json:"messageId"`
	Author    *ConversationAuthor `json:"author"`
	Text      string              `json:"text"`
	// Data is the message's data as JSON text (Company content when from the Company).
	Data string `json:"data"`
	// Operation is set when the message carries an operation for approval (Operations 4).
	Operation string `json:"operation"`
	Revision  string `json:"revision"`
	// state events
	Status       string `json:"status"`
	Responder    string `json:"responder"`
	RawStatus    string `json:"rawStatus"`
	RawResponder string `json:"rawResponder"`
	// authorization, user_requested, direct_opened / direct_closed
	Scope          string `json:"scope"`
	Reason         string `json:"reason"`
	ConversationID string `json:"conversationId"`
}

// ConversationPage is a slice of a transcript and its total length.
type ConversationPage struct {
	From    int                 `json:"from"`
	Entries []ConversationEntry `json:"entries"`
	Total   int                 `json:"total"`
}

// MaxConversationPage bounds the entries one Entries call returns.
const MaxConversationPage = 2000

func (c *Conversations) call() (context.Context, context.CancelFunc, *conversation.Manager, error) {
	if err := c.h.Refusal(); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(windowCause(c.h.Context()), conversationsTimeout)
	return ctx, cancel, c.h.Conversations(), nil
}

// Status says whether conversations are available.
func (c *Conversations) Status() ConversationsStatus {
	if err := c.h.Refusal(); err != nil {
		return ConversationsStatus{Problem: err.Error()}
	}
	return ConversationsStatus{Available: true}
}

// Companies lists the Companies the user can talk with, by name.
func (c *Conversations) Companies() ([]ConversationCompany, error) {
	if c.h.Refusal() != nil {
		return []ConversationCompany{}, nil
	}
	ctx, cancel := context.WithTimeout(c.h.Context(), conversationsTimeout)
	defer cancel()
	cs, err := c.h.ConversationCompanies(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the Companies failed: %w", err)
	}
	out := make([]ConversationCompany, 0, len(cs))
	for _, co := range cs {
		out = append(out, ConversationCompany{Identifier: co.Identifier, Name: visible(co.Name)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// List returns the conversations with a Company, most recently updated first.
func (c *Conversations) List(company string) ([]ConversationState, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return nil, err
	}
	defer cancel()
	vs, err := m.List(ctx, company)
	if err != nil {
		return nil, err
	}
	out := make([]ConversationState, 0, len(vs))
	for _, v := range vs {
		out = append(out, stateOf(v, -1))
	}
	return out, nil
}

// Open returns a conversation's state and follows it with a stream (spec 8.6) so new events and
// text-delta pieces reach the window as they arrive.
func (c *Conversations) Open(company, id string) (ConversationState, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, n, err := m.View(ctx, company, id)
	if err != nil {
		return ConversationState{}, err
	}
	if v.Status != conversation.StatusClosed {
		c.h.Followers().Follow(m, company, id)
	}
	return stateOf(v, n), nil
}

// State returns a conversation's state without following it.
func (c *Conversations) State(company, id string) (ConversationState, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, n, err := m.View(ctx, company, id)
	if err != nil {
		return ConversationState{}, err
	}
	return stateOf(v, n), nil
}

// Entries returns up to limit transcript entries from index from (at most MaxConversationPage).
func (c *Conversations) Entries(company, id string, from, limit int) (ConversationPage, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationPage{}, err
	}
	defer cancel()
	es, total, err := m.Entries(ctx, company, id, from, min(max(limit, 0), MaxConversationPage))
	if err != nil {
		return ConversationPage{}, err
	}
	out := make([]ConversationEntry, 0, len(es))
	for i := range es {
		out = append(out, entryOf(&es[i]))
	}
	return ConversationPage{From: max(0, min(from, total)), Entries: out, Total: total}, nil
}

// Start starts a conversation with the user's first message, typed in the window (author.type
// human, spec 8.3, 8.8), and follows it.
func (c *Conversations) Start(company, text string) (ConversationState, error) {
	if strings.TrimSpace(text) == "" {
		return ConversationState{}, errors.New("type a message first: a conversation starts with a message")
	}
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, err := m.Start(ctx, conversation.Start{Company: company, Account: c.h.ConversationAccount(company), Text: text, AuthorType: conversation.AuthorHuman})
	if err != nil {
		return ConversationState{}, err
	}
	c.h.Followers().Follow(m, v.Company, v.ConversationID)
	_, n, _ := m.View(ctx, v.Company, v.ConversationID)
	return stateOf(v, n), nil
}

// Send sends the user's message typed in the window (author.type human, spec 8.8); the reply
// arrives through the stream.
func (c *Conversations) Send(company, id, text string) (ConversationState, error) {
	if strings.TrimSpace(text) == "" {
		return ConversationState{}, errors.New("type a message first; nothing was sent")
	}
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, err := m.Send(ctx, conversation.Send{Company: company, ConversationID: id, Text: text, AuthorType: conversation.AuthorHuman})
	if err != nil {
		return ConversationState{}, err
	}
	c.h.Followers().Follow(m, company, id)
	_, n, _ := m.View(ctx, company, id)
	return stateOf(v, n), nil
}

// Handoff asks for a person at the Company (spec 8.9).
func (c *Conversations) Handoff(company, id string) (ConversationState, error) {
	return c.simple(company, id, (*conversation.Manager).Handoff)
}

// Close closes the conversation (spec 8.12).
func (c *Conversations) Close(company, id string) (ConversationState, error) {
	st, err := c.simple(company, id, (*conversation.Manager).Close)
	if err == nil {
		c.h.Followers().Unfollow(company, id)
	}
	return st, err
}

func (c *Conversations) simple(company, id string, f func(*conversation.Manager, context.Context, string, string) (*conversation.View, error)) (ConversationState, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, err := f(m, ctx, company, id)
	if err != nil {
		return ConversationState{}, err
	}
	_, n, _ := m.View(ctx, company, id)
	return stateOf(v, n), nil
}

// AcceptUserRequest starts the Direct Conversation the Company asked for (spec 8.10). It is the
// ONLY path to Manager.AcceptUserRequest: the user's Accept button in the window.
func (c *Conversations) AcceptUserRequest(company, parentID, eventID string) (ConversationState, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, err := m.AcceptUserRequest(ctx, company, parentID, eventID, 0)
	if err != nil {
		return ConversationState{}, err
	}
	c.h.Followers().Follow(m, v.Company, v.ConversationID)
	_, n, _ := m.View(ctx, v.Company, v.ConversationID)
	return stateOf(v, n), nil
}

// DeclineUserRequest tells the Company the user declined (spec 8.10).
func (c *Conversations) DeclineUserRequest(company, parentID, eventID string) (ConversationState, error) {
	ctx, cancel, m, err := c.call()
	if err != nil {
		return ConversationState{}, err
	}
	defer cancel()
	v, err := m.DeclineUserRequest(ctx, company, parentID, eventID)
	if err != nil {
		return ConversationState{}, err
	}
	_, n, _ := m.View(ctx, company, parentID)
	return stateOf(v, n), nil
}

// ---- conversions ----

func stateOf(v *conversation.View, total int) ConversationState {
	st := ConversationState{Company: v.Company, ID: v.ConversationID, Title: visibleText(v.Title), Account: v.Account, Parent: v.Parent, Direct: v.Direct,
		Status: v.Status, Responder: v.Responder, RawStatus: visible(v.RawStatus), RawResponder: visible(v.RawResponder), Pending: v.Pending,
		AuthScopes: []string{}, Invites: []ConversationInvite{}, DirectOpen: v.DirectOpen, Writing: []ConversationWriting{}, Total: total}
	if total < 0 {
		st.Total = 0
	}
	if !v.Updated.IsZero() {
		st.Updated = v.Updated.UTC().Format(time.RFC3339)
	}
	if v.Auth != nil {
		for _, s := range v.Auth.Scopes {
			st.AuthScopes = append(st.AuthScopes, visible(s))
		}
	}
	for _, inv := range v.Invites {
		st.Invites = append(st.Invites, ConversationInvite{EventID: inv.EventID, Reason: visibleText(inv.Reason), At: timeText(inv.At)})
	}
	ids := make([]string, 0, len(v.Writing))
	for id := range v.Writing {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		st.Writing = append(st.Writing, ConversationWriting{MessageID: id, Text: visibleText(v.Writing[id])})
	}
	return st
}

func entryOf(e *conversation.Entry) ConversationEntry {
	out := ConversationEntry{EventID: e.EventID, Type: e.Type, At: timeText(e.CreatedAt), MessageID: e.MessageID, Text: visibleText(e.Text),
		Operation: visible(e.OperationID), Revision: visible(e.Revision), Status: e.Status, Responder: e.Responder,
		RawStatus: visible(e.RawStatus), RawResponder: visible(e.RawResponder), Scope: visible(e.Scope), Reason: visibleText(e.Reason),
		ConversationID: e.ConversationID}
	if len(e.Data) > 0 && string(e.Data) != "null" {
		out.Data = visibleText(compactJSON(e.Data))
	}
	if e.Type == conversation.EventMessage && e.Author != nil {
		out.Author = authorOf(e.Role, e.Author)
	}
	return out
}

// authorOf says who wrote a message (spec 8.4, 8.8). On the user's side, author.type "agent" is
// the model (or Poppydesk) and "human" the user typing in the window; on the Company's side,
// "agent" is the Company Agent and "human" a person, with the name and picture the Company gave.
func authorOf(role string, a *conversation.Author) *ConversationAuthor {
	if role != "company" {
		if a.Type == conversation.AuthorHuman {
			return &ConversationAuthor{Kind: "user"}
		}
		return &ConversationAuthor{Kind: "model"}
	}
	if a.Type == conversation.AuthorAgent {
		return &ConversationAuthor{Kind: "company-agent", Name: visible(a.Name)}
	}
	return &ConversationAuthor{Kind: "company-person", Name: visible(a.Name), Picture: dataPicture(a.Image)}
}

var dataPictureRE = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+=*$`)

// maxPicture bounds a data: URL picture (bytes of the URL).
const maxPicture = 256 << 10

// dataPicture returns src when it is a base64 data: URL of a raster image (PNG, JPEG, GIF or
// WebP) of reasonable size, and "" otherwise: the window never loads a picture from an address
// (its CSP forbids it; spec 10.1) and shows a placeholder instead.
func dataPicture(src string) string {
	if len(src) > maxPicture || !dataPictureRE.MatchString(src) {
		return ""
	}
	return src
}

// visibleText is operations.Visible for message text: line breaks and tabs stay, every other
// invisible or direction-changing character becomes a visible token.
func visibleText(s string) string { return visible(s) }

func compactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
