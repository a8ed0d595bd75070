package main

// Conversations with Company Agents in the window: the window's conversation Manager, built
// lazily over the engine, the state database and the approval queue the approvals hook opened
// (windowEngineOf), whose operations go to that queue (Operations 4, "Conversations"). The model's
// conversation tools reach it through windowActions.Conversations (agentcore/modelapi's
// ConversationProvider).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/app"
)

var windowConversations sync.Map // *windowRuntime → *conversation.Manager

// errConversationsOff is what the model hears while the window has no engine.
var errConversationsOff = errors.New("Poppydesk's engine is not running in this window (its Approvals section says why), so conversations are off; nothing was done; tell the user")

// windowConversationManager returns the window's conversation Manager, building it on first use
// over the window's engine, state database and approval queue.
func windowConversationManager(rt *windowRuntime) (*conversation.Manager, error) {
	if v, ok := windowConversations.Load(rt); ok {
		return v.(*conversation.Manager), nil
	}
	w := windowEngineOf(rt)
	if w == nil || w.eng == nil || w.st == nil {
		return nil, errConversationsOff
	}
	cfg := conversation.Config{Engine: w.eng, Store: w.st, Logger: rt.log,
		OnUpdate: func(u conversation.Update) { rt.relay.Emit(EventConversations, app.ConversationChangeOf(u)) }}
	if q := w.queue; q != nil {
		cfg.OnOperation = func(ctx context.Context, f conversation.OperationFound) {
			if _, err := q.ProposeFromConversation(ctx, f); err != nil {
				rt.log.Warn("an operation in a conversation could not be put in the approval queue", "company", f.Company, "conversation", f.ConversationID, "err", err)
			}
		}
	}
	m, err := conversation.New(cfg)
	if err != nil {
		return nil, err
	}
	v, _ := windowConversations.LoadOrStore(rt, m)
	return v.(*conversation.Manager), nil
}

// EventConversations says a conversation changed (the window's conversation view listens).
const EventConversations = app.EventConversationsChanged

// Conversations gives the model's conversation tools the window's Manager
// (modelapi.ConversationProvider).
func (w *windowActions) Conversations() (*conversation.Manager, error) {
	return windowConversationManager(w.rt)
}

// windowConversationSender sends conversation approvals through the window's Manager, resolved
// at each send (approvals.ConversationSender). The approvals hook passes it as
// approvals.Config.Conversations; the Manager is built after the queue, so it is looked up late.
type windowConversationSender struct{ rt *windowRuntime }

var _ approvals.ConversationSender = windowConversationSender{}

func (s windowConversationSender) SendApproval(ctx context.Context, company, id, messageID string, a operations.Approval, wait time.Duration) (*conversation.View, error) {
	m, err := windowConversationManager(s.rt)
	if err != nil {
		return nil, err
	}
	return m.SendApproval(ctx, company, id, messageID, a, wait)
}
