package poppytest

import (
	"errors"
	"net/http"

	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// sessionVerifier is the Company-side Session verification (spec 5.3), by agentcore/sessioncheck.
type sessionVerifier = *sessioncheck.Verifier

type verifiedSession struct{ ClientID, SID string }

type sessionError struct{ err *sessioncheck.Error }

func (e *sessionError) write(w http.ResponseWriter) { e.err.WriteJSON(w) }

// setupVerifier builds the Verifier for the Company identifier. Its HTTP client is the engine's
// dev-mode transport, so it reaches agent.localhost (client metadata and JWKS) on this listener.
func (s *Server) setupVerifier() error {
	s.verifier = sessioncheck.New(sessioncheck.Config{
		Identifier: s.Issuer(),
		HTTPClient: s.client.NoRedirectClient(),
		Now:        s.now,
		Versions:   []string{ProtocolVersion},
		Logger:     s.log,
	})
	return nil
}

// verifierFor returns the verifier for the current identifier: the issuer, or the domain origin
// when the issuer mode says there is none (spec 3.2, 10.4).
func (s *Server) verifierFor() *sessioncheck.Verifier {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issuer != IssuerListed {
		if s.verifierNoIssuer == nil {
			s.verifierNoIssuer = sessioncheck.New(sessioncheck.Config{Identifier: s.Origin(), HTTPClient: s.client.NoRedirectClient(),
				Now: s.now, Versions: []string{ProtocolVersion}, Logger: s.log})
		}
		return s.verifierNoIssuer
	}
	return s.verifier
}

func (s *Server) verifySession(r *http.Request, token, tokenClientID string) (verifiedSession, *sessionError) {
	sess, err := s.verifierFor().Verify(r.Context(), r, token, tokenClientID)
	if err != nil {
		var se *sessioncheck.Error
		if !errors.As(err, &se) {
			se = &sessioncheck.Error{Status: http.StatusBadRequest, Code: sessioncheck.CodeInvalidSession, Description: err.Error()}
		}
		return verifiedSession{}, &sessionError{se}
	}
	return verifiedSession{ClientID: sess.ClientID, SID: sess.SID}, nil
}

// endSession ends a Session (the session-ended fault, spec 5.5).
func (s *Server) endSession(v verifiedSession) {
	s.verifierFor().End(v.ClientID, v.SID)
	s.mu.Lock()
	s.ended[v.SID] = true
	s.mu.Unlock()
}
