package fronts

// The Settings the window's own sections change (theme, notifications, feedback reports, Reset
// everything) and the window's focus, over the Host (app/host_window.go). The Settings screen's
// other sections have their own service (settings.go).

import (
	"context"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

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

// prefContext is a settings call's context (the background one for a service without a Host,
// whose Host methods answer at once).
func prefContext(h *app.Host) (context.Context, context.CancelFunc) {
	parent := context.Background()
	if h != nil {
		parent = h.Context()
	}
	return context.WithTimeout(parent, prefCall)
}

// Preferences returns the theme, the notifications and the feedback reports settings (the
// defaults when the state database cannot be read).
func (s *Shell) Preferences() Preferences {
	ctx, cancel := prefContext(s.h)
	defer cancel()
	p := s.h.Preferences(ctx)
	out := Preferences{Theme: p.Theme, Notifications: p.Notifications, FeedbackReports: p.FeedbackReports}
	if p.FeedbackReportsErr != nil {
		out.FeedbackReports, out.FeedbackReportsProblem = false, "Poppydesk cannot read this setting now: "+p.FeedbackReportsErr.Error()
	}
	return out
}

// SetFeedbackReports turns the reports of tasks Poppydesk could not do (spec 9.3) on or off; the
// setting is kept in the state database and applies at once, to every Company.
func (s *Shell) SetFeedbackReports(on bool) error {
	ctx, cancel := prefContext(s.h)
	defer cancel()
	return s.h.SetFeedbackReports(ctx, on)
}

// SetTheme keeps the window's theme ("system", "light" or "dark") in the state database; the
// window applies it at once and at every start.
func (s *Shell) SetTheme(theme string) error {
	ctx, cancel := prefContext(s.h)
	defer cancel()
	return s.h.SetTheme(ctx, theme)
}

// SetNotifications turns desktop notifications on or off (kept in the state database).
func (s *Shell) SetNotifications(on bool) error {
	ctx, cancel := prefContext(s.h)
	defer cancel()
	return s.h.SetNotifications(ctx, on)
}

// WindowFocus is the window's report that it gained (true) or lost (false) the keyboard focus:
// desktop notifications are shown only while it is not focused.
func (s *Shell) WindowFocus(focused bool) { s.h.SetWindowFocus(focused) }

// ResetEverything does what `poppydesk reset --yes` does, inside this process
// ([app.Host.ResetEverything]): it stops the engine and everything else the Host runs, deletes
// every keyring item Poppydesk keeps and the state database, and leaves the window answering
// that Poppydesk must be started again. confirm must be [ResetConfirmation] (sent by the
// confirmation step in Settings).
func (s *Shell) ResetEverything(confirm string) error {
	if confirm != ResetConfirmation {
		return &app.Error{Message: "Reset everything needs its confirmation in Settings; nothing was deleted"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.h.ResetEverything(ctx)
}
