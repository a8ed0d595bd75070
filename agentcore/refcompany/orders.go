package refcompany

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// product is one catalog entry.
type product struct {
	SKU, Name string
	Cents     int64
}

var catalog = map[string]product{
	"stormline-m":           {"stormline-m", "Stormline Jacket (M)", 12900},
	"stormline-insulated-m": {"stormline-insulated-m", "Stormline Insulated Jacket (M)", 19900},
	"stormline-insulated-l": {"stormline-insulated-l", "Stormline Insulated Jacket (L)", 19900},
	"trail-socks":           {"trail-socks", "Trail Socks", 1200},
}

type order struct {
	ID, Account, Status string
	Items               []*orderItem
}

type orderItem struct {
	ID, SKU      string
	ExchangedFor string // the replacement SKU once exchanged
}

// money formats non-negative cents as a decimal amount, e.g. "70.00".
func money(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

func (o *order) item(id string) *orderItem {
	for _, it := range o.Items {
		if it.ID == id {
			return it
		}
	}
	return nil
}

// seedOrders is the spec's jacket example: order ord_7Hk2 with item itm_4Qa, a Stormline Jacket (M),
// and an older order ord_1.
func seedOrders() map[string]*order {
	return map[string]*order{
		"ord_1": {ID: "ord_1", Account: DefaultAccount, Status: "shipped", Items: []*orderItem{{ID: "itm_1", SKU: "trail-socks"}}},
		"ord_7Hk2": {ID: "ord_7Hk2", Account: DefaultAccount, Status: "delivered", Items: []*orderItem{
			{ID: "itm_4Qa", SKU: "stormline-m"}, {ID: "itm_9Zt", SKU: "trail-socks"},
		}},
	}
}

func (o *order) wire() map[string]any {
	items := []any{}
	for _, it := range o.Items {
		p := catalog[it.SKU]
		m := map[string]any{"item_id": it.ID, "sku": it.SKU, "name": p.Name, "price": map[string]any{"amount": money(p.Cents), "currency": "USD"}}
		if it.ExchangedFor != "" {
			m["exchanged_for"] = it.ExchangedFor
		}
		items = append(items, m)
	}
	return map[string]any{"order_id": o.ID, "status": o.Status, "items": items}
}

// protected is the result of the checks every Session destination makes (spec 5.3, 7).
type protected struct {
	Token   string
	Scopes  []string
	Session *sessioncheck.Session
	Caller  caller
}

// protect makes the checks serveProtected makes before routing (429 burst, redirect, access
// token, Session verification, the version and Session faults) and writes the error itself when
// one fails. resourceMetadata, when set, goes in every Bearer challenge (RFC 9728 §5.1, spec 7
// for MCP servers).
func (s *Server) protect(w http.ResponseWriter, r *http.Request, resourceMetadata string) (*protected, bool) {
	if s.take429() {
		w.Header().Set("Retry-After", strconv.Itoa(s.opts.RetryAfter))
		writeError(w, http.StatusTooManyRequests, "rate_limited", "slow down")
		return nil, false
	}
	if s.fault(FaultRedirectProtected) {
		w.Header().Set("Location", s.Origin()+"/moved"+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return nil, false
	}
	// The access token (scheme, DPoP proof, expiry, resource) is checked first, as at any OAuth
	// resource (spec 4.5, 7; verify.go).
	token, at, ok := s.checkAccessToken(w, r, resourceMetadata)
	if !ok {
		return nil, false
	}
	sess, err := s.verifierFor().Verify(r.Context(), r, token, at.ClientID)
	if err != nil {
		var se *sessioncheck.Error
		if !errors.As(err, &se) {
			se = &sessioncheck.Error{Status: http.StatusBadRequest, Code: sessioncheck.CodeInvalidSession, Description: err.Error()}
		}
		se.WriteJSON(w)
		return nil, false
	}
	if s.fault(FaultVersionUnsupported) {
		writeError(w, http.StatusBadRequest, "version_unsupported", "this Company no longer serves the version in Poppy-Version")
		return nil, false
	}
	if s.fault(FaultSessionEnded) {
		s.endSession(verifiedSession{ClientID: sess.ClientID, SID: sess.SID})
		writeError(w, http.StatusBadRequest, "session_ended", "the Session has ended")
		return nil, false
	}
	p := &protected{Token: token, Scopes: at.Scopes, Session: sess}
	p.Caller = caller{ClientID: sess.ClientID, UserID: sess.UserID, SID: sess.SID, Account: s.ops().accountOf(token)}
	return p, true
}

// readScopes is the scope attribute of the Orders API's read challenges: it names both scopes of
// the API so that one sign-in covers reading and exchanging (a Company's choice, RFC 6750 §3).
const readScopes = "orders:read orders:write"

// needScope writes the challenge for a request without the account or the scope (spec 7).
// challenge is the scope attribute of an insufficient_scope challenge ("" for scope alone).
func needScope(w http.ResponseWriter, p *protected, scope, challenge, resourceMetadata string) bool {
	if challenge == "" {
		challenge = scope
	}
	rm := ""
	if resourceMetadata != "" {
		rm = `, resource_metadata="` + resourceMetadata + `"`
	}
	if p.Token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shop", scope="`+scope+`"`+rm)
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}
	if !slices.Contains(p.Scopes, scope) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+challenge+`", error_description="needs `+scope+`"`+rm)
		w.WriteHeader(http.StatusForbidden)
		return false
	}
	return true
}

