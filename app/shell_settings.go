package app

// The Settings the window's own sections change (theme, notifications, Reset everything) and
// what Settings shows about the installation (the identity in use, where files live). The
// Developer mode section has its own service.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// SettingTheme is the state setting of the window's theme: "system" (the default), "light" or
// "dark".
const SettingTheme = "window.theme"

// Themes the window knows.
var themes = []string{"system", "light", "dark"}

// Preferences are the window's settings the user changes in Settings.
type Preferences struct {
	// Theme is "system", "light" or "dark".
	Theme string `json:"theme"`
	// Notifications is true while desktop notifications are on.
	Notifications bool `json:"notifications"`
	// FeedbackReports is true while Poppydesk may report to a Company a task it could not do
	// there (spec 9.3); FeedbackReportsProblem says why the setting cannot be read or changed
	// (task coverage is not running), "" when it can.
	FeedbackReports        bool   `json:"feedbackReports"`
	FeedbackReportsProblem string `json:"feedbackReportsProblem"`
}

// ResetConfirmation is the words the window sends with ResetEverything, so that nothing but
// the confirmation step of Settings' "Reset everything" can start it.
const ResetConfirmation = "delete every key, sign-in and record"

// prefCall bounds one settings call.
const prefCall = 5 * time.Second

// Preferences returns the theme and the notifications setting (the defaults when the state
// database cannot be read).
func (s *Shell) Preferences() Preferences {
	p := Preferences{Theme: "system", Notifications: true}
	h := s.h
	if h == nil || h.state == nil || h.wasReset.Load() {
		return p
	}
	ctx, cancel := context.WithTimeout(h.Context(), prefCall)
	defer cancel()
	if v, err := h.state.GetSetting(ctx, SettingTheme); err == nil && validTheme(v) {
		p.Theme = v
	}
	p.Notifications = !h.attention.muted.Load()
	if on, err := h.FeedbackReportsEnabled(ctx); err != nil {
		p.FeedbackReportsProblem = "Poppydesk cannot read this setting now: " + err.Error()
	} else {
		p.FeedbackReports = on
	}
	return p
}

// SetFeedbackReports turns the reports of tasks Poppydesk could not do (spec 9.3) on or off; the
// setting is kept in the state database and applies at once, to every Company.
func (s *Shell) SetFeedbackReports(on bool) error {
	h, err := s.settable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(h.Context(), prefCall)
	defer cancel()
	if err := h.SetFeedbackReports(ctx, on); err != nil {
		return fmt.Errorf("saving the reports setting failed: %w", err)
	}
	h.log.Info("feedback reports set from the window", "on", on)
	return nil
}

func validTheme(t string) bool {
	for _, x := range themes {
		if x == t {
			return true
		}
	}
	return false
}

// SetTheme keeps the window's theme ("system", "light" or "dark") in the state database; the
// window applies it at once and at every start.
func (s *Shell) SetTheme(theme string) error {
	if !validTheme(theme) {
		return fmt.Errorf("unknown theme %q: choose system, light or dark", theme)
	}
	h, err := s.settable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(h.Context(), prefCall)
	defer cancel()
	if err := h.state.SetSetting(ctx, SettingTheme, theme); err != nil {
		return fmt.Errorf("saving the theme failed: %w", err)
	}
	return nil
}

// SetNotifications turns desktop notifications on or off (kept in the state database).
func (s *Shell) SetNotifications(on bool) error {
	h, err := s.settable()
	if err != nil {
		return err
	}
	v := "on"
	if !on {
		v = "off"
	}
	ctx, cancel := context.WithTimeout(h.Context(), prefCall)
	defer cancel()
	if err := h.state.SetSetting(ctx, SettingNotifications, v); err != nil {
		return fmt.Errorf("saving the notifications setting failed: %w", err)
	}
	h.attention.muted.Store(!on)
	h.log.Info("desktop notifications set in Settings", "on", on)
	return nil
}

func (s *Shell) settable() (*Host, error) {
	h := s.h
	switch {
	case h == nil:
		return nil, errNotConnected
	case h.wasReset.Load():
		return nil, errWasReset
	case h.state == nil:
		return nil, errors.New("the state database is not open, so settings cannot be saved")
	}
	return h, nil
}

// WindowFocus is the window's report that it gained (true) or lost (false) the keyboard focus:
// desktop notifications are shown only while it is not focused.
func (s *Shell) WindowFocus(focused bool) {
	if s.h != nil {
		s.h.attention.focused.Store(focused)
		s.h.log.Debug("the window reported its focus", "focused", focused)
	}
}

// ResetEverything does what `poppydesk reset --yes` does, inside this process: it stops the
// engine and everything else the Host runs, deletes every keyring item Poppydesk keeps and the
// state database, and leaves the window answering that Poppydesk must be started again.
// confirm must be [ResetConfirmation] (sent by the confirmation step in Settings).
func (s *Shell) ResetEverything(confirm string) error {
	if confirm != ResetConfirmation {
		return errors.New("Reset everything needs its confirmation in Settings; nothing was deleted")
	}
	if s.h == nil {
		return errNotConnected
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.h.ResetEverything(ctx)
}

// errWasReset is what every service answers after Reset everything.
var errWasReset = errors.New("Poppydesk was reset: every key, sign-in and record is deleted. Quit Poppydesk and start it again")

// ResetEverything stops the Host, deletes the keyring items (store.Secrets.Reset) and the
// state database with its -wal, -shm and -journal files, and marks the Host as reset, so the
// window's services answer errWasReset from then on. The log files stay (nothing secret is
// logged), as with `poppydesk reset --yes`.
func (h *Host) ResetEverything(ctx context.Context) error {
	if !h.wasReset.CompareAndSwap(false, true) {
		return errWasReset
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
