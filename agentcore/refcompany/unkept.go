package refcompany

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/dunglas/httpsfv"

	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// Faults of a Company that refuses what the specification says it must accept, or that keys
// its state more loosely than the specification says: each breaks one rule `poppydesk check`
// probes (agentcore/conformance's TestEveryRuleFails). The Company Agent's are in AgentFaults.
const (
	// FaultSessionKeyPinned: a Session is pinned to the delegated key of its first request, and
	// a later request signed with another delegated key gets invalid_session (spec 5.2: a
	// Company MUST NOT treat a new delegated key as a reason to reject a request).
	FaultSessionKeyPinned = "session-key-pinned"
	// FaultSessionSidAnyUser: Sessions are kept by sid and User ID, so a known sid with another
	// User ID starts another Session instead of getting invalid_session (spec 5.3: a known sid
	// continues its Session, and the JWT MUST have that Session's User ID).
	FaultSessionSidAnyUser = "session-sid-any-user"
	// FaultUnknownExtensionRefused: a Session request declaring an extension the Company does
	// not know gets 400 invalid_request (spec 3.3: Companies MUST ignore extensions they don't
	// support).
	FaultUnknownExtensionRefused = "unknown-extension-refused"
	// FaultMCPMetadataWrongResource: the MCP server's protected resource metadata names the
	// domain's origin as its resource (spec 7: it MUST equal the MCP server's url).
	FaultMCPMetadataWrongResource = "mcp-metadata-wrong-resource"
	// FaultMCPMetadataOtherIssuer: the MCP server's protected resource metadata lists another
	// authorization server than the Company's issuer (spec 7: it MUST include the issuer).
	FaultMCPMetadataOtherIssuer = "mcp-metadata-other-issuer"
	// FaultVersionDocumentOtherDomain: the 0.3 document supported_versions lists names another
	// organization.domain (spec 3.4: every document served at the same time MUST have the
	// same organization.domain).
	FaultVersionDocumentOtherDomain = "version-document-other-domain"
	// FaultScopeHintPartial: poppy.json's scope hint of orders:write has no personal_data
	// (spec 4.7: a Company MUST include both fields in each entry).
	FaultScopeHintPartial = "scope-hint-partial"
	// FaultApprovalUnknownMemberRefused: the Orders API refuses a Poppy-Approval with a member
	// besides operation_id and revision with 400 invalid_request (Operations 6: Companies MUST
	// ignore members they don't recognize).
	FaultApprovalUnknownMemberRefused = "approval-unknown-member-refused"
	// FaultDeviceLinkApproves: opening verification_uri_complete approves the device request
	// for the account device@shop.example with the scopes asked (spec 4.3: opening the link
	// MUST NOT approve the request by itself).
	FaultDeviceLinkApproves = "device-link-approves"
	// FaultCookieRequired: the APIs (/api/...) answer a Session request without their cookie
	// with 401 cookie_required and a Set-Cookie, and handle it only when it carries that cookie
	// (spec 5.6: Companies MUST accept the Session header and access token without requiring
	// cookies).
	FaultCookieRequired = "cookie-required"
	// AgentFaultAnyUser: a conversation belongs to the Personal Agent alone, so any User of it
	// reads the conversation and starts Direct Conversations under it (spec 8.2: a request
	// continues a conversation only when the client_id and User ID match).
	AgentFaultAnyUser = "agent-conversation-any-user"
	// AgentFaultUserRequestedUnchecked: a Direct Conversation's start is accepted whatever its
	// user_requested_event_id names (spec 8.10: invalid_request when it names no
	// user_requested event of the parent).
	AgentFaultUserRequestedUnchecked = "agent-user-requested-unchecked"
)

// unkeptFaults are the faults of this file that Faults lists.
var unkeptFaults = []string{FaultSessionKeyPinned, FaultSessionSidAnyUser, FaultUnknownExtensionRefused,
	FaultMCPMetadataWrongResource, FaultMCPMetadataOtherIssuer, FaultVersionDocumentOtherDomain,
	FaultScopeHintPartial, FaultApprovalUnknownMemberRefused,
	FaultDeviceLinkApproves, FaultCookieRequired}

// mcpMetadata is the MCP server's protected resource metadata (spec 7 "MCP servers", RFC 9728),
// with the MCP metadata faults of this file applied.
func (s *Server) mcpMetadata() map[string]any {
	doc := map[string]any{"resource": s.MCPURL(), "authorization_servers": []any{s.Issuer()},
		"scopes_supported": []any{"orders:read", "orders:write"}, "bearer_methods_supported": []any{"header"}}
	if s.fault(FaultMCPMetadataWrongResource) {
		doc["resource"] = s.Origin()
	}
	if s.fault(FaultMCPMetadataOtherIssuer) {
		doc["authorization_servers"] = []any{s.URL(OtherHost, "")}
	}
	return doc
}

