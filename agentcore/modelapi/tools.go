package modelapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// ApprovalMetaKey is the _meta key of an approval in an MCP tool call (Operations 6). The model
// may never send it, in any argument.
const ApprovalMetaKey = apis.ApprovalMetaKey

// MaxWait is the longest wait_for_approval waits in one call.
const MaxWait = 300 * time.Second

// Tool names of the core tools.
const (
	ToolDiscoverCompany   = "discover_company"
	ToolDescribeCompany   = "describe_company"
	ToolListAPIOperations = "list_api_operations"
	ToolListMCPTools      = "list_mcp_tools"
	ToolCallAPIOperation  = "call_api_operation"
	ToolCallMCPTool       = "call_mcp_tool"
	ToolRequestSignIn     = "request_sign_in"
	ToolGetApproval       = "get_approval"
	ToolWaitForApproval   = "wait_for_approval"
	ToolRecentActivity    = "recent_activity"
)

// StatusWaitingForSignIn is the status of a call that was not performed because the Company
// needs the user's account or more scopes: Poppydesk recorded a sign-in request for the window
// (issue 5, spec 4.7, 7) and the model waits for the user.
const StatusWaitingForSignIn = "waiting_for_sign_in"

// StatusMessages are Poppydesk's words for each outcome status.
var StatusMessages = map[string]string{
	"done":             "performed; the Company's response is in the untrusted Company content",
	"waiting_for_user": "not performed; waiting for the user's decision in Poppydesk. Call wait_for_approval with the approval handle to learn the decision; do not send the request again",
	"outcome_unknown":  "the user approved it, but Poppydesk does not know yet whether the Company performed it; Poppydesk retries with the same approval. Do not send a new request for the same thing; call wait_for_approval later",
	"in_progress":      "the Company is performing it; call wait_for_approval to learn the result",
	"declined":         "not performed; the user declined it in Poppydesk",
	"expired":          "not performed; the Company's terms expired before the user decided. Ask the user whether to try again",
	"failed":           "not performed; the Company refused or could not do it (its words are in the untrusted Company content)",
}

// fixedMessageStatuses are the outcome statuses whose queue messages are Poppydesk's fixed words.
var fixedMessageStatuses = map[string]bool{"waiting_for_user": true, "done": true, "declined": true, "expired": true, "in_progress": true}

