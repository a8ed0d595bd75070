package refcompany

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// ProtocolVersion is the version the reference Company prefers.
const ProtocolVersion = "0.4"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, desc string) {
	m := map[string]string{"error": code}
	if desc != "" {
		m["error_description"] = desc
	}
	writeJSON(w, status, m)
}

// poppyDoc builds the poppy.json for version ver (spec 3.1). main says whether it is the
// well-known document (which carries supported_versions).
func (s *Server) poppyDoc(ver string, main bool) map[string]any {
	o := s.Origin()
	domain := s.Domain
	if s.fault(FaultDomainMismatch) || !main && ver == "0.3" && s.fault(FaultVersionDocumentOtherDomain) {
		domain = s.authority(OtherHost)
	}
	doc := map[string]any{
		"protocol_version": ver,
		"organization":     map[string]any{"name": "Shop (reference Company)", "domain": domain, "logo_uri": o + "/logo.png"},
		"auth": map[string]any{
			"scopes": map[string]any{
				"orders:read":  "See your orders and returns",
				"orders:write": "Return items and change orders",
			},
			"scope_hints": map[string]any{
				"orders:read":  map[string]any{"changes": "none", "personal_data": true},
				"orders:write": map[string]any{"changes": "irreversible", "personal_data": true},
			},
		},
		"agent": map[string]any{"protocols": []any{map[string]any{"type": "poppy", "endpoint": o + "/poppy/conversations"}}},
		"web":   map[string]any{"browser_session_endpoint": o + "/poppy/browser-session"},
		"apis": []any{
			map[string]any{"type": "openapi", "url": o + "/api/openapi.json", "description": "Products, orders, and exchanges"},
			map[string]any{"type": "mcp", "url": o + MCPPath, "description": "Product search and item exchanges"},
		},
		"feedback":       map[string]any{"endpoint": o + FeedbackPath},
		"excluded_tasks": map[string]any{"url": o + ExcludedTasksPath},
		"skill_index":    s.skillIndex(), // coverage.go (spec 9.4)
		"extensions": map[string]any{
			"operations":                  []any{map[string]any{"version": "2"}},
			"shop.localhost/gift-wrap":    []any{map[string]any{"version": "1", "endpoint": o + "/poppy/gift-wrap"}},
			"example.invalid/unsupported": []any{map[string]any{"version": "9"}},
		},
	}
	if s.issuerMode() == IssuerListed {
		doc["auth"].(map[string]any)["issuer"] = s.Issuer()
	}
	if main {
		sv := map[string]any{"0.3": o + "/poppy/0.3.json"}
		if ver != ProtocolVersion {
			sv[ProtocolVersion] = o + "/poppy/" + ProtocolVersion + ".json"
		}
		if s.fault(FaultVersionMismatch) {
			doc["protocol_version"] = "0.5"
			sv = map[string]any{"0.3": o + "/poppy/0.3.json"}
		}
		doc["supported_versions"] = sv
	}
	s.editHostilePoppy(doc)       // hostile.go
	s.editLenientPoppy(doc, main) // lenient.go
	s.listExtraAPIs(doc)          // extra_api.go
	s.mu.Lock()
	edit := s.editPoppy
	s.mu.Unlock()
	if edit != nil {
		edit(doc)
	}
	return doc
}

func (s *Server) issuerMode() IssuerMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuer
}

func (s *Server) cacheControl() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cacheCtl
}

