package fronts

// Settings → Identity (spec 4.1, 10.7): the identity Companies see — the self-operated one, or
// an operator's, enrolled by URL from the window — and a fresh look at the operator. Thin fronts
// over the Host's methods in app/host_operator.go; a change takes effect when Poppydesk restarts.

import (
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// IdentityInfo is what the Settings → Identity screen shows ([app.IdentityInfo]).
type IdentityInfo app.IdentityInfo

// OperatorStatus is a fresh look at the operator ([app.OperatorStatus]).
type OperatorStatus app.OperatorStatus

// enrollTimeout bounds an enrollment or a check: the operator's configuration, the enrollment,
// the client metadata document and the logo.
const enrollTimeout = 30 * time.Second

// Identity returns the identity this run signs with and the one the next start uses.
func (s *Settings) Identity() (IdentityInfo, error) {
	ctx, cancel, err := s.ctx(settingsCall)
	if err != nil {
		return IdentityInfo{}, err
	}
	defer cancel()
	return IdentityInfo(s.h.Identity(ctx)), nil
}

// EnrollOperator enrolls this device with the operator at url, with the enrollment token from
// its administrator ("" where enrollment is open), and records it for the next start.
func (s *Settings) EnrollOperator(url, token string) (IdentityInfo, error) {
	ctx, cancel, err := s.ctx(enrollTimeout)
	if err != nil {
		return IdentityInfo{}, err
	}
	defer cancel()
	info, err := s.h.EnrollOperator(ctx, url, token)
	return IdentityInfo(info), err
}

// CheckOperator asks the enrolled operator what it publishes (client_name, logo, client_id)
// and how it signs (signing kid, quotas).
func (s *Settings) CheckOperator() (OperatorStatus, error) {
	ctx, cancel, err := s.ctx(enrollTimeout)
	if err != nil {
		return OperatorStatus{}, err
	}
	defer cancel()
	return OperatorStatus(s.h.CheckOperator(ctx)), nil
}

// UseOwnIdentity stops using the operator from the next start and deletes this device's
// enrollment ([app.Host.UseOwnIdentity]).
func (s *Settings) UseOwnIdentity() (IdentityInfo, error) {
	ctx, cancel, err := s.ctx(settingsCall)
	if err != nil {
		return IdentityInfo{}, err
	}
	defer cancel()
	info, err := s.h.UseOwnIdentity(ctx)
	return IdentityInfo(info), err
}