// serveOrders is the Orders API (spec 7 example): GET /api/orders, GET /api/orders/{id} and
// POST /api/orders/{id}/exchanges, an operation of the Operations extension v2.
func (s *Server) serveOrders(w http.ResponseWriter, r *http.Request) {
	p, ok := s.protect(w, r, "")
	if !ok {
		return
	}
	st := s.ops()
	rest := strings.TrimPrefix(r.URL.Path, "/api/orders")
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "" || rest == "/":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		if !needScope(w, p, "orders:read", readScopes, "") {
			return
		}
		st.mu.Lock()
		list := []any{}
		for _, o := range st.orders {
			if o.Account == p.Caller.Account {
				list = append(list, o.wire())
			}
		}
		st.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"orders": list})
	case len(parts) == 1:
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		if !needScope(w, p, "orders:read", readScopes, "") {
			return
		}
		st.mu.Lock()
		o := st.orders[parts[0]]
		var body map[string]any
		if o != nil && o.Account == p.Caller.Account {
			body = o.wire()
		}
		st.mu.Unlock()
		if body == nil {
			writeError(w, http.StatusNotFound, "order_not_found", "no such order in this account")
			return
		}
		writeJSON(w, http.StatusOK, body)
	case len(parts) == 2 && parts[1] == "exchanges":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		s.serveExchange(w, r, p, parts[0])
	default:
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint in the Orders API")
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "invalid_request", "method not allowed; use "+allow)
}

func (s *Server) serveExchange(w http.ResponseWriter, r *http.Request, p *protected, orderID string) {
	if !needScope(w, p, "orders:write", "", "") {
		return
	}
	// Operations 2: operations only for requests declaring "operations";v="2"; the API refuses
	// others with extension_required in WWW-Authenticate (spec 3.3, 7).
	if !declares(r, "operations", "2") && !s.operationsRegardless() { // the faults: hostile.go
		w.Header().Set("WWW-Authenticate", `Bearer error="extension_required", extension="operations", error_description="exchanges need the user's approval through the operations extension version 2"`)
		writeError(w, http.StatusForbidden, "extension_required", "")
		return
	}
	var body struct {
		ItemID         string `json:"item_id"`
		ReplacementSKU string `json:"replacement_sku"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err := json.Unmarshal(raw, &body); err != nil || body.ItemID == "" || body.ReplacementSKU == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `the body must be a JSON object with "item_id" and "replacement_sku"`)
		return
	}
	appr, err := parseApprovalHeader(r.Header.Values(headers.Approval))
	if err == nil && s.refusesApprovalMembers(r) {
		err = errors.New("Poppy-Approval has a member this Company does not know")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	out := s.ops().exchange(p.Caller, InterfaceAPI, exchangeAsk{OrderID: orderID, ItemID: body.ItemID, ReplacementSKU: body.ReplacementSKU}, appr)
	switch out.kind {
	case outNeedApproval:
		// Operations 4: 403 with the operation in a JSON body, not in WWW-Authenticate.
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "approval_required", "operation": out.op})
	case outChallenge:
		needScope(w, &protected{}, "orders:write", "", "")
	case outInProgress:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "in_progress", "the exchange is being performed; send the same request again")
	case outFailed:
		writeError(w, out.status, out.code, out.desc)
	case outPerformed, outReplay:
		if out.loseFirst {
			loseConnection(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(out.result)
	}
}

// loseConnection drops the connection without a response (FaultLoseResponse), or answers 502
// when the connection cannot be taken over.
func loseConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	writeError(w, http.StatusBadGateway, "bad_gateway", "the response was lost")
}

// parseApprovalHeader reads Poppy-Approval (Operations 6, agentcore/headers): operation_id and
// revision as Strings; other members are ignored. No header: nil.
func parseApprovalHeader(vals []string) (*approvalRef, error) {
	op, rev, err := headers.ParseApproval(vals)
	switch {
	case errors.Is(err, headers.ErrNoApproval):
		return nil, nil
	case err != nil:
		return nil, err
	case op == "" || rev == "":
		return nil, errors.New(`Poppy-Approval needs operation_id and revision as non-empty Strings, e.g. operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v" (Operations 6)`)
	}
	return &approvalRef{OperationID: op, Revision: rev}, nil
}