// serveDoc serves a discovery document with Cache-Control and a strong ETag, answering 304 to a
// matching If-None-Match (RFC 9111, RFC 9110 §13.1.2).
func (s *Server) serveDoc(w http.ResponseWriter, r *http.Request, doc any) {
	body, _ := json.Marshal(doc)
	etag := fmt.Sprintf(`"%x"`, fnv64(body))
	w.Header().Set("Cache-Control", s.cacheControl())
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && slices.Contains(strings.Split(strings.ReplaceAll(inm, " ", ""), ","), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func (s *Server) serveWWW(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/poppy.json" {
		http.Redirect(w, r, s.PoppyJSONURL(), http.StatusMovedPermanently)
		return
	}
	http.NotFound(w, r)
}

func (s *Server) serveShop(w http.ResponseWriter, r *http.Request) {
	o := s.Origin()
	p := r.URL.Path
	if s.refusesWithoutCookie(w, r) { // unkept.go
		return
	}
	if x := s.extraAPIAt(p); x != nil {
		x.serve(s, w, r) // extra_api.go
		return
	}
	switch {
	case p == "/.well-known/poppy.json":
		if s.fault(FaultRedirectOtherPath) {
			http.Redirect(w, r, o+"/uploads/poppy.json", http.StatusFound)
			return
		}
		s.mu.Lock()
		ver := s.mainVer
		s.mu.Unlock()
		s.serveDoc(w, r, s.poppyDoc(ver, true))
	case p == "/uploads/poppy.json":
		// A file anyone could upload: a valid-looking document at the wrong path.
		s.serveDoc(w, r, s.poppyDoc(ProtocolVersion, true))
	case p == "/poppy/0.3.json":
		s.serveDoc(w, r, s.poppyDoc("0.3", false))
	case p == "/poppy/"+ProtocolVersion+".json":
		s.serveDoc(w, r, s.poppyDoc(ProtocolVersion, false))
	case p == "/.well-known/oauth-protected-resource":
		switch s.issuerMode() {
		case IssuerNone404:
			http.NotFound(w, r)
			return
		case IssuerError500:
			writeError(w, http.StatusInternalServerError, "server_error", "metadata store unavailable")
			return
		}
		doc := map[string]any{"resource": o, "authorization_servers": []any{s.Issuer()}, "scopes_supported": []any{"orders:read", "orders:write"}}
		if s.issuerMode() == IssuerNoneEmpty {
			doc["authorization_servers"] = []any{}
		}
		s.editLenientPR(doc) // lenient.go
		s.mu.Lock()
		edit := s.editPR
		s.mu.Unlock()
		if edit != nil {
			edit(doc)
		}
		s.serveDoc(w, r, doc)
	case p == "/api/openapi.json", p == RootDescriptionPath && s.fault(FaultDescriptionAtRoot):
		s.serveDoc(w, r, s.openAPI())
	case p == "/api/orders" || strings.HasPrefix(p, "/api/orders/"):
		s.serveOrders(w, r) // orders.go: the Orders API with operations (Operations 4, 6, 7)
	case p == MCPPath:
		s.serveMCP(w, r) // mcpserver.go
	case p == "/.well-known/oauth-protected-resource"+MCPPath:
		// The MCP server's protected resource metadata (spec 7 "MCP servers", RFC 9728).
		s.serveDoc(w, r, s.mcpMetadata()) // unkept.go
	case p == ExcludedTasksPath:
		s.serveDoc(w, r, s.excludedTasksDoc()) // coverage.go: excluded tasks and alternatives (spec 9.1, 9.2)
	case p == FeedbackPath:
		s.serveFeedback(w, r) // coverage.go: feedback (spec 9.3)
	case isSkillPath(p):
		s.serveSkill(w, r) // coverage.go: skill artifacts (spec 9.4)
	case p == "/" || p == "/logo.png":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>Shop</title><h1>Shop (reference Company)</h1>")
	case isBrowserSitePath(p):
		s.serveBrowserSite(w, r) // browsersession.go, website.go: browser join and the website (spec 6)
	case strings.HasPrefix(p, "/poppy/conversations/") || p == "/poppy/conversations" && r.Method == http.MethodPost:
		s.serveConversations(w, r) // companyagent.go: the Company Agent (spec 8)
	case strings.HasPrefix(p, "/api/"), strings.HasPrefix(p, "/poppy/"):
		s.serveProtected(w, r)
	default:
		http.NotFound(w, r)
	}
}

// openAPI is the Shop API's OpenAPI 3.1 description (spec 7): products, and the Orders API of the
// spec's jacket exchange, with an OAuth2 security scheme whose scopes match poppy.json. Its server
// URL is relative to the description's URL (OpenAPI 3.1 §4.8.5).
func (s *Server) openAPI() map[string]any {
	doc := openAPIDocument(s.Issuer())
	s.editHostileOpenAPI(doc) // hostile.go
	return doc
}

func (s *Server) serveAuth(w http.ResponseWriter, r *http.Request) {
	is := s.Issuer()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		doc := map[string]any{
			"issuer":                                           is,
			"token_endpoint":                                   is + "/oauth/token",
			"revocation_endpoint":                              is + "/oauth/revoke",
			"authorization_endpoint":                           is + "/oauth/authorize",
			"device_authorization_endpoint":                    is + "/oauth/device",
			"grant_types_supported":                            []any{"refresh_token", "authorization_code", "urn:ietf:params:oauth:grant-type:device_code"},
			"scopes_supported":                                 []any{"orders:read", "orders:write"},
			"token_endpoint_auth_methods_supported":            []any{"private_key_jwt"},
			"token_endpoint_auth_signing_alg_values_supported": []any{"ES256"},
			"code_challenge_methods_supported":                 []any{"S256"},
			"authorization_response_iss_parameter_supported":   true,
			"protected_resources":                              []any{s.Origin(), s.URL(OtherHost, "")},
		}
		if s.fault(FaultIssuerNotListingDomain) {
			doc["protected_resources"] = []any{s.URL(OtherHost, "")}
		}
		if s.fault(FaultIssuerMismatch) {
			doc["issuer"] = is + "/"
		}
		s.editAuthMetadata(doc) // dpop_signing_alg_values_supported when SetDPoP (oauth.go)
		s.editLenientAS(doc)    // lenient.go
		s.mu.Lock()
		edit := s.editAS
		s.mu.Unlock()
		if edit != nil {
			edit(doc)
		}
		s.serveDoc(w, r, doc)
	case "/oauth/token", "/oauth/revoke", "/oauth/authorize", "/oauth/device", "/device":
		s.serveOAuth(w, r) // the authorization server (oauth.go)
	default:
		http.NotFound(w, r)
	}
}

