package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

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
