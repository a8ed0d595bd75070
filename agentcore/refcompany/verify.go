package refcompany

import (
	"errors"
	"net/http"
	"strings"

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
	identifier := s.Identifier()
	if v := s.lenientVerifier(identifier); v != nil {
		return v
	}
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
	v := s.verifierFor()
	if u := s.unkeptVerifier(r); u != nil {
		v = u
	}
	sess, err := v.Verify(r.Context(), r, token, tokenClientID)
	if err == nil && s.keyPinned(r, sess.ClientID, sess.SID) {
		err = &sessioncheck.Error{Status: http.StatusBadRequest, Code: sessioncheck.CodeInvalidSession,
			Description: "this Session's requests must be signed with the delegated key of its first request"}
	}
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

// resourceOf is the resource a protected endpoint serves (spec 4.5, 7): the MCP server's url at
// the MCP server, APIResource at the Orders API after SetAPIResource(true), and
// https://{organization.domain} (the origin) everywhere else.
func (s *Server) resourceOf(r *http.Request) string {
	switch {
	case r.URL.Path == MCPPath:
		return s.MCPURL()
	case strings.HasPrefix(r.URL.Path, "/api/") && s.apiResourceOn():
		return s.APIResource()
	}
	return s.Origin()
}

// resourceMetadataOf is the protected resource metadata URL of the resource r is for (RFC 9728
// §3.1), for the resource_metadata attribute of invalid_token challenges (spec 4.5).
func (s *Server) resourceMetadataOf(r *http.Request) string {
	switch {
	case r.URL.Path == MCPPath:
		return s.mcpResourceMetadata()
	case strings.HasPrefix(r.URL.Path, "/api/") && s.apiResourceOn():
		return s.URL(ShopHost, apiMetadataPath)
	}
	return s.URL(ShopHost, "/.well-known/oauth-protected-resource")
}

// tokenBinding is the DPoP key thumbprint a token issued by the authorization server is bound
// to ("" for Bearer tokens and tokens added by AddAccessToken).
func (s *Server) tokenBinding(token string) string {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.atInfo[token].jkt
}

// challenge writes a 401 (or status) with one WWW-Authenticate challenge of scheme (RFC 6750 §3,
// RFC 9449 §7.1) and the same error in a JSON body.
func challenge(w http.ResponseWriter, status int, scheme, code, desc, resourceMetadata string) {
	v := scheme + ` error="` + code + `", error_description="` + strings.ReplaceAll(desc, `"`, `'`) + `"`
	if scheme == "DPoP" {
		v += `, algs="ES256"`
	}
	if resourceMetadata != "" {
		v += `, resource_metadata="` + resourceMetadata + `"`
	}
	w.Header().Set("WWW-Authenticate", v)
	writeError(w, status, code, desc)
}

// checkAccessToken reads and checks the access token of a request to a protected endpoint, as
// an OAuth resource does before anything else (spec 4.5, 7, RFC 6750, RFC 9449 §7):
//
//   - "Authorization: Bearer t" or "Authorization: DPoP t"; anything else is invalid_request.
//   - an unknown, revoked or expired token is invalid_token (RFC 6750 §3.1);
//   - a token the authorization server issued works only at the resource it was issued for:
//     the MCP server's url at the MCP server, https://{organization.domain} elsewhere; any other
//     is invalid_token with resource_metadata, so a Personal Agent with stale metadata learns
//     which token the service needs (spec 4.5, 7, RFC 9728 §5.1);
//   - a DPoP-bound token must come with the DPoP scheme and a proof for this request from the
//     bound key (VerifyDPoPAccess); as Bearer it is invalid_token (RFC 9449 §7.2). With the
//     resource-dpop-nonce fault, a proof without the server's nonce gets use_dpop_nonce and a
//     DPoP-Nonce header (RFC 9449 §9);
//   - a Bearer-only token sent with the DPoP scheme is invalid_token.
//
// resourceMetadata goes in every challenge when set (MCP servers, spec 7). It returns the token
// ("" when the request has none) and its record; on failure it has written the answer.
func (s *Server) checkAccessToken(w http.ResponseWriter, r *http.Request, resourceMetadata string) (string, AccessToken, bool) {
	a := s.queryToken(r) // the Authorization header; the query too under FaultTokenInQuery (lenient.go)
	if a == "" {
		return "", AccessToken{}, true
	}
	scheme, token, ok := strings.Cut(a, " ")
	dpop := strings.EqualFold(scheme, "DPoP")
	if !ok || token == "" || !dpop && !strings.EqualFold(scheme, "Bearer") {
		challenge(w, http.StatusBadRequest, "Bearer", "invalid_request", "malformed Authorization header: use Bearer or DPoP and the access token", resourceMetadata)
		return "", AccessToken{}, false
	}
	sch := "Bearer"
	if dpop {
		sch = "DPoP"
	}
	s.mu.Lock()
	at, known := s.tokens[token]
	nonce := s.dpopNonce
	s.mu.Unlock()
	switch {
	case !known:
		challenge(w, http.StatusUnauthorized, sch, "invalid_token", "the access token is revoked or unknown", resourceMetadata)
		return "", AccessToken{}, false
	case !at.Expires.IsZero() && !s.now().Before(at.Expires):
		challenge(w, http.StatusUnauthorized, sch, "invalid_token", "the access token has expired", resourceMetadata)
		return "", AccessToken{}, false
	}
	if res, issued := s.TokenResource(token); issued && res != s.resourceOf(r) && !s.fault(FaultTokenAnyResource) {
		rm := resourceMetadata
		if rm == "" {
			rm = s.resourceMetadataOf(r)
		}
		challenge(w, http.StatusUnauthorized, sch, "invalid_token", "the access token was issued for another resource; see resource_metadata (spec 4.5)", rm)
		return "", AccessToken{}, false
	}
	bound := s.tokenBinding(token) != ""
	switch {
	case bound && !dpop:
		challenge(w, http.StatusUnauthorized, "DPoP", "invalid_token", "the access token is DPoP-bound: send it with the DPoP scheme and a proof (RFC 9449 §7.2)", resourceMetadata)
		return "", AccessToken{}, false
	case !bound && dpop:
		challenge(w, http.StatusUnauthorized, "Bearer", "invalid_token", "the access token is not DPoP-bound: send it with the Bearer scheme", resourceMetadata)
		return "", AccessToken{}, false
	case bound && s.fault(FaultResourceDPoPNonce) && jktNonce(r.Header.Get("DPoP")) != nonce:
		w.Header().Set("DPoP-Nonce", nonce)
		challenge(w, http.StatusUnauthorized, "DPoP", "use_dpop_nonce", "this resource requires a DPoP nonce (RFC 9449 §9)", resourceMetadata)
		return "", AccessToken{}, false
	case bound:
		if err := s.VerifyDPoPAccess(r, token); err != nil {
			challenge(w, http.StatusUnauthorized, "DPoP", "invalid_dpop_proof", err.Error(), resourceMetadata)
			return "", AccessToken{}, false
		}
	}
	return token, at, true
}
