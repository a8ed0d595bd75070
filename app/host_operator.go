package app

// The identity Poppydesk signs with (spec 4.1, 10.7): its own (self-operated: a root key in the
// keyring, agent.json and jwks.json published by the user) or an operator's, which publishes one
// identity for all its users and signs blindly for this device (agentcore/identity
// RemoteOperator, the service of agentcore/operator). With an operator, every client assertion
// and delegation is written here, blinded, signed by the operator, unblinded and verified
// against its JWKS; refresh and access tokens stay in this device's keyring. An operator that
// cannot be reached is an error that says so; nothing falls back to another identity.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

// SettingOperator is the state setting that holds the base URL of the operator this device is
// enrolled with, recorded by `poppydesk operator enroll` and [Host.EnrollOperator].
const SettingOperator = "identity.operator"

// ProblemNotEnrolled: an operator is configured but this device's enrollment is not in the
// keyring (or is for another operator).
const ProblemNotEnrolled = "operator_not_enrolled"

// Identity modes.
const (
	IdentityNone     = "none"
	IdentitySelf     = "self"
	IdentityOperator = "operator"
)

// IdentityInfo is what the Settings → Identity screen shows.
type IdentityInfo struct {
	// Mode is IdentityNone, IdentitySelf or IdentityOperator.
	Mode     string `json:"mode"`
	ClientID string `json:"clientId"`
	// Operator, DeviceID and Enrolled describe the enrollment (Mode IdentityOperator, or an
	// enrollment made but not in use until restart).
	Operator string `json:"operator,omitempty"`
	DeviceID string `json:"deviceId,omitempty"`
	Enrolled string `json:"enrolled,omitempty"`
	// Restart is true when the recorded identity differs from the one this Host runs with.
	Restart bool `json:"restart"`
	// Problem is why the engine does not run, if it does not.
	Problem string `json:"problem,omitempty"`
}

// OperatorStatus is a fresh look at the operator (Settings → Identity → Check).
type OperatorStatus struct {
	Reachable  bool   `json:"reachable"`
	Error      string `json:"error,omitempty"`
	SigningKid string `json:"signingKid,omitempty"`
	Enrollment string `json:"enrollment,omitempty"`
	PerHour    int    `json:"perHour,omitempty"`
	PerDay     int    `json:"perDay,omitempty"`
}

// chooseOperator reads which operator, if any, signs for this device: Config.Operator, else the
// recorded SettingOperator. With one, the enrollment must be in the keyring.
func (h *Host) chooseOperator(ctx context.Context) error {
	op := h.cfg.Operator
	if op == "" {
		v, err := h.state.GetSetting(ctx, SettingOperator)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("reading the recorded operator failed: %w", err)
		}
		op = v
	}
	if op == "" {
		return nil
	}
	base, err := identity.OperatorBase(op)
	if err != nil {
		return err
	}
	b, err := h.secrets.LoadDevice(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && b.Operator != base:
		h.problem = &Problem{Kind: ProblemNotEnrolled, Text: fmt.Sprintf("Poppydesk is set to sign through the operator %s, but this device is not enrolled with it, "+
			"so it cannot act at Companies. Enroll it with `poppydesk operator enroll %s --token TOKEN` (the token comes from the operator's administrator).", base, base)}
		return nil
	case err != nil:
		return fmt.Errorf("reading this device's operator enrollment from the keyring failed: %w", err)
	}
	h.device = b
	return nil
}

// remoteOperator builds the device side of the operator for the engine, over the Host's HTTP
// policy (developer mode's hosts and CAs included).
func (h *Host) remoteOperator() (identity.Operator, error) {
	if h.device == nil {
		return nil, nil
	}
	client, closeFn, err := h.operatorClient()
	if err != nil {
		return nil, err
	}
	h.onClose("the operator's connections", func(context.Context) error { closeFn(); return nil })
	op, err := identity.NewRemoteOperator(identity.RemoteConfig{Device: h.device, HTTPClient: client, Now: h.now, Logger: h.log})
	if err != nil {
		return nil, err
	}
	h.remote = op
	return op, nil
}

func (h *Host) operatorClient() (*http.Client, func(), error) {
	tr, err := transport.New(h.transportConfig())
	if err != nil {
		return nil, nil, err
	}
	return tr.NoRedirectClient(), tr.Close, nil
}

// Identity describes the identity this Host signs with, and the recorded one.
func (h *Host) Identity(ctx context.Context) IdentityInfo {
	info := IdentityInfo{Mode: IdentityNone, ClientID: h.clientID}
	switch {
	case h.device != nil:
		info.Mode = IdentityOperator
	case h.clientID != "":
		info.Mode = IdentitySelf
	}
	if h.problem != nil {
		info.Problem = h.problem.Text
	}
	if h.secrets != nil {
		if b, err := h.secrets.LoadDevice(ctx); err == nil {
			info.Operator, info.DeviceID, info.Enrolled = b.Operator, b.DeviceID, b.Enrolled.Format("2006-01-02 15:04 MST")
			info.Restart = h.device == nil || h.device.DeviceID != b.DeviceID
		}
	}
	return info
}

// EnrollOperator enrolls this device with the operator at url (token from its administrator,
// "" for open enrollment), keeps the enrollment in the keyring and records the operator as the
// identity to use. It takes effect when Poppydesk restarts.
func (h *Host) EnrollOperator(ctx context.Context, url, token string) (IdentityInfo, error) {
	if h.secrets == nil {
		return IdentityInfo{}, h.problem
	}
	client, closeFn, err := h.operatorClient()
	if err != nil {
		return IdentityInfo{}, err
	}
	defer closeFn()
	if _, err := EnrollOperator(ctx, client, h.secrets, h.state, url, token, h.now); err != nil {
		return IdentityInfo{}, err
	}
	return h.Identity(ctx), nil
}

// CheckOperator asks the operator this Host signs through for its configuration.
func (h *Host) CheckOperator(ctx context.Context) OperatorStatus {
	if h.remote == nil {
		return OperatorStatus{Error: "Poppydesk does not sign through an operator"}
	}
	c, err := h.remote.Config(ctx)
	if err != nil {
		return OperatorStatus{Error: err.Error()}
	}
	return OperatorStatus{Reachable: true, SigningKid: c.SigningKid, Enrollment: c.Enrollment, PerHour: c.Quota.PerHour, PerDay: c.Quota.PerDay}
}

// EnrollOperator enrolls this device with the operator at url through client, keeps the
// enrollment (with the device key) in secrets, and records the operator in state
// ([SettingOperator]). `poppydesk operator enroll` and [Host.EnrollOperator] use it.
func EnrollOperator(ctx context.Context, client *http.Client, secrets store.Secrets, state *vault.State, url, token string, now func() time.Time) (*store.DeviceBundle, error) {
	b, err := identity.Enroll(ctx, client, url, token, now)
	if err != nil {
		return nil, err
	}
	if err := secrets.SaveDevice(ctx, b); err != nil {
		return nil, fmt.Errorf("keeping the enrollment in the keyring failed: %w; unlock the keyring and enroll again", err)
	}
	if err := state.SetSetting(ctx, SettingOperator, b.Operator); err != nil {
		return nil, fmt.Errorf("recording the operator failed: %w", err)
	}
	return b, nil
}