var (
	domainRE   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?$`)
	handleRE   = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
	accountRE  = regexp.MustCompile(`^[^\x00-\x1f\x7f]{0,100}$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-/]{1,128}$`)
)

type tools struct{ d Deps }

// companyProp is the schema of the company argument shared by most tools.
const companyProp = `"company": {"type": "string", "minLength": 1, "maxLength": 300, "description": "The Company's domain (e.g. shop.example or shop.localhost:8443 in the demo) or its identifier from discover_company."}`
const accountProp = `"account": {"type": "string", "maxLength": 100, "description": "The label of the user's account at the Company. Omit it: Poppydesk uses the user's only signed-in account, or none (signed out)."}`
const intentProp = `"intent": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}, "maxProperties": 20, "description": "What you intend, in the request's own field names (e.g. {\"replacement_sku\": \"...\"}). Poppydesk checks the Company's terms against it and shows differences to the user."}`

func addCoreTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
	AddTool(s, Tool{Name: ToolDiscoverCompany, Title: "Discover a Company",
		Description: "Find and verify the Company at a domain (its poppy.json and sign-in metadata, Poppy spec section 3). Returns the Company's identifier and a short summary. Read-only: nothing is sent on the user's behalf.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["domain"], "properties": {
			"domain": {"type": "string", "minLength": 1, "maxLength": 260, "description": "The Company's domain, e.g. shop.example (host:port only in the local demo). No scheme, no path."}}}`,
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.discover)
	AddTool(s, Tool{Name: ToolDescribeCompany, Title: "Describe a Company",
		Description: "Describe a discovered Company: organization, channels (APIs, Company agent, website, feedback), scopes with their hints, extensions, and whether the user is signed in. Read-only (it may refresh the Company's poppy.json when Poppydesk's copy is stale).",
		Schema:      `{"type": "object", "additionalProperties": false, "required": ["company"], "properties": {` + companyProp + `}}`,
		ReadOnly:    true, Idempotent: true, OpenWorld: true}, t.describe)
	AddTool(s, Tool{Name: ToolListAPIOperations, Title: "List an API's operations",
		Description: "List the operations of one of the Company's OpenAPI APIs: operation_id, method, path, parameters, request body schema and the scopes each needs. Read-only.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company"], "properties": {` + companyProp + `,
			"api": {"type": "string", "maxLength": 2000, "description": "The API's url from describe_company. Optional when the Company has one OpenAPI API."}}}`,
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.listOperations)
	AddTool(s, Tool{Name: ToolListMCPTools, Title: "List a Company MCP server's tools",
		Description: "List the tools of one of the Company's MCP servers, with the annotations the Company gives them (hints written by the Company, not guarantees). Read-only.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company"], "properties": {` + companyProp + `, ` + accountProp + `,
			"server": {"type": "string", "maxLength": 2000, "description": "The MCP server's url from describe_company. Optional when the Company has one MCP server."}}}`,
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.listTools)
	AddTool(s, Tool{Name: ToolCallAPIOperation, Title: "Call a Company API operation",
		Description: "Ask the Company to perform an operation of its OpenAPI API on the user's behalf. Poppydesk signs and sends the request itself. If the Company needs the user's approval, the result says it was NOT performed and gives an approval handle: the user decides in the Poppydesk window, and you can call wait_for_approval. You cannot approve.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "operation_id"], "properties": {` + companyProp + `, ` + accountProp + `, ` + intentProp + `,
			"api": {"type": "string", "maxLength": 2000, "description": "The API's url. Optional when the Company has one OpenAPI API."},
			"operation_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The operation_id from list_api_operations."},
			"path_params": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}, "maxProperties": 20, "description": "Path parameters by name, e.g. {\"id\": \"ord_7Hk2\"}."},
			"query": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 2000}, "maxProperties": 50, "description": "Query parameters by name."},
			"body": {"description": "The JSON request body, as the operation's schema describes."}}}`,
		Destructive: true, OpenWorld: true}, t.callAPI)
	AddTool(s, Tool{Name: ToolCallMCPTool, Title: "Call a Company MCP tool",
		Description: "Ask the Company to run a tool of its MCP server on the user's behalf. Poppydesk signs and sends the call itself. If the Company needs the user's approval, the result says it was NOT performed and gives an approval handle: the user decides in the Poppydesk window. You cannot approve.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "tool"], "properties": {` + companyProp + `, ` + accountProp + `, ` + intentProp + `,
			"server": {"type": "string", "maxLength": 2000, "description": "The MCP server's url. Optional when the Company has one MCP server."},
			"tool": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The tool's name from list_mcp_tools."},
			"arguments": {"type": "object", "description": "The tool's arguments, as its input schema describes."}}}`,
		Destructive: true, OpenWorld: true}, t.callTool)
	AddTool(s, Tool{Name: ToolRequestSignIn, Title: "Ask the user to sign in",
		Description: "Ask the USER to sign in to a Company with some scopes. Poppydesk shows your reason in its window, marked as your words; only the user can start the sign-in there. Nothing is signed in by this tool.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "scopes", "reason"], "properties": {` + companyProp + `,
			"scopes": {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": true, "items": {"type": "string", "minLength": 1, "maxLength": 200}, "description": "Scopes the Company lists (describe_company)."},
			"reason": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Why, in one or two sentences the user will read."}}}`,
		Idempotent: true}, t.requestSignIn)
	AddTool(s, Tool{Name: ToolGetApproval, Title: "Get an approval's state",
		Description: "The state of an approval by its handle: pending (waiting for the user), approved, succeeded, declined, expired, ... and the Company's summary and terms the user sees. Read-only.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["approval_id"], "properties": {
			"approval_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The approval handle a call returned."}}}`,
		ReadOnly: true, Idempotent: true}, t.getApproval)
	AddTool(s, Tool{Name: ToolWaitForApproval, Title: "Wait for the user's decision",
		Description: "Wait until the user decides about an approval in Poppydesk and the Company answers, or until the timeout. Returns the outcome: performed (with the Company's response), declined, expired, or still waiting. Read-only: waiting never decides anything.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["approval_id"], "properties": {
			"approval_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The approval handle a call returned."},
			"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 300, "default": 60, "description": "How long to wait (at most 300 seconds)."}}}`,
		ReadOnly: true, Idempotent: true}, t.waitForApproval)
	AddTool(s, Tool{Name: ToolRecentActivity, Title: "Recent activity",
		Description: "Your recent requests to Poppydesk (tool, Company, time, result status, duration), newest first, as the user sees them in Poppydesk's Inspector.",
		Schema: `{"type": "object", "additionalProperties": false, "properties": {
			"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "How many entries."}}}`,
		ReadOnly: true, Idempotent: true}, t.recentActivity)
}

// ---- discovery ----

