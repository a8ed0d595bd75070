package fronts

// The first run's gestures on the Shell: "Get started" with the operator the build names, the
// restart that starts the engine with that identity, and the demo entered and left from the
// window (app/host_firstrun.go). Each is a user's click in the window.

import (
	"context"

	"github.com/poppydesk/poppydesk/app"
)

// ctx is a call's context, or the Host's Refusal for a service without a Host.
func (s *Shell) ctx() (context.Context, context.CancelFunc, error) {
	if s.h == nil {
		return nil, nil, s.h.Refusal()
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), enrollTimeout)
	return ctx, cancel, nil
}

// GetStarted enrolls this device with the operator the build names and returns what Companies
// will see of it (its name and logo); [Shell.RestartReady] then starts Poppydesk with it.
func (s *Shell) GetStarted() (OperatorStatus, error) {
	ctx, cancel, err := s.ctx()
	if err != nil {
		return OperatorStatus{}, err
	}
	defer cancel()
	st, err := s.h.GetStarted(ctx)
	return OperatorStatus(st), err
}

// RestartReady restarts Poppydesk with the identity GetStarted enrolled; the window closes and
// opens again, ready to act.
func (s *Shell) RestartReady() error { return s.restart(app.RestartReady) }

// TryDemo restarts Poppydesk as the demo, which offers to leave it again.
func (s *Shell) TryDemo() error { return s.restart(app.RestartDemo) }

// LeaveDemo restarts the user's own Poppydesk, as it was, from a demo started in the window.
func (s *Shell) LeaveDemo() error { return s.restart(app.RestartHome) }

func (s *Shell) restart(to app.RestartTo) error {
	ctx, cancel, err := s.ctx()
	if err != nil {
		return err
	}
	defer cancel()
	return s.h.Restart(ctx, to)
}

// ReadyShown is called by the window once it shows that Poppydesk is ready after Get started,
// with the operator's name and logo. It only records the moment in the log (what the first
// hour's end-to-end test measures).
func (s *Shell) ReadyShown() {
	if s.h != nil {
		s.h.Logger().Info("window ready to act", "identity", s.h.ClientID())
	}
}

// Operator is what Companies see of the operator this Poppydesk signs through (its name and
// logo, [app.Host.CheckOperator]), which the window shows once Poppydesk is ready.
func (s *Shell) Operator() (OperatorStatus, error) {
	ctx, cancel, err := s.ctx()
	if err != nil {
		return OperatorStatus{}, err
	}
	defer cancel()
	return OperatorStatus(s.h.CheckOperator(ctx)), nil
}
