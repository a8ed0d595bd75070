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
	neturl "net/url"
	"strings"
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
	// IdentityDemo is the demo's own identity, published on this computer for the reference
	// Company only; the demo offers no enrollment.
	IdentityDemo = "demo"
)

// IdentityInfo is what the Settings → Identity screen shows.
type IdentityInfo struct {
	// Mode is the identity this run signs with: IdentityNone, IdentitySelf, IdentityOperator
	// or IdentityDemo.
	Mode     string `json:"mode"`
	ClientID string `json:"clientId"`
	// ClientName is this run's client_name when it signs through an operator (as enrolled).
	ClientName string `json:"clientName,omitempty"`
	// Operator, DeviceID and Enrolled describe the enrollment in the keyring (or, once it is
	// removed, the one this run still signs with).
	Operator string `json:"operator,omitempty"`
	DeviceID string `json:"deviceId,omitempty"`
	Enrolled string `json:"enrolled,omitempty"`
	// Next is the identity the next start signs with (the modes above), NextOperator the
	// operator recorded for it, OwnClientID the self-operated client_id ("" when none is
	// published).
	Next         string `json:"next"`
	NextOperator string `json:"nextOperator,omitempty"`
	OwnClientID  string `json:"ownClientId,omitempty"`
	// Fixed is set when the operator comes from how Poppydesk was started (Config.Operator),
	// which the window cannot change.
	Fixed bool `json:"fixed"`
	// Restart is true when the recorded identity differs from the one this Host runs with.
	Restart bool `json:"restart"`
	// Problem is why the engine does not run, if it does not.
	Problem string `json:"problem,omitempty"`
}

// OperatorStatus is a fresh look at the operator (Settings → Identity → Check): what it
// publishes for Companies (client_id, client_name, logo) and how it signs.
type OperatorStatus struct {
	Operator  string `json:"operator,omitempty"`
	Reachable bool   `json:"reachable"`
	// InUse is set when this run signs through this operator (not only enrolled for the next
	// start).
	InUse bool   `json:"inUse"`
	Error string `json:"error,omitempty"`
	// ClientID, ClientName and LogoURI are the operator's client metadata document, what
	// Companies show. Logo is that logo as a data: URL (a PNG, JPEG, GIF or WebP of at most
	// MaxLogoBytes, fetched under the Host's HTTP policy), LogoProblem why it is not shown.
	ClientID    string `json:"clientId,omitempty"`
	ClientName  string `json:"clientName,omitempty"`
	LogoURI     string `json:"logoUri,omitempty"`
	Logo        string `json:"logo,omitempty"`
	LogoProblem string `json:"logoProblem,omitempty"`
	SigningKid  string `json:"signingKid,omitempty"`
	Enrollment  string `json:"enrollment,omitempty"`
	PerHour     int    `json:"perHour,omitempty"`
	PerDay      int    `json:"perDay,omitempty"`
}

// errDemoIdentity refuses to change the demo's identity.
var errDemoIdentity = errors.New("the demo signs with its own identity, published on this computer for the reference Company only; " +
	"an operator is for the Poppydesk you use every day: start it without the demo to enroll")

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
			"so it cannot act at Companies. Enroll it in Settings → Identity, or with the command “poppydesk operator enroll %s --token TOKEN” (the token comes from the operator's administrator).", base, base)}
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

// recordedOperator is the operator the next start signs through: Config.Operator, else the
// recorded SettingOperator ("" for none).
func (h *Host) recordedOperator(ctx context.Context) (string, error) {
	if h.cfg.Operator != "" {
		return identity.OperatorBase(h.cfg.Operator)
	}
	if h.state == nil {
		return "", nil
	}
	v, err := h.state.GetSetting(ctx, SettingOperator)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return v, err
}

// ownClientID is the self-operated client_id the next start uses without an operator.
func (h *Host) ownClientID(ctx context.Context) string {
	if h.cfg.ClientID != "" {
		return h.cfg.ClientID
	}
	if h.state == nil {
		return ""
	}
	v, _ := h.state.GetSetting(ctx, SettingClientID)
	return v
}