// serveProtected handles the Session destinations: /api/* and /poppy/* (spec 5.2, 5.3, 7).
func (s *Server) serveProtected(w http.ResponseWriter, r *http.Request) {
	if s.take429() {
		w.Header().Set("Retry-After", strconv.Itoa(s.opts.RetryAfter))
		writeError(w, http.StatusTooManyRequests, "rate_limited", "slow down")
		return
	}
	if s.fault(FaultRedirectProtected) {
		w.Header().Set("Location", s.Origin()+"/moved"+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	// Access token validation comes first, as at any OAuth resource (spec 4.5, 7; verify.go).
	token, at, ok := s.checkAccessToken(w, r, "")
	if !ok {
		return
	}
	sess, perr := s.verifySession(r, token, at.ClientID)
	if perr != nil {
		perr.write(w)
		return
	}
	if s.refusesExtensions(r) {
		writeError(w, http.StatusBadRequest, "invalid_request", "Poppy-Extensions declares an extension this Company does not know")
		return
	}
	if s.fault(FaultVersionUnsupported) {
		writeError(w, http.StatusBadRequest, "version_unsupported", "this Company no longer serves the version in Poppy-Version")
		return
	}
	if s.fault(FaultSessionEnded) {
		s.endSession(sess)
		writeError(w, http.StatusBadRequest, "session_ended", "the Session has ended")
		return
	}
	switch r.URL.Path {
	case "/api/products":
		writeJSON(w, http.StatusOK, map[string]any{"products": []any{
			map[string]any{"id": "p1", "name": "Stormline jacket", "price": "129.00"},
			map[string]any{"id": "p2", "name": "Trail socks", "price": "12.00"},
		}, "session": sess.SID != ""})
	case "/api/orders":
		if token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shop", scope="orders:read"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if !slices.Contains(at.Scopes, "orders:read") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="orders:read orders:write", error_description="needs orders:read"`)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"orders": []any{map[string]any{"id": "ord_1", "status": "shipped"}}})
	case "/api/gift-wrap":
		if !declares(r, "operations", "2") {
			w.Header().Set("WWW-Authenticate", `Bearer error="extension_required", extension="operations"`)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"wrapped": true})
	case "/poppy/conversations":
		if !declares(r, "operations", "2") {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": "extension_required", "extension": "operations"})
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"status": "open"})
	default:
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint at the reference Company")
	}
}

// declares reports whether the request declares extension name at version v in Poppy-Extensions
// (spec 3.4: an RFC 9651 List; a header that fails to parse declares nothing).
func declares(r *http.Request, name, v string) bool {
	return headers.Declares(r.Header.Values(headers.Extensions), name, v)
}
