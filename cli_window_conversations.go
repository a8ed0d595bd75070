package main

// The window's conversation view (issue 8): a runtime hook that binds app.Conversations over the
// window's conversation Manager (cli_conversations.go, built on first use over the engine the
// approvals hook opened), and at window start resumes conversations: starts and messages that
// were persisted but not accepted before Poppydesk stopped are sent again with the same IDs and
// content (spec 8.3, Manager.Resume). Conversation changes reach the window as
// conversations:changed events (the Manager's OnUpdate, cli_conversations.go). It runs after
// the approvals hook (file order), which opens the engine.

import (
	"context"
	"errors"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/app"
)

func init() { runtimeHooks = append(runtimeHooks, conversationsHook) }

func conversationsHook(ctx context.Context, rt *windowRuntime, o *windowOptions) error {
	if bindingsBuild {
		rt.services = append(rt.services, &app.Conversations{})
		return nil
	}
	manager := func() (app.ConversationManager, error) {
		m, err := windowConversationManager(rt)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	svc := app.NewConversations(app.ConversationsConfig{Manager: manager, Context: rt.lifecycle.Context(), Log: rt.log,
		Companies: func(ctx context.Context) ([]app.ConversationCompany, error) {
			return windowConversationCompanies(ctx, rt)
		},
		Account: func(ctx context.Context, company string) string {
			if w := windowEngineOf(rt); w != nil && w.demo != nil && company == w.demo.info.Identifier {
				return demoAccount
			}
			return ""
		}})
	rt.services = append(rt.services, svc)
	return rt.lifecycle.Go("conversations", func(lctx context.Context) {
		if m, err := windowConversationManager(rt); err == nil {
			resumeConversations(lctx, rt, m)
		}
		<-lctx.Done()
		app.StopConversations(svc)
	})
}

// resumeConversations sends again what was persisted but not accepted, for every Company with
// conversations (spec 8.3). A failure is logged: the messages stay persisted for the next start.
func resumeConversations(ctx context.Context, rt *windowRuntime, m *conversation.Manager) {
	w := windowEngineOf(rt)
	if w == nil || w.st == nil {
		return
	}
	cos, err := w.st.ListCompanies(ctx)
	if err != nil {
		rt.log.Warn("listing Companies to resume conversations failed; unsent messages are sent at the next start", "err", err)
		return
	}
	for _, co := range cos {
		convs, err := w.st.ListConversations(ctx, co.Identifier)
		if err != nil || len(convs) == 0 {
			continue
		}
		if err := m.Resume(ctx, co.Identifier); err != nil && !errors.Is(err, context.Canceled) {
			rt.log.Warn("resuming conversations failed; the unsent messages stay saved and are sent again at the next start", "company", co.Identifier, "err", err)
		}
	}
}

// windowConversationCompanies lists the discovered Companies with their verified names.
func windowConversationCompanies(ctx context.Context, rt *windowRuntime) ([]app.ConversationCompany, error) {
	w := windowEngineOf(rt)
	if w == nil || w.st == nil || w.eng == nil {
		return []app.ConversationCompany{}, nil
	}
	cos, err := w.st.ListCompanies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]app.ConversationCompany, 0, len(cos))
	for _, co := range cos {
		name := co.Domain
		if d, err := w.eng.Company(ctx, co.Identifier); err == nil {
			if _, ok := conversation.Endpoint(d); !ok {
				continue // no `poppy` conversation protocol (spec 8.1)
			}
			if d.Organization.Name != "" {
				name = d.Organization.Name
			}
		}
		out = append(out, app.ConversationCompany{Identifier: co.Identifier, Name: name})
	}
	return out, nil
}
