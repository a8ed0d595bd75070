package modelapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"
)

// SignInRequest is the model's request that the USER sign in to a Company. The window's sign-in
// screen shows it, with ModelReason marked as the model's words; only the user can start the
// sign-in there (docs/DESIGN.md invariant 1). It holds no code, token or URL.
type SignInRequest struct {
	ID          string   `json:"id"`
	Company     string   `json:"company"`     // Company identifier (spec 3.2)
	CompanyName string   `json:"companyName"` // organization.name from verified discovery
	Domain      string   `json:"domain"`      // organization.domain
	Scopes      []string `json:"scopes"`      // scopes the model asked for, each listed by the Company
	ModelReason string   `json:"modelReason"` // the model's own words, shown as such ("" when Poppydesk asked)
	// Reason is Poppydesk's own words, not the model's: the Company's need that made Poppydesk
	// ask by itself (a 401 challenge or insufficient_scope answering a model's call, spec 7),
	// e.g. "Shop asked for the scope orders:write to call exchangeItem". "" for a request the
	// model made with request_sign_in.
	Reason    string    `json:"reason"`
	Requested time.Time `json:"requested"`
}

// SignInRequests keeps the model's sign-in requests for the window. Add is the model's side;
// List and Dismiss are the window's. Implementations must be safe for concurrent use.
type SignInRequests interface {
	Add(ctx context.Context, r SignInRequest) (SignInRequest, error)
	List(ctx context.Context) ([]SignInRequest, error)
	Dismiss(ctx context.Context, id string) error
}

// MaxSignInRequests bounds how many requests [MemorySignInRequests] keeps; the oldest go first.
const MaxSignInRequests = 20

// MemorySignInRequests is an in-memory [SignInRequests]. A new request for the same Company
// replaces the earlier one (merging the scopes), so a model that asks repeatedly does not flood
// the window.
type MemorySignInRequests struct {
	mu       sync.Mutex
	reqs     []SignInRequest // oldest first
	onChange func()
}

// NewMemorySignInRequests returns an empty store; onChange (may be nil) is called after each
// change, outside the lock.
func NewMemorySignInRequests(onChange func()) *MemorySignInRequests {
	return &MemorySignInRequests{onChange: onChange}
}

// Add stores r with a new ID (replacing an earlier request for the same Company).
func (m *MemorySignInRequests) Add(_ context.Context, r SignInRequest) (SignInRequest, error) {
	if r.Company == "" {
		return SignInRequest{}, errors.New("modelapi: a sign-in request needs the Company identifier")
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return SignInRequest{}, err
	}
	r.ID = "signin_" + hex.EncodeToString(b[:])
	r.Scopes = slices.Clone(r.Scopes)
	m.mu.Lock()
	for i, old := range m.reqs {
		if old.Company == r.Company {
			if r.ModelReason == "" {
				r.ModelReason = old.ModelReason
			}
			if r.Reason == "" {
				r.Reason = old.Reason
			}
			for _, s := range old.Scopes {
				if !slices.Contains(r.Scopes, s) {
					r.Scopes = append(r.Scopes, s)
				}
			}
			m.reqs = slices.Delete(m.reqs, i, i+1)
			break
		}
	}
	slices.Sort(r.Scopes)
	m.reqs = append(m.reqs, r)
	if len(m.reqs) > MaxSignInRequests {
		m.reqs = slices.Delete(m.reqs, 0, len(m.reqs)-MaxSignInRequests)
	}
	f := m.onChange
	m.mu.Unlock()
	if f != nil {
		f()
	}
	return r, nil
}

// List returns the open requests, newest first.
func (m *MemorySignInRequests) List(context.Context) ([]SignInRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.reqs)
	slices.Reverse(out)
	return out, nil
}

// Dismiss removes a request (the user started the sign-in or declined it in the window).
func (m *MemorySignInRequests) Dismiss(_ context.Context, id string) error {
	m.mu.Lock()
	i := slices.IndexFunc(m.reqs, func(r SignInRequest) bool { return r.ID == id })
	if i >= 0 {
		m.reqs = slices.Delete(m.reqs, i, i+1)
	}
	f := m.onChange
	m.mu.Unlock()
	if i < 0 {
		return errors.New("modelapi: no sign-in request " + id + "; it was already dismissed")
	}
	if f != nil {
		f()
	}
	return nil
}
