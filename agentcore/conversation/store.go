package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

func key(company, id string) string { return company + "\x00" + id }

func (m *Manager) load(ctx context.Context, company, id string) (*conv, error) {
	m.mu.Lock()
	c := m.convs[key(company, id)]
	m.mu.Unlock()
	if c != nil {
		return c, nil
	}
	rec, err := m.cfg.Store.GetConversation(ctx, company, id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Op: "open", Company: company, ConversationID: id, Code: "not_found", Msg: "Poppydesk has no conversation with this ID at this Company; list the conversations or start one", Err: err}
		}
		return nil, fmt.Errorf("conversation: reading conversation %s from the state database: %w", id, err)
	}
	c = &conv{company: company, id: id, account: rec.Account, cursor: rec.Cursor, handled: map[string]bool{}, deltas: map[string]*deltaText{}, updated: rec.Updated}
	if err := json.Unmarshal([]byte(rec.State), &c.st); err != nil {
		return nil, fmt.Errorf("conversation: the stored state of conversation %s is unreadable: %w", id, err)
	}
	for _, h := range c.st.Handled {
		c.handled[h] = true
	}
	m.mu.Lock()
	if old := m.convs[key(company, id)]; old != nil {
		c = old
	} else if !m.done(c) {
		m.convs[key(company, id)] = c
	}
	m.mu.Unlock()
	return c, nil
}

// save writes c durably (the caller holds c.mu): with transcripts in the Store, the entries
// handled since the last save go in the same transaction as the cursor and handled IDs that cover
// them, so after a crash the transcript and the cursor agree (spec 8.5); on failure they stay
// unsaved and go with the next save. The write must land even when the caller's context ended.
func (m *Manager) save(ctx context.Context, c *conv) error {
	c.updated = m.cfg.Now()
	b, err := json.Marshal(c.st)
	if err != nil {
		return err
	}
	rec := store.Conversation{Company: c.company, ID: c.id, Account: c.account, Cursor: c.cursor, State: string(b), Updated: c.updated}
	ctx = context.WithoutCancel(ctx)
	if m.es == nil || len(c.unsaved) == 0 {
		if err := m.cfg.Store.PutConversation(ctx, rec); err != nil {
			return fmt.Errorf("conversation: saving conversation %s failed: %w", c.id, err)
		}
		m.dropIfDone(c)
		return nil
	}
	recs := make([]store.ConversationEntry, 0, len(c.unsaved))
	for _, e := range c.unsaved {
		eb, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("conversation: encoding transcript entry %s of conversation %s: %w", e.EventID, c.id, err)
		}
		recs = append(recs, store.ConversationEntry{EventID: e.EventID, Entry: string(eb)})
	}
	n, err := m.es.SaveConversation(ctx, rec, recs)
	if err != nil {
		return fmt.Errorf("conversation: saving conversation %s and %d transcript entries failed: %w", c.id, len(recs), err)
	}
	c.unsaved, c.stored, c.storedKnown = nil, n, true
	m.dropIfDone(c)
	return nil
}

// dropIfDone lets go of a closed conversation once everything of it is saved (the caller holds
// c.mu): a closed conversation takes no more messages (spec 8.12), and when the Store keeps
// transcripts, reading it again loads it from there (load does not keep it either). So the
// Manager holds only the conversations that can still change, however many a long run closed.
func (m *Manager) dropIfDone(c *conv) {
	if !m.done(c) {
		return
	}
	m.mu.Lock()
	if m.convs[key(c.company, c.id)] == c {
		delete(m.convs, key(c.company, c.id))
	}
	m.mu.Unlock()
}

// done reports whether c is closed with nothing of it left to save or send, and the Store keeps
// its transcript.
func (m *Manager) done(c *conv) bool {
	return m.es != nil && NormalizeStatus(c.st.Status) == StatusClosed && len(c.unsaved) == 0 && len(c.st.Pending) == 0 && len(c.deltas) == 0
}

// count returns the length of c's transcript (the caller holds c.mu). With transcripts in the
// Store the stored count is read once (one index seek), then kept by save.
func (m *Manager) count(ctx context.Context, c *conv) (int, error) {
	if m.es == nil {
		return len(c.entries), nil
	}
	if !c.storedKnown {
		_, n, err := m.es.ConversationEntries(ctx, c.company, c.id, 0, 0)
		if err != nil {
			return 0, fmt.Errorf("conversation: reading the transcript length of conversation %s from the state database: %w", c.id, err)
		}
		c.stored, c.storedKnown = n, true
	}
	return c.stored + len(c.unsaved), nil
}