func (t *tools) discover(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Domain string `json:"domain"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	if !domainRE.MatchString(a.Domain) || !strings.Contains(a.Domain, ".") {
		return Refused(fmt.Sprintf("%q is not a domain; give a host name such as shop.example, without https:// or a path", a.Domain))
	}
	c, err := t.d.Actions.Discover(ctx, strings.ToLower(a.Domain))
	if err != nil {
		return errorReply(err, nil, a.Domain)
	}
	return &Reply{Status: "done",
		Message: fmt.Sprintf("Verified the Company at %s (Poppy spec 3). Use company=%q with the other tools; describe_company lists what it offers.", c.Organization.Domain, c.Organization.Domain),
		Fields:  map[string]any{"identifier": c.Identifier, "domain": c.Organization.Domain},
		Company: c.Identifier, CompanyName: c.Organization.Name,
		Data: map[string]any{"organization": map[string]any{"name": c.Organization.Name, "domain": c.Organization.Domain},
			"protocol_version": c.Version, "sign_in_offered": c.SignIn.Offered, "apis": len(c.Channels.APIs),
			"company_agent": c.Channels.Agent != nil, "website_browsing": c.Channels.Web != nil}}
}

func (t *tools) company(ctx context.Context, ref string) (*discovery.Company, *Reply) {
	ref = strings.TrimSpace(ref)
	if ref == "" || len(ref) > 300 {
		return nil, Refused("give the Company's domain or identifier in company")
	}
	if !strings.HasPrefix(ref, "https://") && !domainRE.MatchString(ref) {
		return nil, Refused(fmt.Sprintf("%q is neither a domain nor a Company identifier (https://...)", ref))
	}
	c, err := t.d.Actions.Company(ctx, ref)
	if err != nil {
		return nil, errorReply(err, nil, ref)
	}
	return c, nil
}

func (t *tools) describe(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company string `json:"company"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	c, r := t.company(ctx, a.Company)
	if r != nil {
		return r
	}
	accounts, err := t.d.Actions.Accounts(ctx, c.Identifier)
	if err != nil {
		return errorReply(err, c, a.Company)
	}
	sel := apis.Select(c.Channels.APIs)
	apiList := []any{}
	for _, x := range sel.OpenAPI {
		apiList = append(apiList, map[string]any{"type": x.Type, "url": x.URL, "description": x.Description, "tools": "list_api_operations, call_api_operation"})
	}
	for _, x := range sel.MCP {
		apiList = append(apiList, map[string]any{"type": x.Type, "url": x.URL, "description": x.Description, "tools": "list_mcp_tools, call_mcp_tool"})
	}
	skipped := []any{}
	for _, x := range sel.Skipped {
		skipped = append(skipped, map[string]any{"type": x.API.Type, "url": x.API.URL, "reason": x.Reason})
	}
	scopes := []any{}
	for _, s := range c.Scopes {
		m := map[string]any{"name": s.Name, "description": s.Description}
		if s.Changes != "" {
			m["changes"] = s.Changes
		}
		if s.PersonalData != nil {
			m["personal_data"] = *s.PersonalData
		}
		scopes = append(scopes, m)
	}
	exts := map[string]any{}
	for name, entries := range c.Extensions {
		var vs []string
		for _, e := range entries {
			vs = append(vs, e.Version)
		}
		exts[name] = map[string]any{"versions": vs}
	}
	channels := map[string]any{"apis": apiList, "skipped_apis": skipped}
	if ag := c.Channels.Agent; ag != nil {
		var protos []string
		for _, p := range ag.Protocols {
			protos = append(protos, p.Type)
		}
		channels["company_agent"] = map[string]any{"protocols": protos}
	}
	channels["website_browsing"] = c.Channels.Web != nil
	channels["feedback"] = c.Channels.Feedback != nil
	channels["excluded_tasks"] = c.Channels.ExcludedTasks != nil
	signIn := map[string]any{"offered": c.SignIn.Offered, "direct": c.SignIn.Direct, "device": c.SignIn.Device}
	if c.SignIn.Disabled {
		signIn["disabled"] = true
	}
	state := "signed out"
	if len(accounts) > 0 {
		state = "signed in as " + strings.Join(accounts, ", ")
	}
	return &Reply{Status: "done",
		Message: "The Company as Poppydesk verified it. The user is " + state + " at this Company. Operations that change something may need the user's approval in Poppydesk.",
		Fields:  map[string]any{"identifier": c.Identifier, "domain": c.Organization.Domain, "signed_in_accounts": accountsOrEmpty(accounts)},
		Company: c.Identifier, CompanyName: c.Organization.Name,
		Data: map[string]any{"organization": map[string]any{"name": c.Organization.Name, "domain": c.Organization.Domain},
			"protocol_version": c.Version, "sign_in": signIn, "channels": channels, "scopes": scopes, "extensions": exts}}
}

