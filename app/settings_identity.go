package app

// Settings → Identity (spec 4.1, 10.7): the identity Companies see — the self-operated one, or
// an operator's, enrolled by URL from the window — and a fresh look at the operator. Thin fronts
// over the Host's methods in host_operator.go; a change takes effect when Poppydesk restarts.

import (
	"context"
	"time"
)

// enrollTimeout bounds an enrollment or a check: the operator's configuration, the enrollment,
// the client metadata document and the logo.
const enrollTimeout = 30 * time.Second

// Identity returns the identity this run signs with and the one the next start uses.
func (s *Settings) Identity() (IdentityInfo, error) {
	if s.h == nil {
		return IdentityInfo{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), 10*time.Second)
	defer cancel()
	return s.h.Identity(ctx), nil
}

// EnrollOperator enrolls this device with the operator at url, with the enrollment token from
// its administrator ("" where enrollment is open), and records it for the next start.
func (s *Settings) EnrollOperator(url, token string) (IdentityInfo, error) {
	if s.h == nil {
		return IdentityInfo{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), enrollTimeout)
	defer cancel()
	return s.h.EnrollOperator(ctx, url, token)
}

// CheckOperator asks the enrolled operator what it publishes (client_name, logo, client_id)
// and how it signs (signing kid, quotas).
func (s *Settings) CheckOperator() (OperatorStatus, error) {
	if s.h == nil {
		return OperatorStatus{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), enrollTimeout)
	defer cancel()
	return s.h.CheckOperator(ctx), nil
}

// UseOwnIdentity stops using the operator from the next start and deletes this device's
// enrollment (Host.UseOwnIdentity).
func (s *Settings) UseOwnIdentity() (IdentityInfo, error) {
	if s.h == nil {
		return IdentityInfo{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), 10*time.Second)
	defer cancel()
	return s.h.UseOwnIdentity(ctx)
}