// entriesRange returns entries [from, from+limit) of c's transcript and its length (the caller
// holds c.mu): stored entries are read by range from the Store, the unsaved ones follow.
func (m *Manager) entriesRange(ctx context.Context, c *conv, from, limit int) ([]Entry, int, error) {
	n, err := m.count(ctx, c)
	if err != nil {
		return nil, 0, err
	}
	from = max(0, min(from, n))
	end := min(n, from+max(limit, 0))
	if m.es == nil {
		return append([]Entry(nil), c.entries[from:end]...), n, nil
	}
	out := make([]Entry, 0, end-from)
	if from < c.stored {
		recs, _, err := m.es.ConversationEntries(ctx, c.company, c.id, from, min(end, c.stored)-from)
		if err != nil {
			return nil, 0, fmt.Errorf("conversation: reading the transcript of conversation %s from the state database: %w", c.id, err)
		}
		for _, r := range recs {
			var e Entry
			if err := json.Unmarshal([]byte(r.Entry), &e); err != nil {
				return nil, 0, fmt.Errorf("conversation: the stored transcript entry %s of conversation %s is unreadable (move the state database aside to start fresh): %w", r.EventID, c.id, err)
			}
			out = append(out, e)
		}
	}
	for i := max(from, c.stored); i < end; i++ {
		out = append(out, c.unsaved[i-c.stored])
	}
	return out, n, nil
}

func (c *conv) markHandled(id string) {
	if c.handled[id] {
		return
	}
	c.handled[id] = true
	c.st.Handled = append(c.st.Handled, id)
	if n := len(c.st.Handled); n > maxHandled {
		for _, old := range c.st.Handled[:n-maxHandled] {
			delete(c.handled, old)
		}
		c.st.Handled = append([]string(nil), c.st.Handled[n-maxHandled:]...)
	}
}

// Get returns a conversation with its transcript: with transcripts in the Store the stored
// transcript (also from before a restart), otherwise the entries handled in this run; at most
// the last 20000.
// The window pages with View and Entries instead.
func (m *Manager) Get(ctx context.Context, company, id string) (*View, []Entry, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := m.count(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	es, _, err := m.entriesRange(ctx, c, n-maxEntries, maxEntries)
	if err != nil {
		return nil, nil, err
	}
	return c.view(), es, nil
}

// View returns a conversation's current state (status, invites, text being written) and the
// length of its transcript without reading the transcript: the window asks for it on every
// change. After a restart the length is read once from the Store (one index seek).
func (m *Manager) View(ctx context.Context, company, id string) (*View, int, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := m.count(ctx, c)
	if err != nil {
		return nil, 0, err
	}
	return c.view(), n, nil
}

// Entries returns entries [from, from+limit) of the transcript and its length. With transcripts
// in the Store that is the whole history, also from before a restart, read by range (only the
// page asked for is read); otherwise the entries handled in this run.
func (m *Manager) Entries(ctx context.Context, company, id string, from, limit int) ([]Entry, int, error) {
	c, err := m.load(ctx, company, id)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.entriesRange(ctx, c, from, limit)
}

// List returns the conversations with a Company, most recently updated first.
func (m *Manager) List(ctx context.Context, company string) ([]*View, error) {
	recs, err := m.cfg.Store.ListConversations(ctx, company)
	if err != nil {
		return nil, fmt.Errorf("conversation: listing conversations: %w", err)
	}
	var out []*View
	for _, r := range recs {
		if strings.HasPrefix(r.ID, startPrefix) {
			continue
		}
		c, err := m.load(ctx, company, r.ID)
		if err != nil {
			continue
		}
		c.mu.Lock()
		out = append(out, c.view())
		c.mu.Unlock()
	}
	return out, nil
}

// Resume runs at start: starts and messages persisted but not accepted before Poppydesk stopped
// are sent again with the same IDs and content (spec 8.3), never as new messages.
func (m *Manager) Resume(ctx context.Context, company string) error {
	recs, err := m.cfg.Store.ListConversations(ctx, company)
	if err != nil {
		return fmt.Errorf("conversation: reading conversations to resume: %w", err)
	}
	var errs []error
	for _, r := range recs {
		var st state
		if json.Unmarshal([]byte(r.State), &st) != nil || len(st.Pending) == 0 {
			continue
		}
		if strings.HasPrefix(r.ID, startPrefix) {
			sc := &conv{company: r.Company, id: r.ID, account: r.Account, st: st, handled: map[string]bool{}, deltas: map[string]*deltaText{}}
			sc.mu.Lock()
			_, err := m.sendStart(ctx, sc, 0)
			sc.mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		c, err := m.load(ctx, company, r.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.mu.Lock()
		_, err = m.flushPending(ctx, c, 0)
		c.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WaitChange blocks until any conversation changes or d passes.
func (m *Manager) WaitChange(ctx context.Context, d time.Duration) {
	ch, done := m.subscribe()
	defer done()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
