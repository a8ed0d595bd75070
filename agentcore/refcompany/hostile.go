package refcompany

import (
	"net/http"
	"strings"
)

// Faults of a Company that lays out its documents so that a careless Personal Agent would send
// the Session header where spec 5.2 forbids it, or that breaks the Operations extension's rules
// on its side. Each is listed in Faults (server.go), so SetFault, Options.Faults and `poppydesk
// company serve --fault` switch it on.
const (
	// FaultDescriptionAtRoot: poppy.json lists the OpenAPI description at the origin's root,
	// https://shop.localhost:PORT/openapi.json, served there (its relative server /api still
	// names the Orders API). A Personal Agent that takes the description's folder as an API
	// prefix would send the Session JWT to every URL of the origin: poppy.json, the metadata,
	// the website (spec 5.2: only the request URLs the description describes).
	FaultDescriptionAtRoot = "description-at-root"
	// FaultDescriptionProtocolURLs: the OpenAPI description also lists, as operations,
	// poppy.json, the protected resource metadata, the website's home page, the browser-session
	// page, the description itself and the issuer's token endpoint (an operation server on the
	// issuer). None of them may carry the Session header, whatever the description says (spec
	// 5.2: discovery and description documents, OAuth endpoints and web pages never do).
	FaultDescriptionProtocolURLs = "description-lists-protocol-urls"
	// FaultOperationsUnlisted: poppy.json lists no operations extension, yet the Orders API and
	// the MCP server's exchange_item return operations to requests that don't declare it
	// (breaks Operations 2: a Company MUST NOT return operations to such a request).
	FaultOperationsUnlisted = "operations-unlisted"
	// FaultOperationsOtherVersion: poppy.json lists the operations extension in version "1"
	// only, yet the Orders API and exchange_item return version 2 operations to requests that
	// don't declare version 2 (Operations 2: another major version is not support).
	FaultOperationsOtherVersion = "operations-other-version"
	// FaultScopeNone: the token responses of sign-ins (authorization_code and device_code
	// grants) grant no scope: "scope": "", as when the User approves none. Spec 4.7: a Poppy
	// sign-in grants at least one scope, and one that grants none ends as a decline.
	FaultScopeNone = "scope-none"
	// FaultHangDiscovery: poppy.json, the protected resource metadata and the authorization
	// server metadata answer 200 with the start of a body, then send nothing more until the
	// client gives up: a discovery that waited for them would never end.
	FaultHangDiscovery = "hang-discovery"
	// FaultHangToken: the token endpoint reads the request and never answers, so a sign-in,
	// refresh or revocation that waited for it would never end.
	FaultHangToken = "hang-token"
)

// hostileFaults are the faults of this file.
var hostileFaults = []string{FaultDescriptionAtRoot, FaultDescriptionProtocolURLs, FaultOperationsUnlisted, FaultOperationsOtherVersion,
	FaultScopeNone, FaultHangDiscovery, FaultHangToken}

// hang holds the request open without a complete answer under FaultHangDiscovery and
// FaultHangToken, until the client gives up (its connection closes) or the Server stops. It
// reports whether it did.
func (s *Server) hang(w http.ResponseWriter, r *http.Request) bool {
	host, _, _ := strings.Cut(strings.ToLower(r.Host), ":")
	p := r.URL.Path
	switch {
	case s.fault(FaultHangToken) && host == AuthHost && p == "/oauth/token":
	case s.fault(FaultHangDiscovery) && (p == "/.well-known/poppy.json" || strings.HasPrefix(p, "/.well-known/oauth-")):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"protocol_version":`))
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	default:
		return false
	}
	select {
	case <-r.Context().Done():
	case <-s.stopped:
	}
	return true
}

// signInGranted is the scopes a sign-in's token response grants: none under FaultScopeNone.
func (s *Server) signInGranted(approved []string) []string {
	if s.fault(FaultScopeNone) {
		return nil
	}
	return approved
}

// operationsRegardless reports whether the Company returns operations whether or not the
// request declares the extension (FaultOperationsUnlisted, FaultOperationsOtherVersion).
func (s *Server) operationsRegardless() bool {
	return s.fault(FaultOperationsUnlisted) || s.fault(FaultOperationsOtherVersion)
}

// RootDescriptionPath is where FaultDescriptionAtRoot serves the OpenAPI description.
const RootDescriptionPath = "/openapi.json"

// editHostilePoppy applies the poppy.json faults of this file.
func (s *Server) editHostilePoppy(doc map[string]any) {
	if s.fault(FaultDescriptionAtRoot) {
		for _, a := range doc["apis"].([]any) {
			if m := a.(map[string]any); m["type"] == "openapi" {
				m["url"] = s.Origin() + RootDescriptionPath
			}
		}
	}
	exts, _ := doc["extensions"].(map[string]any)
	switch {
	case exts == nil:
	case s.fault(FaultOperationsUnlisted):
		delete(exts, "operations")
	case s.fault(FaultOperationsOtherVersion):
		exts["operations"] = []any{map[string]any{"version": "1"}}
	}
}

// editHostileOpenAPI applies the OpenAPI description faults of this file.
func (s *Server) editHostileOpenAPI(doc map[string]any) {
	if !s.fault(FaultDescriptionProtocolURLs) {
		return
	}
	paths := doc["paths"].(map[string]any)
	get := func(id string) map[string]any {
		return map[string]any{"get": map[string]any{"operationId": id, "responses": map[string]any{"200": map[string]any{"description": "ok"}}}}
	}
	origin := []any{map[string]any{"url": s.Origin()}}
	for id, p := range map[string]string{"poppyJSON": "/.well-known/poppy.json", "resourceMetadata": "/.well-known/oauth-protected-resource",
		"homePage": "/", "browserSessionPage": "/poppy/browser-session", "description": "/api/openapi.json",
		"rootDescription": RootDescriptionPath} {
		item := get(id)
		item["servers"] = origin
		paths[p] = item
	}
	token := map[string]any{"post": map[string]any{"operationId": "tokenEndpoint", "servers": []any{map[string]any{"url": s.Issuer()}},
		"responses": map[string]any{"200": map[string]any{"description": "ok"}}}}
	paths["/oauth/token"] = token
}