// openAPIDocument is the OpenAPI 3.1 description of the Shop API.
func openAPIDocument(issuer string) map[string]any {
	str := map[string]any{"type": "string"}
	money := map[string]any{"type": "object", "properties": map[string]any{"amount": str, "currency": str}}
	orderID := map[string]any{"name": "id", "in": "path", "required": true, "description": "The order's ID, e.g. ord_7Hk2", "schema": str}
	errResp := func(d string) map[string]any { return map[string]any{"description": d} }
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "Shop API", "version": "1"},
		"servers": []any{map[string]any{"url": "/api"}},
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"shop": map[string]any{"type": "oauth2", "description": "Sign in to the shop (spec 4)",
					"flows": map[string]any{"authorizationCode": map[string]any{
						"authorizationUrl": issuer + "/oauth/authorize", "tokenUrl": issuer + "/oauth/token",
						"scopes": map[string]any{"orders:read": "See your orders and returns", "orders:write": "Exchange or return items"},
					}}},
			},
			"schemas": map[string]any{
				"Money": money,
				"Order": map[string]any{"type": "object", "properties": map[string]any{"order_id": str, "status": str,
					"items": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}},
			},
		},
		"paths": map[string]any{
			"/products": map[string]any{"get": map[string]any{"operationId": "listProducts", "summary": "List products (signed out)",
				"responses": map[string]any{"200": map[string]any{"description": "Products"}}}},
			"/orders": map[string]any{"get": map[string]any{"operationId": "listOrders", "summary": "List the User's orders",
				"security":  []any{map[string]any{"shop": []any{"orders:read"}}},
				"responses": map[string]any{"200": map[string]any{"description": "Orders"}, "401": errResp("Sign-in needed")}}},
			"/orders/{id}": map[string]any{"get": map[string]any{"operationId": "getOrder", "summary": "Get one order",
				"parameters": []any{orderID},
				"security":   []any{map[string]any{"shop": []any{"orders:read"}}},
				"responses": map[string]any{"200": map[string]any{"description": "The order",
					"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Order"}}}}}}},
			"/orders/{id}/exchanges": map[string]any{"post": map[string]any{"operationId": "exchangeItem",
				"summary":     "Exchange an item of an order",
				"description": "Needs the user's approval of the exact terms (Operations extension v2): the first request returns 403 approval_required with the operation.",
				"parameters":  []any{orderID},
				"security":    []any{map[string]any{"shop": []any{"orders:write"}}},
				"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
					"type": "object", "required": []any{"item_id", "replacement_sku"},
					"properties": map[string]any{"item_id": str, "replacement_sku": str}}}}},
				"responses": map[string]any{"201": map[string]any{"description": "Exchanged"}, "403": errResp("approval_required, or a missing scope or extension")}}},
			"/gift-wrap": map[string]any{"post": map[string]any{"operationId": "giftWrap", "summary": "Needs the operations extension",
				"responses": map[string]any{"200": map[string]any{"description": "Wrapped"}}}},
		},
	}
}