// Identity describes the identity this Host signs with, and the one the next start uses.
func (h *Host) Identity(ctx context.Context) IdentityInfo {
	info := IdentityInfo{Mode: IdentityNone, ClientID: h.clientID, Next: IdentityNone, Fixed: h.cfg.Operator != ""}
	switch {
	case h.demo != nil:
		info.Mode, info.Next = IdentityDemo, IdentityDemo
	case h.device != nil:
		info.Mode, info.ClientName = IdentityOperator, h.device.ClientName
		info.Operator, info.DeviceID, info.Enrolled = h.device.Operator, h.device.DeviceID, h.device.Enrolled.Format("2006-01-02 15:04 MST")
	case h.clientID != "":
		info.Mode = IdentitySelf
	}
	if h.problem != nil {
		info.Problem = h.problem.Text
	}
	if h.demo != nil {
		return info
	}
	var enrolled *store.DeviceBundle
	if h.secrets != nil {
		if b, err := h.secrets.LoadDevice(ctx); err == nil {
			enrolled = b
			info.Operator, info.DeviceID, info.Enrolled = b.Operator, b.DeviceID, b.Enrolled.Format("2006-01-02 15:04 MST")
		}
	}
	info.OwnClientID = h.ownClientID(ctx)
	next, err := h.recordedOperator(ctx)
	if err != nil && info.Problem == "" {
		info.Problem = err.Error()
	}
	nextDevice, runningDevice := "", ""
	switch {
	case next != "":
		info.NextOperator = next
		if enrolled != nil && enrolled.Operator == next {
			info.Next, nextDevice = IdentityOperator, enrolled.DeviceID
		}
	case info.OwnClientID != "":
		info.Next = IdentitySelf
	}
	if h.device != nil {
		runningDevice = h.device.DeviceID
	}
	info.Restart = info.Next != info.Mode || nextDevice != runningDevice || info.Next == IdentitySelf && info.OwnClientID != h.clientID
	return info
}

// EnrollOperator enrolls this device with the operator at url (token from its administrator,
// "" for open enrollment), keeps the enrollment in the keyring and records the operator as the
// identity to use. It takes effect when Poppydesk restarts. An error says what failed and what
// to do (the operator unreachable, a URL that is not an operator's, a refused token), and then
// nothing is kept or recorded.
func (h *Host) EnrollOperator(ctx context.Context, url, token string) (IdentityInfo, error) {
	switch {
	case h.demo != nil:
		return IdentityInfo{}, errDemoIdentity
	case h.secrets == nil || h.state == nil:
		if h.problem != nil {
			return IdentityInfo{}, h.problem
		}
		return IdentityInfo{}, &Error{Message: "Poppydesk has no keyring to keep an enrollment in", Hint: "Start a Secret Service, then restart Poppydesk"}
	case h.cfg.Operator != "":
		return IdentityInfo{}, fmt.Errorf("this Poppydesk was started set to sign through the operator %s (Config.Operator), which the window cannot change", h.cfg.Operator)
	case strings.TrimSpace(url) == "":
		return IdentityInfo{}, errors.New("enter the operator's URL, such as https://operator.example; its administrator gives it to you")
	}
	base, err := identity.OperatorBase(url)
	if err != nil {
		return IdentityInfo{}, err
	}
	token = strings.TrimSpace(token)
	client, closeFn, err := h.operatorClient()
	if err != nil {
		return IdentityInfo{}, err
	}
	defer closeFn()
	// A first look at the operator, so that a wrong URL is told apart from a refused enrollment.
	c, err := identity.FetchOperatorConfig(ctx, client, base)
	if err != nil {
		return IdentityInfo{}, operatorProblem(base, err)
	}
	if c.Enrollment == identity.EnrollmentToken && token == "" {
		return IdentityInfo{}, fmt.Errorf("the operator %s enrolls devices only with an enrollment token from its administrator; enter the token and enroll again", base)
	}
	b, err := EnrollOperator(ctx, client, h.secrets, h.state, base, token, h.now)
	if err != nil {
		return IdentityInfo{}, operatorProblem(base, err)
	}
	h.log.Info("enrolled with an operator for the next start", "operator", b.Operator, "client_id", b.ClientID)
	return h.Identity(ctx), nil
}

// operatorProblem words an error of the operator at base for the Settings screen: whose fault
// it is and what to do.
func operatorProblem(base string, err error) error {
	var (
		unreachable *identity.OperatorUnreachableError
		refused     *identity.OperatorRefusedError
		quota       *identity.OperatorQuotaError
		network     *neturl.Error
	)
	switch {
	case errors.As(err, &quota):
		return err
	case errors.As(err, &refused) && refused.Code == identity.OperatorErrToken:
		return fmt.Errorf("the operator %s refused the enrollment token (%s). A token works a limited number of times and expires: "+
			"check that you entered it whole, or ask the operator's administrator for a new one", base, refused.Description)
	case errors.As(err, &refused):
		return fmt.Errorf("the operator %s refused this device: %s (HTTP %d %s); ask its administrator", base, refused.Description, refused.Status, refused.Code)
	case errors.As(err, &unreachable) && errors.As(err, &network):
		return &Error{Message: "Poppydesk could not reach the operator at " + base, Err: network.Err,
			Hint: "Check the URL and this computer's network; if both are right, the operator may be down: ask its administrator"}
	case errors.As(err, &unreachable):
		return fmt.Errorf("%s answered, but not as a Poppydesk operator (%v): check the URL with the operator's administrator, "+
			"or try again later if the operator is having trouble", base, unreachable.Err)
	case strings.Contains(err.Error(), base):
		// identity's words already name the operator (an unusable configuration, a document
		// that is not JSON, a keyring that refused the enrollment).
		return fmt.Errorf("%w; check the URL with the operator's administrator", err)
	}
	return fmt.Errorf("enrolling with the operator %s failed: %w", base, err)
}

