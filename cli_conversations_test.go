package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// TestConversationSurvivesRestart: a conversation survives a Poppydesk restart in the middle of a
// streamed message (a new engine and Manager over the same SQLite state file and keyring): every
// Company message is handled exactly once, none lost or duplicated (spec 8.3, 8.5, 8.6).
func TestConversationSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetAgentFault(poppytest.AgentFaultSlowStream, true)
	secrets := store.NewSecrets(store.NewMemoryKV())
	path := filepath.Join(t.TempDir(), "state.sqlite")
	log := slog.New(slog.DiscardHandler)

	var mu sync.Mutex
	handled := map[string]int{}
	deltas := 0
	open := func() (*conversation.Manager, string, func()) {
		eng, st, closeAll, err := openEngine(ctx, path, engine.Config{Transport: s.ClientConfig(), Secrets: secrets, Logger: log,
			Identity: identity.Config{ClientID: s.URL(poppytest.AgentHost, "/agent.json"), ClientName: "restart test"}})
		if err != nil {
			t.Fatal(err)
		}
		s.AddHost(poppytest.AgentHost, eng.Agent().Handler(log))
		c, err := eng.Discover(ctx, s.Domain)
		if err != nil {
			t.Fatal(err)
		}
		m, err := conversation.New(conversation.Config{Engine: eng, Store: conversationStore{st: st}, Logger: log,
			OnUpdate: func(u conversation.Update) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case u.Kind == conversation.UpdateEntry && u.Entry.Role == "company":
					handled[u.Entry.MessageID]++
				case u.Kind == conversation.UpdateDelta:
					deltas++
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return m, c.Identifier, func() { closeAll(context.Background()) }
	}

	m, company, stop := open()
	v, err := m.Start(ctx, conversation.Start{Company: company, Text: "Tell me a long story"})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ConversationID
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Stream(sctx, company, id) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := deltas
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing streamed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	scancel() // Poppydesk stops mid-message
	<-done
	stop()

	s.SetAgentFault(poppytest.AgentFaultSlowStream, false)
	m2, _, stop2 := open()
	defer stop2()
	sctx2, scancel2 := context.WithCancel(ctx)
	defer scancel2()
	go func() { done <- m2.Stream(sctx2, company, id) }()
	deadline = time.Now().Add(10 * time.Second)
	for {
		want := s.AgentMessageIDs(id)
		mu.Lock()
		ok := len(want) > 0 && len(handled) == len(want)
		for _, mid := range want {
			ok = ok && handled[mid] == 1
		}
		got := len(handled)
		mu.Unlock()
		if ok && s.AgentEventCount(id) > 0 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("after the restart: handled %v (%d), Company messages %v", handled, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, n := range handled {
		if n != 1 {
			t.Fatalf("a message was handled %d times", n)
		}
	}
	scancel2()
	<-done
}