// unkeptState is the state of this file's faults: the verifiers per User ID of
// FaultSessionSidAnyUser and the delegated key of each Session under FaultSessionKeyPinned.
type unkeptState struct {
	mu      sync.Mutex
	perUser map[string]*sessioncheck.Verifier // identifier|sub → its verifier
	keys    map[string]string                 // client_id|sid → the kid of its first request
	cookies map[string]bool                   // the values of the API cookie FaultCookieRequired set
}

// apiCookie is the cookie FaultCookieRequired sets and then requires.
const apiCookie = "shop_api"

// refusesWithoutCookie answers, under FaultCookieRequired, a Session request to the APIs that
// does not carry a cookie the APIs set: 401 cookie_required with a new cookie. It reports
// whether it answered.
func (s *Server) refusesWithoutCookie(w http.ResponseWriter, r *http.Request) bool {
	if !s.fault(FaultCookieRequired) || !strings.HasPrefix(r.URL.Path, "/api/") || r.Header.Get(headers.Session) == "" {
		return false
	}
	u := &s.unkept
	u.mu.Lock()
	defer u.mu.Unlock()
	if c, err := r.Cookie(apiCookie); err == nil && u.cookies[c.Value] {
		return false
	}
	if u.cookies == nil {
		u.cookies = map[string]bool{}
	}
	v := randID(16)
	u.cookies[v] = true
	http.SetCookie(w, &http.Cookie{Name: apiCookie, Value: v, Path: "/api/", Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	writeError(w, http.StatusUnauthorized, "cookie_required", "this API keeps its clients by the "+apiCookie+" cookie: send the request again with the cookie set in this answer")
	return true
}

// unkeptVerifier is the verifier under FaultSessionSidAnyUser (nil when it is off): one per
// User ID the Session JWT names, unverified, so each User has Sessions of its own per sid.
func (s *Server) unkeptVerifier(r *http.Request) *sessioncheck.Verifier {
	if !s.fault(FaultSessionSidAnyUser) {
		return nil
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	jwtPart(r.Header.Get("Poppy-Session"), 1, &claims)
	identifier := s.Identifier()
	u := &s.unkept
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.perUser == nil {
		u.perUser = map[string]*sessioncheck.Verifier{}
	}
	k := identifier + "|" + claims.Sub
	if u.perUser[k] == nil {
		u.perUser[k] = sessioncheck.New(sessioncheck.Config{Identifier: identifier, HTTPClient: s.client.NoRedirectClient(),
			Now: s.now, Versions: []string{ProtocolVersion}, Logger: s.log})
	}
	return u.perUser[k]
}

// keyPinned reports, under FaultSessionKeyPinned, whether a verified request of the Session
// (clientID, sid) is signed with another delegated key than the Session's first request.
func (s *Server) keyPinned(r *http.Request, clientID, sid string) bool {
	if !s.fault(FaultSessionKeyPinned) {
		return false
	}
	var hdr struct {
		Kid string `json:"kid"`
	}
	jwtPart(r.Header.Get("Poppy-Session"), 0, &hdr)
	u := &s.unkept
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.keys == nil {
		u.keys = map[string]string{}
	}
	k := clientID + "|" + sid
	if first, ok := u.keys[k]; ok {
		return first != hdr.Kid
	}
	u.keys[k] = hdr.Kid
	return false
}

// refusesExtensions reports, under FaultUnknownExtensionRefused, whether r declares an
// extension other than operations.
func (s *Server) refusesExtensions(r *http.Request) bool {
	if !s.fault(FaultUnknownExtensionRefused) {
		return false
	}
	for _, x := range headers.ParseExtensions(r.Header.Values(headers.Extensions)) {
		if x.Name != "operations" {
			return true
		}
	}
	return false
}

// refusesApprovalMembers reports, under FaultApprovalUnknownMemberRefused, whether r's
// Poppy-Approval has a member besides operation_id and revision.
func (s *Server) refusesApprovalMembers(r *http.Request) bool {
	vals := r.Header.Values(headers.Approval)
	if !s.fault(FaultApprovalUnknownMemberRefused) || len(vals) == 0 {
		return false
	}
	d, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return false
	}
	for _, k := range d.Names() {
		if k != "operation_id" && k != "revision" {
			return true
		}
	}
	return false
}

// jwtPart decodes part i (0 the header, 1 the claims) of a compact JWS into v, unverified;
// the faults above read what a verified request carries.
func jwtPart(raw string, i int, v any) {
	parts := strings.Split(strings.TrimSpace(raw), ".")
	if len(parts) != 3 {
		return
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err == nil {
		json.Unmarshal(b, v)
	}
}
