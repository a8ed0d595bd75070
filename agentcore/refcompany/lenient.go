package refcompany

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// Faults of a Company that accepts what the specification says it must refuse, or that does
// not keep what it must keep. Each breaks one rule `poppydesk check` probes, so a probe that
// stopped looking would let its fault pass (agentcore/conformance's TestEveryRuleFails). They
// are listed in Faults (server.go), except AgentFaultRetryNewConversation (AgentFaults).
const (
	// FaultPoppyJSONMissing: https://{domain}/.well-known/poppy.json answers 404 (spec 3: a
	// Company MUST publish it there).
	FaultPoppyJSONMissing = "poppy-json-missing"
	// FaultSessionIatUnchecked: Session JWTs are accepted whatever their iat, up to three hours
	// old (spec 5.3: iat within a short window).
	FaultSessionIatUnchecked = "session-iat-unchecked"
	// FaultVersionUnchecked: a Session request without Poppy-Version, or with a version the
	// Company does not serve, is handled as if it named 0.4 (spec 3.4: version_unsupported).
	FaultVersionUnchecked = "version-unchecked"
	// FaultClientMetadataUnfetched: the authorization server never fetches a client_id URL; it
	// knows only clients registered with it, so every Personal Agent gets invalid_client (spec
	// 4.1: the Company fetches the client metadata document).
	FaultClientMetadataUnfetched = "client-metadata-unfetched"
	// FaultAssertionAudLoose: a client assertion's aud is accepted as the issuer with a trailing
	// slash, the token endpoint, or an array holding the issuer (spec 4.1, 10.4: the issuer as
	// one string, exactly).
	FaultAssertionAudLoose = "assertion-aud-loose"
	// FaultPKCEOptional: an authorization request without code_challenge shows the sign-in
	// page and its code is redeemed without code_verifier (spec 4.2: the grant is with PKCE).
	FaultPKCEOptional = "pkce-optional"
	// FaultRedirectURILoose: any loopback redirect_uri is accepted, whatever its path (spec 4.2,
	// RFC 9700 §4.1: exact match, the loopback port aside).
	FaultRedirectURILoose = "redirect-uri-loose"
	// FaultOperationIgnoresChange: while an operation's latest revision is valid, every request
	// for the same order item gets it, whatever replacement it asks for (Operations 3: other
	// terms, a new revision).
	FaultOperationIgnoresChange = "operation-ignores-change"
	// FaultOperationIDShared: every exchange request of an account gets the same operation,
	// whichever order item it asks about (Operations 3: an operation_id is never used for
	// another action).
	FaultOperationIDShared = "operation-id-shared"
	// FaultApprovalPerformsAgain: an approval sent again performs the operation again instead
	// of answering with the first response (Operations 7: at most once). SetNoReplay is the same
	// switch for tests that count every performing request.
	FaultApprovalPerformsAgain = "approval-performs-again"
	// FaultOrganizationNameMissing: poppy.json's organization has no name (spec 3.1: required).
	FaultOrganizationNameMissing = "organization-name-missing"
	// FaultFeedbackHTTPURL: poppy.json's feedback endpoint is an http:// URL (spec 3: every URL
	// the protocol exchanges is HTTPS).
	FaultFeedbackHTTPURL = "feedback-http-url"
	// FaultASMetadataNoRevocation: the authorization server metadata has no revocation_endpoint
	// (spec 3.2: required).
	FaultASMetadataNoRevocation = "as-metadata-no-revocation"
	// FaultResourceMetadataWrongResource: the domain's protected resource metadata names the
	// resource with a trailing slash (spec 3.2: exactly https://{organization.domain}).
	FaultResourceMetadataWrongResource = "resource-metadata-wrong-resource"
	// FaultAuthIssuerUnlisted: poppy.json's auth.issuer names a server the protected resource
	// metadata does not list (spec 3.1: it MUST name that server).
	FaultAuthIssuerUnlisted = "auth-issuer-unlisted"
	// FaultSignInWithoutIssuer: the protected resource metadata answers 404 (no issuer) while
	// the Company Agent's protocol says signed_in access (spec 3.2: a Company that lists it MUST
	// have an issuer).
	FaultSignInWithoutIssuer = "sign-in-without-issuer"
	// FaultVersionDocumentRedirect: poppy.json is version 0.5 and lists its 0.4 document at a
	// URL that redirects (spec 3.4: each listed document is served without redirects).
	FaultVersionDocumentRedirect = "version-document-redirect"
	// FaultHTUAnyScheme: a Session JWT's htu is compared with the request URL without its
	// scheme, so the http:// form of the request URL is accepted (spec 3: Companies MUST reject
	// a URL of another scheme from a Personal Agent). The verifier's HTUAnyScheme option.
	FaultHTUAnyScheme = "htu-any-scheme"
	// FaultTokenInQuery: a request without Authorization has its access token read from the
	// access_token query parameter (RFC 6750 §2.3), with the DPoP scheme when it carries a DPoP
	// proof (spec 5.6: Companies MUST NOT accept tokens from a URL).
	FaultTokenInQuery = "token-in-query"
	// FaultTokenAnyResource: the protected endpoints accept an access token the issuer issued
	// for any resource, such as one for the MCP server's url at the Orders API (spec 7: a token
	// for the MCP server works only there, and the Company MUST reject it elsewhere).
	FaultTokenAnyResource = "token-any-resource"
	// AgentFaultMissingFields: reads of a conversation carry no has_more, and the Company
	// Agent's messages no author (spec 8.5, 8.7: every successful read includes has_more; each
	// Company message includes author.type).
	AgentFaultMissingFields = "agent-missing-fields"
	// AgentFaultRetryNewConversation: a first message sent again with the same ID and content
	// starts another conversation instead of getting the original response (spec 8.3).
	AgentFaultRetryNewConversation = "agent-retry-new-conversation"
)