func accountsOrEmpty(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

// pickAPI chooses the API of typ named by u, or the only one.
func pickAPI(c *discovery.Company, typ, u, tool string) (discovery.API, *Reply) {
	sel := apis.Select(c.Channels.APIs)
	list := sel.OpenAPI
	if typ == "mcp" {
		list = sel.MCP
	}
	var urls []string
	for _, x := range list {
		urls = append(urls, x.URL)
		if u != "" && x.URL == u {
			return x, nil
		}
	}
	switch {
	case len(list) == 0:
		return discovery.API{}, Failed("not_found", fmt.Sprintf("this Company lists no %s API in its poppy.json; describe_company shows what it offers", typ))
	case u == "" && len(list) == 1:
		return list[0], nil
	case u == "":
		return discovery.API{}, Refused(fmt.Sprintf("this Company has %d %s APIs; name one in %s: %s", len(list), typ, tool, strings.Join(urls, ", ")))
	}
	return discovery.API{}, Failed("not_found", fmt.Sprintf("%q is not one of this Company's %s APIs (%s)", u, typ, strings.Join(urls, ", ")))
}

func (t *tools) account(ctx context.Context, c *discovery.Company, given *string) (string, *Reply) {
	if given != nil {
		if !accountRE.MatchString(*given) {
			return "", Refused("account must be a short label without control characters")
		}
		if *given == "" {
			return "", nil
		}
		accounts, err := t.d.Actions.Accounts(ctx, c.Identifier)
		if err != nil {
			return "", errorReply(err, c, c.Organization.Domain)
		}
		if !slices.Contains(accounts, *given) {
			return "", Failed("not_signed_in", fmt.Sprintf("the user is not signed in to %s as %q (signed-in accounts: %s). Call request_sign_in to ask the user", c.Organization.Domain, *given, orNone(strings.Join(accounts, ", "))))
		}
		return *given, nil
	}
	accounts, err := t.d.Actions.Accounts(ctx, c.Identifier)
	if err != nil {
		return "", errorReply(err, c, c.Organization.Domain)
	}
	if len(accounts) == 1 {
		return accounts[0], nil
	}
	if len(accounts) > 1 {
		return "", Refused(fmt.Sprintf("the user is signed in to %s with several accounts (%s); name one in account", c.Organization.Domain, strings.Join(accounts, ", ")))
	}
	return "", nil
}

// listOperations pages and filters the operations (operations_tools.go).
func (t *tools) listOperations(ctx context.Context, raw json.RawMessage) *Reply {
	return t.listOperationsPage(ctx, raw)
}

func (t *tools) listTools(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company string  `json:"company"`
		Server  string  `json:"server"`
		Account *string `json:"account"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	c, r := t.company(ctx, a.Company)
	if r != nil {
		return r
	}
	srv, r := pickAPI(c, "mcp", a.Server, "server")
	if r != nil {
		return r
	}
	account, r := t.account(ctx, c, a.Account)
	if r != nil {
		return r
	}
	list, err := t.d.Actions.Tools(ctx, c.Identifier, account, srv)
	if err != nil {
		return errorReply(err, c, a.Company)
	}
	out := []any{}
	for _, tl := range list {
		m := map[string]any{"name": tl.Name, "description": tl.Description}
		if tl.Title != "" {
			m["title"] = tl.Title
		}
		if len(tl.InputSchema) > 0 && string(tl.InputSchema) != "null" {
			m["input_schema"] = tl.InputSchema
		}
		m["annotations"] = map[string]any{"given_by_company": tl.Annotated, "readOnlyHint": tl.ReadOnly,
			"destructiveHint": tl.Destructive, "idempotentHint": tl.Idempotent, "openWorldHint": tl.OpenWorld}
		out = append(out, m)
	}
	return &Reply{Status: "done",
		Message: fmt.Sprintf("%d tools. Their annotations are hints the Company wrote, not guarantees. Call one with call_mcp_tool; tools that change something may need the user's approval in Poppydesk.", len(out)),
		Fields:  map[string]any{"server": srv.URL, "account": account},
		Company: c.Identifier, CompanyName: c.Organization.Name,
		Data: map[string]any{"tools": out}}
}

// ---- calls ----

// approvalKeyIn reports whether v (decoded JSON) carries the approval _meta key at any depth.
func approvalKeyIn(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if strings.EqualFold(k, ApprovalMetaKey) || strings.EqualFold(k, "poppy-approval") || approvalKeyIn(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if approvalKeyIn(e) {
				return true
			}
		}
	}
	return false
}

const noApprovalText = "; nothing was sent. Approvals are given only by the user in the Poppydesk window (Operations extension section 5)"

func (t *tools) callAPI(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company     string            `json:"company"`
		Account     *string           `json:"account"`
		API         string            `json:"api"`
		OperationID string            `json:"operation_id"`
		PathParams  map[string]string `json:"path_params"`
		Query       map[string]string `json:"query"`
		Body        json.RawMessage   `json:"body"`
		Intent      map[string]string `json:"intent"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	if a.OperationID == "" || len(a.OperationID) > 200 {
		return Refused("operation_id is required (from list_api_operations)")
	}
	if len(a.Body) > 0 {
		var body any
		if err := json.Unmarshal(a.Body, &body); err != nil {
			return Refused("body must be JSON")
		}
		if approvalKeyIn(body) {
			return Refused("the body carries an approval field (" + ApprovalMetaKey + ")" + noApprovalText)
		}
		if string(a.Body) == "null" {
			a.Body = nil
		}
	}
	c, api, account, r := t.callTarget(ctx, a.Company, "openapi", a.API, "api", a.Account, a.Intent)
	if r != nil {
		return r
	}
	q := url.Values{}
	for k, v := range a.Query {
		q.Set(k, v)
	}
	out, err := t.d.Actions.CallAPI(ctx, APICall{Company: c.Identifier, Account: account, API: api.URL, OperationID: a.OperationID,
		Path: a.PathParams, Query: q, Body: a.Body, Intent: a.Intent})
	if err != nil {
		if scopes, ok := signInNeeded(err); ok {
			return t.waitForSignIn(ctx, c, account, scopes, t.operationScopes(ctx, c, api, a.OperationID), a.OperationID)
		}
		return errorReply(err, c, a.Company)
	}
	if outcomeNeedsSignIn(out) {
		return t.waitForSignIn(ctx, c, account, nil, t.operationScopes(ctx, c, api, a.OperationID), a.OperationID)
	}
	return outcomeReply(out, c, map[string]any{"account": account})
}

// signInNeeded reports whether err says the call needs the user's (more) account access: a 401
// challenge or insufficient_scope (spec 7, with the scopes of the challenge), invalid_token left
// after the engine's one refresh, or a sign-in the Company no longer accepts
// (engine.SignInRequiredError, spec 5.5).
func signInNeeded(err error) ([]string, bool) {
	var sie *engine.SignInRequiredError
	var pe *transport.ProtocolError
	found := errors.As(err, &pe)
	switch {
	case errors.As(err, &sie):
		if found {
			return pe.Scopes, true
		}
		return nil, true
	case found && (pe.NeedsScopes() || pe.Code == transport.CodeInvalidToken || pe.Status == 401 && pe.Code == ""):
		return pe.Scopes, true
	}
	return nil, false
}

// outcomeNeedsSignIn reports whether an API answer without an operation is a refusal for want
// of the account or a scope: HTTP 401, or 403 insufficient_scope (the queue returns these as
// data; the challenge is in WWW-Authenticate, so the scopes come from the description).
func outcomeNeedsSignIn(o *Outcome) bool {
	if o == nil || o.Status != "failed" {
		return false
	}
	if o.HTTPStatus == 401 {
		return true
	}
	return o.HTTPStatus == 403 && (len(o.Body) == 0 && o.Text == "" || strings.Contains(o.Message, transport.CodeInsufficientScope) ||
		strings.Contains(string(o.Body), `"`+transport.CodeInsufficientScope+`"`))
}

// operationScopes are the scopes the API's description says the operation needs (nil when it
// cannot be read).
func (t *tools) operationScopes(ctx context.Context, c *discovery.Company, api discovery.API, id string) []string {
	desc, err := t.d.Actions.Operations(ctx, c.Identifier, api)
	if err != nil || desc == nil {
		return nil
	}
	if op, ok := desc.Operation(id); ok {
		return op.Scopes()
	}
	return nil
}

// waitForSignIn records a sign-in request for the user (the same SignInRequests the
// request_sign_in tool fills, so the window's Sign-in screen shows it) with Poppydesk's own
// reason, the Company's need, never the model's words, and tells the model the call was not
// performed and waits for the user. It never starts a sign-in (DESIGN.md invariant 1; spec
// 4.7: the window's sign-in asks for every scope still needed).
func (t *tools) waitForSignIn(ctx context.Context, c *discovery.Company, account string, challenged, described []string, what string) *Reply {
	known := map[string]bool{}
	for _, s := range c.Scopes {
		known[s.Name] = true
	}
	var scopes []string
	for _, list := range [][]string{challenged, described} {
		for _, s := range list {
			if (len(known) == 0 || known[s]) && !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
		if len(scopes) > 0 {
			break
		}
	}
	sort.Strings(scopes)
	fields := map[string]any{"account": account, "scopes": scopes}
	if scopes == nil {
		fields["scopes"] = []string{}
	}
	if !c.SignIn.Offered || c.SignIn.Disabled {
		r := Failed("sign_in_needed", fmt.Sprintf("not performed: %s needs the user's account for this, but offers no sign-in to Personal Agents (spec 4), so the user cannot sign in through Poppydesk; use what works signed out", c.Organization.Domain))
		r.Fields = fields
		return r
	}
	list := strings.Join(scopes, " ")
	reason := fmt.Sprintf("%s asked for the scope %s to call %s", c.Organization.Name, orNone(list), what)
	if len(scopes) > 1 {
		reason = fmt.Sprintf("%s asked for the scopes %s to call %s", c.Organization.Name, list, what)
	}
	if account == "" {
		reason += " (you are not signed in there)"
	} else {
		reason += fmt.Sprintf(" (the sign-in of account %q does not cover it)", account)
	}
	if t.d.SignIns == nil {
		return Failed("sign_in_needed", fmt.Sprintf("not performed: %s needs the user to sign in (scopes: %s), and this Poppydesk cannot show sign-in requests; tell the user", c.Organization.Domain, orNone(list)))
	}
	sr, err := t.d.SignIns.Add(ctx, SignInRequest{Company: c.Identifier, CompanyName: c.Organization.Name, Domain: c.Organization.Domain,
		Scopes: scopes, Reason: reason, Requested: t.d.Now()})
	if err != nil {
		return errorReply(err, c, c.Organization.Domain)
	}
	fields["request_id"] = sr.ID
	return &Reply{Status: StatusWaitingForSignIn, Fields: fields,
		Message: fmt.Sprintf("not performed; waiting for the user to sign in in Poppydesk (scopes: %s). Poppydesk has asked the user on its Sign-in screen; nothing is signed in until the user does it there. Ask the user to tell you when they have, then send the request again", orNone(list))}
}

// callTarget resolves what call_api_operation and call_mcp_tool act on: the model's stated
// intent is checked, then the Company, the API or MCP server of type typ (argument name arg), and
// the account.
func (t *tools) callTarget(ctx context.Context, company, typ, chosen, arg string, account *string, intent map[string]string) (*discovery.Company, discovery.API, string, *Reply) {
	if r := checkIntent(intent); r != nil {
		return nil, discovery.API{}, "", r
	}
	c, r := t.company(ctx, company)
	if r != nil {
		return nil, discovery.API{}, "", r
	}
	api, r := pickAPI(c, typ, chosen, arg)
	if r != nil {
		return nil, discovery.API{}, "", r
	}
	acct, r := t.account(ctx, c, account)
	if r != nil {
		return nil, discovery.API{}, "", r
	}
	return c, api, acct, nil
}

func checkIntent(in map[string]string) *Reply {
	if len(in) > 20 {
		return Refused("intent has more than 20 fields")
	}
	for k, v := range in {
		if len(k) > 200 || len(v) > 500 {
			return Refused("intent fields are limited to 200-character names and 500-character values")
		}
		if strings.EqualFold(k, ApprovalMetaKey) || strings.Contains(strings.ToLower(k), "approv") {
			return Refused("intent cannot carry an approval" + noApprovalText)
		}
	}
	return nil
}

func (t *tools) callTool(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company   string            `json:"company"`
		Account   *string           `json:"account"`
		Server    string            `json:"server"`
		Tool      string            `json:"tool"`
		Arguments json.RawMessage   `json:"arguments"`
		Intent    map[string]string `json:"intent"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	if !toolNameRE.MatchString(a.Tool) {
		return Refused("tool must be a tool name from list_mcp_tools")
	}
	if len(a.Arguments) > 0 && string(a.Arguments) != "null" {
		var args any
		if err := json.Unmarshal(a.Arguments, &args); err != nil {
			return Refused("arguments must be a JSON object")
		}
		m, ok := args.(map[string]any)
		if !ok {
			return Refused("arguments must be a JSON object")
		}
		if _, has := m["_meta"]; has {
			return Refused("arguments cannot carry _meta (the MCP request metadata, where approvals go)" + noApprovalText)
		}
		if approvalKeyIn(args) {
			return Refused("the arguments carry an approval field (" + ApprovalMetaKey + ")" + noApprovalText)
		}
	} else {
		a.Arguments = json.RawMessage(`{}`)
	}
	c, srv, account, r := t.callTarget(ctx, a.Company, "mcp", a.Server, "server", a.Account, a.Intent)
	if r != nil {
		return r
	}
	out, err := t.d.Actions.CallTool(ctx, ToolCall{Company: c.Identifier, Account: account, Server: srv.URL, Tool: a.Tool,
		Arguments: a.Arguments, Intent: a.Intent})
	if err != nil {
		if scopes, ok := signInNeeded(err); ok {
			return t.waitForSignIn(ctx, c, account, scopes, nil, a.Tool)
		}
		return errorReply(err, c, a.Company)
	}
	return outcomeReply(out, c, map[string]any{"account": account})
}

// outcomeReply turns an Outcome into the model's reply: Poppydesk's status and words outside,
// the Company's body and words inside the envelope.
func outcomeReply(o *Outcome, c *discovery.Company, fields map[string]any) *Reply {
	if o == nil {
		return Failed("error", "Poppydesk got no outcome for this request; call get_approval or recent_activity to see where it stands")
	}
	// The queue's words are used as they are only for statuses whose messages are fixed; for the
	// others (failed, outcome_unknown, ...) they can quote the Company (an error code, an error
	// text), so they go into the envelope as data and Poppydesk's fixed words are the message.
	msg := StatusMessages[o.Status]
	detail := ""
	switch {
	case o.Message != "" && fixedMessageStatuses[o.Status]:
		msg = o.Message
		if o.Status == "waiting_for_user" && !strings.Contains(msg, "wait_for_approval") {
			msg += ". Call wait_for_approval with the approval handle to learn the decision"
		}
	case o.Message != "":
		detail = o.Message
	}
	if msg == "" {
		msg = "the request ended with status " + o.Status
	}
	r := &Reply{Status: o.Status, Message: msg, ApprovalID: o.ApprovalID, Fields: fields, IsError: o.Status == "failed"}
	if fields == nil {
		r.Fields = map[string]any{}
	}
	if o.HTTPStatus != 0 {
		r.Fields["http_status"] = o.HTTPStatus
	}
	switch {
	case o.Status == "failed" && o.HTTPStatus == 401:
		r.Message += ". The Company needs the user's account for this: call request_sign_in with the scopes the operation lists (list_api_operations) and your reason; the user signs in in Poppydesk"
	case o.Status == "failed" && o.HTTPStatus == 403 && len(o.Body) == 0:
		r.Message += ". The user's account lacks a scope this needs: call request_sign_in with the scopes the operation lists"
	}
	data := map[string]any{}
	if len(o.Body) > 0 {
		var v any
		if json.Unmarshal(o.Body, &v) == nil {
			data["body"] = v
		} else {
			data["body_text"] = string(o.Body)
		}
	}
	if o.Text != "" {
		data["text"] = o.Text
	}
	if detail != "" {
		data["poppydesk_detail_may_quote_company"] = detail
	}
	if len(data) > 0 && c != nil {
		r.Company, r.CompanyName, r.Data = c.Identifier, c.Organization.Name, data
	} else if len(data) > 0 {
		r.Company, r.CompanyName, r.Data = "unknown", "an unknown Company", data
	}
	return r
}

// ---- sign-in ----

func (t *tools) requestSignIn(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company string   `json:"company"`
		Scopes  []string `json:"scopes"`
		Reason  string   `json:"reason"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	reason := strings.TrimSpace(a.Reason)
	if reason == "" || len(reason) > 500 {
		return Refused("reason is required (at most 500 characters): say in plain words why the user should sign in")
	}
	if len(a.Scopes) == 0 || len(a.Scopes) > 20 {
		return Refused("scopes must list 1 to 20 scopes the Company offers (describe_company)")
	}
	c, r := t.company(ctx, a.Company)
	if r != nil {
		return r
	}
	if !c.SignIn.Offered || c.SignIn.Disabled {
		return Failed("sign_in_not_offered", fmt.Sprintf("%s offers no sign-in to Personal Agents (spec 4), so the user cannot sign in through Poppydesk; use what works signed out", c.Organization.Domain))
	}
	var known []string
	for _, s := range c.Scopes {
		known = append(known, s.Name)
	}
	for _, s := range a.Scopes {
		if !slices.Contains(known, s) {
			return Refused(fmt.Sprintf("%q is not a scope %s lists (it lists: %s)", s, c.Organization.Domain, strings.Join(known, ", ")))
		}
	}
	sr, err := t.d.SignIns.Add(ctx, SignInRequest{Company: c.Identifier, CompanyName: c.Organization.Name, Domain: c.Organization.Domain,
		Scopes: a.Scopes, ModelReason: reason, Requested: t.d.Now()})
	if err != nil {
		return errorReply(err, c, a.Company)
	}
	scopes := append([]string(nil), sr.Scopes...)
	sort.Strings(scopes)
	return &Reply{Status: "asked_user",
		Message: fmt.Sprintf("the user has been asked in Poppydesk to sign in to %s (scopes: %s), with your reason shown as your words. Nothing is signed in until the user does it there; ask the user to tell you when they have, then try again.", c.Organization.Domain, strings.Join(scopes, " ")),
		Fields:  map[string]any{"request_id": sr.ID, "scopes": scopes}}
}

// ---- approvals ----

var stateMessages = map[string]string{
	"pending":         "not performed; waiting for the user's decision in Poppydesk",
	"approved":        "the user approved it; Poppydesk is sending it to the Company",
	"sending":         "the user approved it; Poppydesk is sending it to the Company",
	"outcome_unknown": StatusMessages["outcome_unknown"],
	"succeeded":       "the user approved it and the Company performed it",
	"failed":          "the user approved it but the Company refused or failed",
	"declined":        StatusMessages["declined"],
	"expired":         StatusMessages["expired"],
	"superseded":      "replaced by a newer revision of the Company's terms, which needs its own decision by the user",
}

func (t *tools) approvalID(raw json.RawMessage, timeout *int) (string, *Reply) {
	var a struct {
		ApprovalID     string `json:"approval_id"`
		TimeoutSeconds *int   `json:"timeout_seconds"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return "", r
	}
	if !handleRE.MatchString(a.ApprovalID) {
		return "", Refused("approval_id must be the approval handle a call returned")
	}
	if a.TimeoutSeconds != nil {
		if timeout == nil {
			return "", Refused("unknown argument \"timeout_seconds\"; this tool takes only approval_id")
		}
		if *a.TimeoutSeconds < 1 || *a.TimeoutSeconds > int(MaxWait/time.Second) {
			return "", Refused(fmt.Sprintf("timeout_seconds must be between 1 and %d", int(MaxWait/time.Second)))
		}
		*timeout = *a.TimeoutSeconds
	}
	return a.ApprovalID, nil
}

func (t *tools) getApproval(ctx context.Context, raw json.RawMessage) *Reply {
	id, r := t.approvalID(raw, nil)
	if r != nil {
		return r
	}
	v, err := t.d.Actions.Approval(ctx, id)
	if err != nil {
		return errorReply(err, nil, "")
	}
	msg := stateMessages[v.State]
	if msg == "" {
		msg = "the approval is in state " + v.State
	}
	data := map[string]any{"summary": v.Summary}
	if len(v.Terms) > 0 {
		data["terms"] = v.Terms
	}
	if v.Result != nil {
		res := map[string]any{"status": v.Result.Status}
		if len(v.Result.Body) > 0 {
			var b any
			if json.Unmarshal(v.Result.Body, &b) == nil {
				res["body"] = b
			}
		}
		if v.Result.Text != "" {
			res["text"] = v.Result.Text
		}
		data["result"] = res
	}
	fields := map[string]any{"state": v.State, "interface": v.Interface}
	if !v.ExpiresAt.IsZero() {
		fields["expires_at"] = v.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if !v.Updated.IsZero() {
		fields["updated"] = v.Updated.UTC().Format(time.RFC3339)
	}
	return &Reply{Status: v.State, Message: msg, ApprovalID: v.ID, Fields: fields,
		Company: v.Company, CompanyName: v.CompanyName, Data: data}
}

func (t *tools) waitForApproval(ctx context.Context, raw json.RawMessage) *Reply {
	secs := 60
	id, r := t.approvalID(raw, &secs)
	if r != nil {
		return r
	}
	out, err := t.d.Actions.Wait(ctx, id, time.Duration(secs)*time.Second)
	if err != nil {
		return errorReply(err, nil, "")
	}
	if out.ApprovalID == "" {
		out.ApprovalID = id
	}
	var c *discovery.Company
	if v, err := t.d.Actions.Approval(ctx, id); err == nil {
		c = &discovery.Company{Identifier: v.Company, Organization: discovery.Organization{Name: v.CompanyName}}
	}
	return outcomeReply(out, c, map[string]any{"waited_up_to_seconds": secs})
}

func (t *tools) recentActivity(_ context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Limit *int `json:"limit"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	n := 20
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > 100 {
			return Refused("limit must be between 1 and 100")
		}
		n = *a.Limit
	}
	list := t.d.Activity.List(n)
	return &Reply{Status: "done", Message: fmt.Sprintf("your %d most recent requests, newest first", len(list)),
		Fields: map[string]any{"activity": list}}
}

// ---- errors ----

// ErrNotFound marks a missing approval or Company for errorReply.
var ErrNotFound = fs.ErrNotExist

// errorReply says what happened in Poppydesk's words and what to do next; text that may quote
// the Company (its error descriptions, discovery details) goes into the envelope.
func errorReply(err error, c *discovery.Company, ref string) *Reply {
	company, name := ref, ref
	if c != nil {
		company, name = c.Identifier, c.Organization.Name
	}
	withDetail := func(r *Reply) *Reply {
		if company != "" {
			r.Company, r.CompanyName, r.Data = company, name, map[string]any{"error": err.Error()}
		} else {
			r.Fields = map[string]any{"detail": err.Error()}
		}
		return r
	}
	var ce *discovery.CheckError
	var pe *transport.ProtocolError
	var de *transport.DestinationError
	var re *transport.RedirectError
	switch {
	case errors.As(err, &ce):
		return withDetail(Failed("discovery_failed", fmt.Sprintf("Poppydesk could not verify the Company at %s: the check %q failed (Poppy spec %s). Poppydesk will not act at this Company until it is fixed; tell the user. The details are the Company's content.", ce.Domain, ce.Check, ce.Section)))
	case errors.As(err, &pe):
		return withDetail(protocolReply(pe))
	case errors.As(err, &de):
		return withDetail(Failed("refused_destination", "Poppydesk refused to send this request: its URL is not one of the Company's Session destinations (Poppy spec 5.2). Nothing was sent."))
	case errors.As(err, &re):
		return withDetail(Failed("refused_redirect", "the Company answered with a redirect, which Poppydesk does not follow for signed requests (Poppy spec 3). Nothing more was sent."))
	case errors.Is(err, approvals.ErrRefused):
		return withDetail(Refused("Poppydesk refused this request before sending anything; nothing was done. An approval comes only from the user in the Poppydesk window"))
	case errors.Is(err, context.DeadlineExceeded):
		return Failed("timeout", "the request timed out; try again later")
	case errors.Is(err, context.Canceled):
		return Failed("cancelled", "the request was cancelled")
	case errors.Is(err, fs.ErrNotExist):
		if ref == "" {
			return withDetail(Failed("not_found", "Poppydesk has no approval with this handle; use the handle a call returned (recent_activity lists them)"))
		}
		return withDetail(Failed("not_found", fmt.Sprintf("Poppydesk has not discovered %s yet; call discover_company with its domain first", ref)))
	}
	return withDetail(Failed("error", "Poppydesk could not do this; the details are below. If it persists, tell the user."))
}

func protocolReply(pe *transport.ProtocolError) *Reply {
	scopes := strings.Join(pe.Scopes, " ")
	switch {
	case pe.Status == 401 && pe.Code == "", pe.Code == transport.CodeInsufficientScope, pe.Code == transport.CodeInvalidToken:
		r := Failed("sign_in_needed", fmt.Sprintf("not performed: the Company needs the user's account (scopes: %s). Call request_sign_in with these scopes and your reason; the user signs in in Poppydesk", orNone(scopes)))
		r.Fields = map[string]any{"scopes": pe.Scopes}
		return r
	case pe.Code == transport.CodeExtensionRequired:
		return Failed("extension_required", fmt.Sprintf("not performed: the Company requires the extension %q for this request, which Poppydesk does not support here", pe.Extension))
	case pe.Status == 429:
		return Failed("rate_limited", fmt.Sprintf("not performed: the Company is limiting requests; try again in %d seconds", int(pe.RetryAfter.Seconds())+1))
	case pe.Code == transport.CodeInvalidSession:
		return Failed("session_refused", "not performed: the Company refused Poppydesk's Session (Poppy spec 5.3). Tell the user; retrying will not help")
	case pe.Code == transport.CodeSessionEnded, pe.Code == transport.CodeVersionUnsupported:
		return Failed("session_ended", "not performed: the Company ended the Session again after Poppydesk started a new one (Poppy spec 5.5). Try again later")
	}
	return Failed("company_error", fmt.Sprintf("not performed: the Company answered HTTP %d %s; its words are in the untrusted Company content", pe.Status, pe.Code))
}

func orNone(s string) string {
	if s == "" {
		return "not named"
	}
	return s
}