// UseOwnIdentity stops using an operator: it removes the recorded operator (SettingOperator)
// and deletes this device's enrollment (its device key) from the keyring, so the next start
// signs with the self-operated identity, or with none when none is published. This run keeps
// the identity it started with until Poppydesk restarts. The operator still lists the device
// until its administrator revokes it (`poppydesk operator devices revoke`, with the device ID
// shown before).
func (h *Host) UseOwnIdentity(ctx context.Context) (IdentityInfo, error) {
	switch {
	case h.demo != nil:
		return IdentityInfo{}, errDemoIdentity
	case h.cfg.Operator != "":
		return IdentityInfo{}, fmt.Errorf("this Poppydesk was started set to sign through the operator %s (Config.Operator), which the window cannot change", h.cfg.Operator)
	case h.state == nil:
		if h.problem != nil {
			return IdentityInfo{}, h.problem
		}
		return IdentityInfo{}, &Error{Message: "Poppydesk has no state database to record the identity in"}
	}
	if err := h.state.DeleteSetting(ctx, SettingOperator); err != nil {
		return IdentityInfo{}, fmt.Errorf("removing the recorded operator failed: %w; nothing changed, try again", err)
	}
	if h.secrets != nil {
		if err := h.secrets.DeleteDevice(ctx); err != nil {
			return IdentityInfo{}, fmt.Errorf("the operator is no longer used from the next start, but its enrollment key stays in the keyring: deleting it failed (%w); unlock the keyring and choose this again", err)
		}
	}
	h.log.Info("the self-operated identity is used from the next start; the operator's enrollment is deleted")
	return h.Identity(ctx), nil
}

// CheckOperator takes a fresh look at the operator this device is enrolled with (in use, or
// recorded for the next start): its configuration, and the client metadata document and logo
// Companies see. Everything goes under the Host's HTTP policy.
func (h *Host) CheckOperator(ctx context.Context) OperatorStatus {
	if h.demo != nil {
		return OperatorStatus{Error: errDemoIdentity.Error()}
	}
	b := h.device
	if h.secrets != nil {
		if e, err := h.secrets.LoadDevice(ctx); err == nil {
			b = e
		}
	}
	if b == nil {
		return OperatorStatus{Error: "Poppydesk is not enrolled with an operator: enter the operator's URL and enroll first"}
	}
	st := OperatorStatus{Operator: b.Operator, ClientID: b.ClientID, ClientName: b.ClientName, InUse: h.device != nil && h.device.DeviceID == b.DeviceID}
	client, closeFn, err := h.operatorClient()
	if err != nil {
		st.Error = err.Error()
		return st
	}
	defer closeFn()
	c, err := identity.FetchOperatorConfig(ctx, client, b.Operator)
	if err != nil {
		st.Error = operatorProblem(b.Operator, err).Error()
		return st
	}
	st.Reachable, st.SigningKid, st.Enrollment, st.PerHour, st.PerDay = true, c.SigningKid, c.Enrollment, c.Quota.PerHour, c.Quota.PerDay
	if c.ClientID != b.ClientID || c.JWKSURI != b.JWKSURI {
		st.Error = fmt.Sprintf("the operator %s now publishes another identity (client_id %s) than this device enrolled with (%s): enroll again", b.Operator, c.ClientID, b.ClientID)
		return st
	}
	meta, err := identity.FetchClientMetadata(ctx, client, c.ClientID)
	if err != nil {
		st.Error = fmt.Sprintf("the operator's client metadata document at %s, which Companies read, could not be read (%v); ask the operator's administrator", c.ClientID, err)
		return st
	}
	st.ClientName, st.LogoURI = meta.ClientName, meta.LogoURI
	if meta.LogoURI != "" {
		if st.Logo, err = newLogoFetcher(client).Fetch(ctx, meta.LogoURI); err != nil {
			st.LogoProblem = fmt.Sprintf("the operator's logo at %s cannot be shown: %v", meta.LogoURI, err)
		}
	}
	return st
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
