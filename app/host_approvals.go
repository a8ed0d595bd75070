package app

// What the Host does when the approval queue changes (Operations 5–7): the window hears of it
// at once, the Approvals badge is counted again, and a new approval or new terms show a desktop
// notification while the window is not focused (host_attention.go). The notification is a
// courtesy; the badge and the dialog are the record.

import (
	"context"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
)

// EventApprovalsChanged tells the window that an approval was created or changed; its data is
// an [ApprovalChange]. The window reads the list again and opens the dialog for a new item.
const EventApprovalsChanged = "approvals:changed"

// ApprovalChange is the data of EventApprovalsChanged.
type ApprovalChange struct {
	Kind  string `json:"kind"` // "created", "revision" or "state"
	ID    string `json:"id"`
	State string `json:"state"`
}

// ApprovalsPageMax is the most decided approvals one page of [Host.EarlierApprovals] holds.
const ApprovalsPageMax = 100

// approvalChanged is the queue's OnChange. It never blocks for long: the window's event goes
// out at once, the count and the notification follow under the Host's lifecycle.
func (h *Host) approvalChanged(ev approvals.Event) {
	h.shownClock.sent(ev.ApprovalID, h.now())
	h.relay.Emit(EventApprovalsChanged, ApprovalChange{Kind: ev.Kind, ID: ev.ApprovalID, State: ev.State})
	h.log.Info("approval change sent to the window", "approval", ev.ApprovalID, "kind", ev.Kind, "state", ev.State)
	if err := h.life.Go("the approval badge and notification", func(ctx context.Context) { h.afterApprovalChange(ctx, ev) }); err != nil {
		h.log.Debug("no badge update or notification: Poppydesk is shutting down", "approval", ev.ApprovalID)
	}
}

func (h *Host) afterApprovalChange(ctx context.Context, ev approvals.Event) {
	h.countApprovals(ctx)
	if ev.Kind != "created" && ev.Kind != "revision" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	it, err := h.queue.Get(ctx, ev.ApprovalID)
	if err != nil {
		h.log.Debug("no notification: reading the approval failed", "approval", ev.ApprovalID, "err", err)
		return
	}
	h.notify(approvalNotice(ev.Kind, it.CompanyName))
}

// approvalNotice is the desktop notification of a new approval ("created") or of new terms
// ("revision"): the Company's verified name, made visible, and what to do.
func approvalNotice(kind, companyName string) (title, body string) {
	name := operations.Visible(companyName)
	if kind == "revision" {
		return "New terms from " + name, name + " changed the terms of an approval you have not decided yet. Open Poppydesk to read them."
	}
	return "Approval needed: " + name, name + " needs your approval before it acts. Open Poppydesk to read the terms and decide."
}

// openStates are the approval states that are not final (operations.State.Final): the window
// lists them whole, and the decided ones a page at a time.
var openStates = []string{string(operations.StatePending), string(operations.StateApproved), string(operations.StateSending),
	string(operations.StateRetrying), string(operations.StateOutcomeUnknown)}

// Approvals lists the queue's open items (waiting for the user, approved and being sent, or with
// an unknown outcome), pending first, newest first, and counts again those waiting for a
// decision (the Approvals badge). Decided items are never read here, so a long history costs
// nothing at start or after a change: [Host.EarlierApprovals] pages through them.
func (h *Host) Approvals(ctx context.Context) ([]approvals.Row, error) {
	if err := h.Refusal(); err != nil {
		return nil, err
	}
	var items []approvals.Row
	for _, pending := range []bool{true, false} {
		states := openStates[:1]
		if !pending {
			states = openStates[1:]
		}
		cursor := ""
		for {
			page, next, err := h.queue.ListRows(ctx, states, nil, cursor, ApprovalsPageMax)
			if err != nil {
				return nil, err
			}
			items = append(items, page...)
			if next == "" {
				break
			}
			cursor = next
		}
	}
	h.pending.Store(int64(countDecidable(items, h.now())))
	return items, nil
}

// EarlierApprovals returns a page of the decided approvals (succeeded, failed, declined,
// expired, superseded), newest first, from cursor ("" for the newest; the next cursor of the
// previous page), at most limit of them (1 to ApprovalsPageMax), and the cursor of the next page
// ("" on the last). One range scan of an index of the state database, and one read of the page's
// decision logs.
func (h *Host) EarlierApprovals(ctx context.Context, cursor string, limit int) ([]approvals.Row, string, error) {
	if err := h.Refusal(); err != nil {
		return nil, "", err
	}
	if limit <= 0 || limit > ApprovalsPageMax {
		limit = ApprovalsPageMax
	}
	return h.queue.ListRows(ctx, nil, openStates, cursor, limit)
}

// countApprovals reads the queue to update the Approvals badge (at start, after Recover, and
// after every change) and tells the window.
func (h *Host) countApprovals(ctx context.Context) {
	if _, err := h.Approvals(ctx); err != nil {
		h.log.Warn("counting the pending approvals failed", "err", err)
	}
	h.relay.Emit(EventSections)
	h.updateBadge()
}

// ApprovalsWaiting is how many approvals wait for the user's decision (the Approvals badge): the
// window asks before it closes while any do ([EventWindowCloseRequested]).
func (h *Host) ApprovalsWaiting() int {
	n, _ := h.Waiting()
	return n
}

// The window's closing, between the desktop window (app/cli) and the page: the window asks the
// page to confirm (EventWindowCloseRequested, with a [CloseRequest]) when approvals are waiting,
// and the page answers with EventWindowCloseConfirmed when the user chooses to close anyway.
const (
	EventWindowCloseRequested = "window:close-requested"
	EventWindowCloseConfirmed = "window:close-confirmed"
)

// CloseRequest is the data of [EventWindowCloseRequested]: how many approvals wait.
type CloseRequest struct {
	Waiting int `json:"waiting"`
}

// SinceApprovalSent is the time from the latest change of approval id the Host sent to the
// window to now, on the Host's clock (ok false when it is not known): how long the window took
// to show its dialog.
func (h *Host) SinceApprovalSent(id string) (time.Duration, bool) {
	return h.shownClock.since(id, h.now())
}

// Decidable reports whether the user can still approve or decline an approval in state whose
// current revision expires at expires: it is pending and has not expired (Operations 5).
func Decidable(state string, expires, now time.Time) bool {
	return state == string(operations.StatePending) && now.Before(expires)
}

// countDecidable counts the items the user can still decide.
func countDecidable(items []approvals.Row, now time.Time) int {
	n := 0
	for i := range items {
		if Decidable(items[i].State, items[i].ExpiresAt, now) {
			n++
		}
	}
	return n
}

// maxShownClock bounds the approvals whose last event time is kept for the window's report.
const maxShownClock = 64

// dialogClock keeps when the latest change of each approval went to the window, so that the
// window's report that the dialog is on screen ([Host.SinceApprovalSent]) is measured from the
// engine's event on the Host's own clock.
type dialogClock struct {
	mu   sync.Mutex
	at   map[string]time.Time
	keys []string
}

func (c *dialogClock) sent(id string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[string]time.Time{}
	}
	if _, ok := c.at[id]; !ok {
		c.keys = append(c.keys, id)
		if len(c.keys) > maxShownClock {
			delete(c.at, c.keys[0])
			c.keys = c.keys[1:]
		}
	}
	c.at[id] = t
}

// since is the time from the latest event of id to t (ok false when it is not known).
func (c *dialogClock) since(id string, t time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[id]
	if !ok {
		return 0, false
	}
	return t.Sub(at), true
}
