package app

// The first run: an identity in one click from the operator this build names (spec 4.1, 10.7),
// and the demo entered and left from the window. Poppydesk builds its engine once, at start, for
// one identity, so both end in a restart that the composition performs (Config.Restart): the
// window closes, and the same program starts again with the new identity, or as the demo, or, on
// leaving the demo, as the user's own Poppydesk. The demo keeps its state in a throwaway folder
// and its secrets in memory, so entering and leaving it touches neither the user's state
// database nor their keyring.

import (
	"context"
	"errors"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// RestartTo says what Poppydesk starts as when it restarts itself from the window.
type RestartTo string

const (
	// RestartReady starts the user's Poppydesk with the identity just enrolled, and the window
	// says it is ready, with the operator's name and logo (Config.Welcome).
	RestartReady RestartTo = "ready"
	// RestartDemo starts the demo, which offers to leave it (DemoOptions.FromWindow).
	RestartDemo RestartTo = "demo"
	// RestartHome leaves the demo: the user's own Poppydesk starts as it was.
	RestartHome RestartTo = "home"
)

// DefaultOperator is the operator this build names for "Get started" (Config.DefaultOperator;
// "" when it names none).
func (h *Host) DefaultOperator() string { return h.cfg.DefaultOperator }

// Welcome reports whether this run follows "Get started" (Config.Welcome): the window then says
// that Poppydesk is ready and shows the operator's name and logo.
func (h *Host) Welcome() bool { return h.cfg.Welcome && h.device != nil }

// DemoFromWindow reports whether this demo was started from the window, which then offers to
// leave it for the user's own Poppydesk.
func (h *Host) DemoFromWindow() bool { return h.demo != nil && h.cfg.Demo.FromWindow }

// GetStarted gives Poppydesk an identity in one click: it enrolls this device with the operator
// the build names (open enrollment, spec 10.7; every signature is blind, as with any operator),
// records it for the next start, and returns what Companies will see (the operator's
// client_name and logo). [Host.Restart] with RestartReady then starts the engine with it. A
// device already enrolled with that operator (an earlier click whose restart did not happen) is
// not enrolled again. An error says what failed and what else the user can do; then nothing is
// kept or recorded.
func (h *Host) GetStarted(ctx context.Context) (OperatorStatus, error) {
	op := h.cfg.DefaultOperator
	switch {
	case op == "":
		return OperatorStatus{}, &Error{Message: "This Poppydesk names no default operator to get an identity from",
			Hint: "Use another operator in Settings → Identity, publish your own identity, or try the demo"}
	case h.demo != nil:
		return OperatorStatus{}, errDemoIdentity
	case h.problem != nil && h.problem.Kind != ProblemNoIdentity:
		return OperatorStatus{}, h.problem
	case h.problem == nil:
		return OperatorStatus{}, &Error{Message: "Poppydesk already has an identity (" + h.clientID + ")",
			Hint: "Change it in Settings → Identity"}
	}
	base, err := identity.OperatorBase(op)
	if err != nil {
		return OperatorStatus{}, &Error{Message: "This Poppydesk was built with a default operator that is not a valid address", Err: err,
			Hint: "Use another operator in Settings → Identity, and tell whoever built this Poppydesk"}
	}
	b, err := h.secrets.LoadDevice(ctx)
	switch {
	case err == nil && b.Operator == base:
		if err := h.state.SetSetting(ctx, SettingOperator, base); err != nil {
			return OperatorStatus{}, &Error{Message: "Recording the operator failed", Err: err, Hint: "Try again"}
		}
	case err == nil || errors.Is(err, store.ErrNotFound):
		if _, err := h.EnrollOperator(ctx, base, ""); err != nil {
			return OperatorStatus{}, err
		}
	default:
		return OperatorStatus{}, &Error{Message: "Reading this device's enrollment from the keyring failed", Err: err,
			Hint: "Unlock the keyring and try again"}
	}
	h.log.Info("got started with the default operator", "operator", base)
	return h.CheckOperator(ctx), nil
}

// Restart asks the composition to restart Poppydesk as to: with the identity enrolled by
// GetStarted (RestartReady), as the demo (RestartDemo), or, from the demo, as the user's own
// Poppydesk (RestartHome). The window closes and opens again; this Host closes cleanly first.
func (h *Host) Restart(ctx context.Context, to RestartTo) error {
	if h.cfg.Restart == nil {
		return &Error{Message: "This Poppydesk cannot restart itself from the window", Hint: "Quit Poppydesk and start it again"}
	}
	switch to {
	case RestartReady:
		if h.demo != nil {
			return errDemoIdentity
		}
		if info := h.Identity(ctx); info.Next != IdentityOperator || !info.Restart {
			return &Error{Message: "Poppydesk has no new identity to restart with", Hint: "Choose Get started first"}
		}
	case RestartDemo:
		if h.demo != nil {
			return &Error{Message: "This is the demo already"}
		}
	case RestartHome:
		if !h.DemoFromWindow() {
			return &Error{Message: "Only a demo started from the window can go back to your own Poppydesk", Hint: "Close this window to leave the demo"}
		}
	default:
		return &Error{Message: "Poppydesk cannot restart as " + string(to)}
	}
	h.log.Info("restarting from the window", "as", string(to))
	return h.cfg.Restart(to)
}
