package app

// Nothing waits unseen, and nothing takes the user's keyboard: what needs the user (an approval,
// a sign-in the model asked for) has a badge on its section and a count on the application's
// taskbar entry (a [Counter], the launcher entry of docks and taskbars) and, while the window is
// not focused, asks for attention the way desktops let an application do without stealing the
// focus: the window's urgency hint (the desktop window attaches it with [Host.SetUrgency]) and,
// unless the user turned them off, a desktop notification. The window is never raised and never
// takes the focus for it (docs/DESIGN.md): the user decides when they come to Poppydesk. The window
// tells the Host when it gains or loses focus ([Host.SetWindowFocus]: Wails v2 has no focus event
// of its own); the notifications setting is kept in the state database.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// Counter shows how many things wait for the user on the application's taskbar entry (0 hides
// the count). [DesktopNotifier] is one.
type Counter interface {
	Count(n int)
}

// SettingNotifications is the state setting that turns desktop notifications off ("off") or on
// (anything else, the default).
const SettingNotifications = "window.notifications"

// attention is what the Host keeps to decide whether to notify.
type attention struct {
	focused atomic.Bool // the window has the keyboard focus (as it last said)
	muted   atomic.Bool // the user turned notifications off
	urgency atomic.Pointer[func(on bool)]
	mu      sync.Mutex
	seen    map[string]bool // the sign-in requests already announced
	counted int             // the count last shown on the taskbar entry (at start none: 0)
}

// SetUrgency gives the Host the window's urgency hint (the taskbar's "needs attention", which
// never raises the window or moves the focus); the desktop window sets it once it runs.
func (h *Host) SetUrgency(urgent func(on bool)) { h.attention.urgency.Store(&urgent) }

// urgent sets or clears the window's urgency hint, when the window has one.
func (h *Host) urgent(on bool) {
	if f := h.attention.urgency.Load(); f != nil && *f != nil {
		(*f)(on)
	}
}

// windowFocused records the window's focus; coming back to the window ends its request for
// attention.
func (h *Host) windowFocused(focused bool) {
	h.attention.focused.Store(focused)
	if focused {
		h.urgent(false)
	}
}

// updateBadge shows on the taskbar entry how many approvals and sign-ins wait for the user, when
// the count changed.
func (h *Host) updateBadge() {
	c, ok := h.notifier.(Counter)
	if !ok {
		return
	}
	approvals, signIns := h.Waiting()
	n := approvals + signIns
	h.attention.mu.Lock()
	changed := h.attention.counted != n
	h.attention.counted = n
	h.attention.mu.Unlock()
	if changed {
		c.Count(n)
	}
}

// loadAttention reads the notifications setting (at start).
func (h *Host) loadAttention(ctx context.Context) {
	if h.state == nil {
		return
	}
	v, err := h.state.GetSetting(ctx, SettingNotifications)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		h.log.Warn("reading the notifications setting failed; notifications stay on", "err", err)
	}
	h.attention.muted.Store(v == "off")
}

// notify asks for the user's attention while the window does not have the focus (there the user
// sees the badge and the dialog): the window's urgency hint, and a desktop notification unless
// the user turned notifications off.
func (h *Host) notify(title, body string) {
	if h.attention.focused.Load() {
		h.log.Debug("no desktop notification: the window has the focus", "title", title)
		return
	}
	h.urgent(true)
	switch {
	case h.notifier == nil:
	case h.attention.muted.Load():
		h.log.Debug("no desktop notification: notifications are off in Settings", "title", title)
	default:
		h.notifier.Notify(title, body)
	}
}

// signInRequestsChanged is the model's sign-in requests' onChange: the Sign-in screen reads
// them again, the Sign-in badge is counted again, and each new request is announced once.
func (h *Host) signInRequestsChanged() {
	h.relay.Emit(EventSignInRequests)
	h.relay.Emit(EventSections)
	if h.signIns == nil {
		return
	}
	h.updateBadge()
	rs, err := h.signIns.List(context.Background())
	if err != nil {
		return
	}
	var fresh []string
	h.attention.mu.Lock()
	now := map[string]bool{}
	for _, r := range rs {
		now[r.ID] = true
		if !h.attention.seen[r.ID] {
			name := r.CompanyName
			if name == "" {
				name = r.Domain
			}
			fresh = append(fresh, operations.Visible(name))
		}
	}
	h.attention.seen = now
	h.attention.mu.Unlock()
	for _, name := range fresh {
		h.notify(signInNotice(name))
	}
}

// signInNotice is the desktop notification of a sign-in the model asked for.
func signInNotice(companyName string) (title, body string) {
	return "Sign-in requested: " + companyName, "Your agent asks you to sign in to " + companyName + ". Open Poppydesk to see why and decide."
}

// Waiting is what the section badges count: the approvals waiting for the user's decision (as
// of the last change or listing) and the model's open sign-in requests. Zero while the Host
// cannot act ([Host.Refusal]).
func (h *Host) Waiting() (approvals, signIns int) {
	if h.Refusal() != nil {
		return 0, 0
	}
	return int(h.pending.Load()), h.signInsWaiting()
}

// signInsWaiting is the Sign-in badge: the model's open sign-in requests.
func (h *Host) signInsWaiting() int {
	if h.signIns == nil {
		return 0
	}
	rs, err := h.signIns.List(context.Background())
	if err != nil {
		return 0
	}
	return len(rs)
}
