package app

// What the window's frame shows that the Host keeps: the status line, the installation (Shell
// and Settings), the section badges, the window's own settings (theme, notifications, feedback
// reports) and its focus, and Reset everything.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// Event names of the window's frame.
const (
	// EventStatus carries the new status line (a string).
	EventStatus = "shell:status"
	// EventSections says the section badges changed ([Host.Waiting]).
	EventSections = "shell:sections"
)

// About describes this Poppydesk for the window's header and Settings.
type About struct {
	Version string
	Paths   Paths
	// Keyring says whether secrets can be kept in the OS keyring ("connected", "locked", "not
	// available", or the demo's memory).
	Keyring string
	// StateFile is the state database in use (the demo's throwaway one in the demo); Socket
	// the model's MCP socket ("" when it does not listen).
	StateFile string
	Socket    string
	// Developer is the developer mode this run applies (in the demo, the reference Company's
	// hosts and generated CA).
	Developer Developer
	// ClientID is the published identity Poppydesk signs with (spec 4.1; "" without one);
	// IdentityMode says whose it is (IdentitySelf, IdentityOperator, IdentityDemo; "" without),
	// Operator the operator's base URL when one publishes it.
	ClientID     string
	IdentityMode string
	Operator     string
	// Reset is set once Reset everything ran.
	Reset bool
}

// About describes this Poppydesk.
func (h *Host) About() About {
	dir := h.cfg.Paths.Data
	if h.stateDir != "" {
		dir = h.stateDir
	}
	a := About{Version: h.cfg.Version, Paths: h.cfg.Paths, Keyring: h.keyring, StateFile: filepath.Join(dir, StateFile), Socket: h.Socket(),
		Developer: h.cfg.Developer, ClientID: h.clientID, Reset: h.wasReset.Load()}
	switch {
	case h.clientID == "":
	case h.demo != nil:
		a.IdentityMode = IdentityDemo
	case h.device != nil:
		a.IdentityMode, a.Operator = IdentityOperator, h.device.Operator
	default:
		a.IdentityMode = IdentitySelf
	}
	if h.demo != nil {
		a.Developer = h.demo.developer()
	}
	return a
}

// SettingTheme is the state setting of the window's theme: "system" (the default), "light" or
// "dark".
const SettingTheme = "window.theme"

// themes are the themes the window knows.
var themes = []string{"system", "light", "dark"}

// Preferences are the window's settings the user changes in Settings.
type Preferences struct {
	// Theme is "system", "light" or "dark".
	Theme string
	// Notifications is true while desktop notifications are on.
	Notifications bool
	// FeedbackReports is true while Poppydesk may report to a Company a task it could not do
	// there (spec 9.3); FeedbackReportsErr says why the setting cannot be read (task coverage
	// is not running).
	FeedbackReports    bool
	FeedbackReportsErr error
}

// Preferences returns the window's settings (the defaults when the state database cannot be
// read).
func (h *Host) Preferences(ctx context.Context) Preferences {
	p := Preferences{Theme: "system", Notifications: true}
	if h == nil || h.state == nil || h.wasReset.Load() {
		return p
	}
	if v, err := h.state.GetSetting(ctx, SettingTheme); err == nil && slices.Contains(themes, v) {
		p.Theme = v
	}
	p.Notifications = !h.attention.muted.Load()
	p.FeedbackReports, p.FeedbackReportsErr = h.FeedbackReportsEnabled(ctx)
	return p
}

// settable says why the window's settings cannot be saved now (nil when they can).
func (h *Host) settable() error {
	switch {
	case h == nil:
		return problem(ProblemNotConnected)
	case h.wasReset.Load():
		return problem(ProblemWasReset)
	case h.state == nil:
		return errors.New("the state database is not open, so settings cannot be saved")
	}
	return nil
}

// SetTheme keeps the window's theme ("system", "light" or "dark") in the state database; the
// window applies it at once and at every start.
func (h *Host) SetTheme(ctx context.Context, theme string) error {
	if !slices.Contains(themes, theme) {
		return fmt.Errorf("unknown theme %q: choose system, light or dark", theme)
	}
	if err := h.settable(); err != nil {
		return err
	}
	if err := h.state.SetSetting(ctx, SettingTheme, theme); err != nil {
		return fmt.Errorf("saving the theme failed: %w", err)
	}
	return nil
}

// SetNotifications turns desktop notifications on or off (kept in the state database).
func (h *Host) SetNotifications(ctx context.Context, on bool) error {
	if err := h.settable(); err != nil {
		return err
	}
	v := "on"
	if !on {
		v = "off"
	}
	if err := h.state.SetSetting(ctx, SettingNotifications, v); err != nil {
		return fmt.Errorf("saving the notifications setting failed: %w", err)
	}
	h.attention.muted.Store(!on)
	h.log.Info("desktop notifications set in Settings", "on", on)
	return nil
}

// SetWindowFocus records that the window gained (true) or lost (false) the keyboard focus:
// desktop notifications and the urgency hint are used only while it is not focused, and coming
// back to the window clears the hint.
func (h *Host) SetWindowFocus(focused bool) {
	if h == nil {
		return
	}
	h.windowFocused(focused)
	h.log.Debug("the window reported its focus", "focused", focused)
}

// ResetEverything stops the Host, deletes the keyring items (store.Secrets.Reset) and the
// state database with its -wal, -shm and -journal files, and marks the Host as reset, so the
// window's services answer [ProblemWasReset] from then on. The log files stay (nothing secret is
// logged), as with `poppydesk reset --yes`.
func (h *Host) ResetEverything(ctx context.Context) error {
	if h == nil {
		return problem(ProblemNotConnected)
	}
	if !h.wasReset.CompareAndSwap(false, true) {
		return problem(ProblemWasReset)
	}
	h.log.Info("reset everything: requested in Settings")
	secrets := h.secrets
	dir := h.cfg.Paths.Data
	if h.stateDir != "" {
		dir = h.stateDir
	}
	if err := h.Close(ctx); err != nil {
		h.log.Warn("reset everything: closing was not clean", "err", err)
	}
	var errs []error
	if secrets != nil {
		if err := secrets.Reset(ctx); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, fmt.Errorf("deleting the keyring items failed: %w", err))
		}
	}
	db := filepath.Join(dir, StateFile)
	for _, f := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("deleting %s failed: %w; delete it by hand", f, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		h.log.Warn("reset everything was incomplete", "err", err)
		h.status.Set("Reset everything was incomplete: " + err.Error())
		return err
	}
	h.log.Info("reset everything: done")
	h.status.Set("Poppydesk was reset. Quit Poppydesk and start it again.")
	h.relay.Emit(EventSections)
	return nil
}

// StatusLine is the one-line status in the window's header. It is not bound to the window:
// the Go side sets it, the window reads it through [Host.Status] and the [EventStatus] event.
type StatusLine struct {
	mu   sync.Mutex
	text string
	emit Emitter
}

// newStatusLine returns a status line that announces changes on emit (nil: no events).
func newStatusLine(emit Emitter, initial string) *StatusLine {
	return &StatusLine{text: initial, emit: emit}
}

// Set changes the status line and tells the window.
func (l *StatusLine) Set(text string) {
	l.mu.Lock()
	l.text = text
	emit := l.emit
	l.mu.Unlock()
	if emit != nil {
		emit.Emit(EventStatus, text)
	}
}

// Text returns the status line.
func (l *StatusLine) Text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text
}