// lenientFaults are the faults of this file that Faults lists.
var lenientFaults = []string{FaultPoppyJSONMissing, FaultSessionIatUnchecked, FaultVersionUnchecked, FaultClientMetadataUnfetched,
	FaultAssertionAudLoose, FaultPKCEOptional, FaultRedirectURILoose, FaultOperationIgnoresChange, FaultOperationIDShared,
	FaultApprovalPerformsAgain, FaultOrganizationNameMissing, FaultFeedbackHTTPURL, FaultASMetadataNoRevocation, FaultResourceMetadataWrongResource,
	FaultAuthIssuerUnlisted, FaultSignInWithoutIssuer, FaultVersionDocumentRedirect, FaultHTUAnyScheme, FaultTokenInQuery,
	FaultTokenAnyResource}

// movedVersionPath is where FaultVersionDocumentRedirect lists the 0.4 document: it redirects.
const movedVersionPath = "/poppy/0.4-moved.json"

// lenientServe applies the faults of this file that act before a request is routed: it
// answers 404 for poppy.json (FaultPoppyJSONMissing, reporting true) or names the served
// version in a Session request that named none or another (FaultVersionUnchecked).
func (s *Server) lenientServe(w http.ResponseWriter, r *http.Request) bool {
	host, _, _ := strings.Cut(strings.ToLower(r.Host), ":")
	if s.fault(FaultPoppyJSONMissing) && host == ShopHost && r.URL.Path == "/.well-known/poppy.json" {
		http.NotFound(w, r)
		return true
	}
	if host == ShopHost && (r.URL.Path == movedVersionPath ||
		s.fault(FaultSignInWithoutIssuer) && r.URL.Path == "/.well-known/oauth-protected-resource") {
		if r.URL.Path == movedVersionPath {
			http.Redirect(w, r, s.URL(ShopHost, "/poppy/"+ProtocolVersion+".json"), http.StatusFound)
		} else {
			http.NotFound(w, r)
		}
		return true
	}
	if s.fault(FaultVersionUnchecked) && r.Header.Get("Poppy-Session") != "" && r.Header.Get("Poppy-Version") != ProtocolVersion {
		r.Header.Set("Poppy-Version", ProtocolVersion)
	}
	return false
}

