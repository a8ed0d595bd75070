package app

// The Host's conversations with Company Agents (spec 8; agentcore/conversation): which
// Companies the user can talk with, which account the window's conversations act for, and how a
// change reaches the window.

import (
	"context"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/vault"
)

// EventConversationsChanged tells the window that a conversation changed; its data is a
// [ConversationChange].
const EventConversationsChanged = "conversations:changed"

// ConversationChange is the data of EventConversationsChanged: which conversation changed and
// how. For "entry" MessageID names the handled message (if the entry is one); for "delta" Text
// is the text received so far of message MessageID (spec 8.6), already made visible.
type ConversationChange struct {
	Kind           string `json:"kind"`
	Company        string `json:"company"`
	ConversationID string `json:"conversationId"`
	MessageID      string `json:"messageId,omitempty"`
	Text           string `json:"text,omitempty"`
}

// conversationChangeOf converts a Manager update into the window's event data.
func conversationChangeOf(u conversation.Update) ConversationChange {
	ch := ConversationChange{Kind: u.Kind, Company: u.Company, ConversationID: u.ConversationID, MessageID: u.MessageID}
	if u.Entry != nil && ch.MessageID == "" {
		ch.MessageID = u.Entry.MessageID
	}
	if u.Kind == conversation.UpdateDelta {
		ch.Text = operations.Visible(u.Text)
	}
	return ch
}

// ConversationAccount is the account the window's conversations act for at company: the demo
// account at the demo's reference Company, signed out ("") elsewhere.
func (h *Host) ConversationAccount(company string) string {
	if h.demo != nil && company == h.demo.info.Identifier {
		return DemoAccount
	}
	return ""
}

// ConversationCompanies lists the Companies with a Company Agent (spec 8.1), with their
// verified names, from the state database's list columns, in name order; a Company stored
// before those columns is read whole.
func (h *Host) ConversationCompanies(ctx context.Context) ([]vault.CompanyRef, error) {
	if err := h.Refusal(); err != nil {
		return nil, err
	}
	out := []vault.CompanyRef{}
	q := vault.CompanyQuery{Talk: true, Limit: CompaniesPageMax}
	for {
		refs, err := h.state.ListCompanyRefs(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			name := r.Name
			if name == "" { // stored before the list columns: its document says
				d, err := h.engine.Company(ctx, r.Identifier)
				if err != nil {
					continue
				}
				if _, ok := d.AgentEndpoint(); !ok {
					continue
				}
				if name = d.Organization.Name; name == "" {
					name = r.Domain
				}
			}
			r.Name = name
			out = append(out, r)
		}
		if len(refs) < q.Limit {
			return out, nil
		}
		q.AfterName, q.AfterID = refs[len(refs)-1].Name, refs[len(refs)-1].Identifier
	}
}