// lenientVerifier is the Session verifier under FaultSessionIatUnchecked (an iat window of three
// hours either side of now) and FaultHTUAnyScheme (htu compared without its scheme): nil when
// both are off.
func (s *Server) lenientVerifier(identifier string) *sessioncheck.Verifier {
	iat, scheme := s.fault(FaultSessionIatUnchecked), s.fault(FaultHTUAnyScheme)
	if !iat && !scheme {
		return nil
	}
	key := fmt.Sprintf("%s|%t|%t", identifier, iat, scheme)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verifierLenient == nil || s.verifierLenientFor != key {
		cfg := sessioncheck.Config{Identifier: identifier, HTTPClient: s.client.NoRedirectClient(),
			Now: s.now, Versions: []string{ProtocolVersion}, Logger: s.log, HTUAnyScheme: scheme}
		if iat {
			cfg.Window = 3 * time.Hour
		}
		s.verifierLenient = sessioncheck.New(cfg)
		s.verifierLenientFor = key
	}
	return s.verifierLenient
}

// queryToken is the Authorization a request carries ("" for none), or under FaultTokenInQuery,
// for a request without one, its access_token query parameter as a Bearer token, or as a DPoP
// token when the request carries a DPoP proof.
func (s *Server) queryToken(r *http.Request) string {
	a := r.Header.Get("Authorization")
	t := r.URL.Query().Get("access_token")
	if a != "" || t == "" || !s.fault(FaultTokenInQuery) {
		return a
	}
	if r.Header.Get("DPoP") != "" {
		return "DPoP " + t
	}
	return "Bearer " + t
}

// audAccepted reports whether a client assertion's aud passes: the issuer as one string, or
// under FaultAssertionAudLoose also the issuer with a slash, the token endpoint, or an array
// holding the issuer.
func (s *Server) audAccepted(raw json.RawMessage) bool {
	is := s.Issuer()
	var aud string
	if json.Unmarshal(raw, &aud) == nil && aud == is {
		return true
	}
	if !s.fault(FaultAssertionAudLoose) {
		return false
	}
	if aud == is+"/" || aud == is+"/oauth/token" {
		return true
	}
	var auds []string
	return json.Unmarshal(raw, &auds) == nil && slices.Contains(auds, is)
}

// redirectAccepted reports whether an authorization request's redirect_uri passes: exactly a
// registered one (the loopback port aside), or under FaultRedirectURILoose any loopback URI.
func (s *Server) redirectAccepted(registered []string, requested string) bool {
	if redirectMatches(registered, requested) {
		return true
	}
	u, err := url.Parse(requested)
	return s.fault(FaultRedirectURILoose) && err == nil && u.Scheme == "http" && (u.Hostname() == "127.0.0.1" || u.Hostname() == "::1")
}

// editLenientPoppy applies the poppy.json faults of this file; main is the well-known document.
func (s *Server) editLenientPoppy(doc map[string]any, main bool) {
	if s.fault(FaultScopeHintPartial) {
		delete(doc["auth"].(map[string]any)["scope_hints"].(map[string]any)["orders:write"].(map[string]any), "personal_data")
	}
	if s.fault(FaultOrganizationNameMissing) {
		delete(doc["organization"].(map[string]any), "name")
	}
	if s.fault(FaultFeedbackHTTPURL) {
		doc["feedback"] = map[string]any{"endpoint": "http://" + s.Domain + FeedbackPath}
	}
	if s.fault(FaultAuthIssuerUnlisted) {
		doc["auth"].(map[string]any)["issuer"] = s.URL(OtherHost, "")
	}
	if s.fault(FaultSignInWithoutIssuer) {
		delete(doc["auth"].(map[string]any), "issuer")
		for _, p := range doc["agent"].(map[string]any)["protocols"].([]any) {
			p.(map[string]any)["access"] = "signed_in"
		}
	}
	if main && s.fault(FaultVersionDocumentRedirect) {
		doc["protocol_version"] = "0.5"
		doc["supported_versions"] = map[string]any{ProtocolVersion: s.URL(ShopHost, movedVersionPath)}
	}
}

// editLenientAS applies the authorization server metadata faults of this file.
func (s *Server) editLenientAS(doc map[string]any) {
	if s.fault(FaultASMetadataNoRevocation) {
		delete(doc, "revocation_endpoint")
	}
}

// editLenientPR applies the protected resource metadata faults of this file.
func (s *Server) editLenientPR(doc map[string]any) {
	if s.fault(FaultResourceMetadataWrongResource) {
		doc["resource"] = s.Origin() + "/"
	}
}
