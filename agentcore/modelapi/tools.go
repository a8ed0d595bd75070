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
	ToolListCompanies     = "list_companies"
)

// Statuses whose queue messages are Poppydesk's fixed words (the others can quote the Company).
var fixedMessageStatuses = map[string]bool{StatusWaitingForUser: true, StatusPerformed: true, StatusDeclined: true, StatusExpired: true, StatusInProgress: true,
	StatusCompanyError: true}

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

// callStatuses are the statuses of call_api_operation and call_mcp_tool.
var callStatuses = append(slices.Clone(outcomeStatuses), StatusWaitingForSignIn, StatusSignInNotOffered, StatusNotSignedIn)

// approvalStatuses are the statuses of get_approval and wait_for_approval.
var approvalStatuses = append(slices.Clone(outcomeStatuses), StatusSuperseded)

func addCoreTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
	AddTool(s, Tool{Name: ToolListCompanies, Title: "List the user's Companies",
		Description: "List the Companies the user has added to Poppydesk: their identifiers and verified domains, what each offers (OpenAPI APIs, MCP servers, a Company agent for conversations, website browsing, browser join, sign-in) and the accounts the user is signed in with, by label. Names are the Companies' own words. Read-only." +
			"\nStatuses:" + statusList(StatusOK, StatusUnavailable, StatusError),
		Schema: `{"type": "object", "additionalProperties": false, "properties": {}}`,
		Output: output([]string{StatusOK}, js{"companies": arrayOf(closed(js{
			"identifier":         str("The Company's identifier (https://...); use it or the domain as company with the other tools."),
			"domain":             str("The Company's verified domain."),
			"signed_in_accounts": stringList("The labels of the accounts the user is signed in with (empty: signed out)."),
			"offers": closed(js{
				"openapi_apis":  integer("How many OpenAPI APIs it lists (list_api_operations, call_api_operation)."),
				"mcp_servers":   integer("How many MCP servers it lists (list_mcp_tools, call_mcp_tool)."),
				"conversations": boolean("Whether it has a Company agent to talk with (start_conversation)."),
				"website":       boolean("Whether its website can be browsed in Poppydesk's controlled browser (browser_open)."),
				"browser_join":  boolean("Whether its website joins the controlled browser to the Session (signed-in browsing)."),
				"sign_in":       boolean("Whether it offers sign-in to Personal Agents."),
			}, "openapi_apis", "mcp_servers", "conversations", "website", "browser_join", "sign_in"),
			"problem": str("Why Poppydesk cannot read this Company's verified description now (then offers is empty)."),
		}, "identifier", "domain", "signed_in_accounts", "offers"), "The Companies, by identifier.")},
			js{"names": open(js{})}),
		ReadOnly: true, Idempotent: true}, t.listCompanies)
	AddTool(s, Tool{Name: ToolDiscoverCompany, Title: "Discover a Company",
		Description: "Find and verify the Company at a domain (its poppy.json and sign-in metadata, Poppy spec section 3). Returns the Company's identifier and a short summary. Read-only: nothing is sent on the user's behalf." +
			"\nStatuses:" + statusList(StatusOK, StatusDiscoveryFailed, StatusNetworkError, StatusBlocked),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["domain"], "properties": {
			"domain": {"type": "string", "minLength": 1, "maxLength": 260, "description": "The Company's domain, e.g. shop.example (host:port only in the local demo). No scheme, no path."}}}`,
		Output: output([]string{StatusOK}, js{"identifier": str("The Company's identifier."), "domain": str("Its verified domain.")},
			js{"organization": organization(), "protocol_version": str("The Poppy version it serves."), "sign_in_offered": boolean("Whether it offers sign-in."),
				"apis": integer("How many APIs it lists."), "company_agent": boolean("Whether it has a Company agent."), "website_browsing": boolean("Whether its website can be browsed.")}),
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.discover)
	AddTool(s, Tool{Name: ToolDescribeCompany, Title: "Describe a Company",
		Description: "Describe a discovered Company: organization, channels (APIs, Company agent, website, feedback), scopes with their hints, extensions, and whether the user is signed in. Read-only (it may refresh the Company's poppy.json when Poppydesk's copy is stale).",
		Schema:      `{"type": "object", "additionalProperties": false, "required": ["company"], "properties": {` + companyProp + `}}`,
		Output: output([]string{StatusOK}, js{"identifier": str("The Company's identifier."), "domain": str("Its verified domain."),
			"signed_in_accounts": stringList("The labels of the user's signed-in accounts there.")},
			js{"organization": organization(), "protocol_version": str(""), "sign_in": open(js{"offered": boolean(""), "direct": boolean(""), "device": boolean(""), "disabled": boolean("")}),
				"channels": open(js{"apis": arrayOf(open(js{"type": str(""), "url": str(""), "description": str(""), "tools": str("Which tools use it.")}), ""),
					"skipped_apis": arrayOf(open(js{"type": str(""), "url": str(""), "reason": str("")}), ""), "company_agent": open(js{"protocols": stringList("")}),
					"website_browsing": boolean(""), "feedback": boolean(""), "excluded_tasks": boolean("")}),
				"scopes": arrayOf(open(js{"name": str(""), "description": str(""), "changes": str(""), "personal_data": boolean("")}), ""), "extensions": open(js{})}),
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.describe)
	AddTool(s, Tool{Name: ToolListMCPTools, Title: "List a Company MCP server's tools",
		Description: "List the tools of one of the Company's MCP servers, with the annotations the Company gives them (hints written by the Company, not guarantees). Read-only.",
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company"], "properties": {` + companyProp + `, ` + accountProp + `,
			"server": {"type": "string", "maxLength": 2000, "description": "The MCP server's url from describe_company. Optional when the Company has one MCP server."}}}`,
		Output: output([]string{StatusOK, StatusNotSignedIn}, js{"server": str("The MCP server's url."), "account": str("The account used (\"\" signed out).")},
			js{"tools": arrayOf(open(js{"name": str(""), "title": str(""), "description": str(""), "input_schema": open(js{}), "annotations": open(js{})}), "")}),
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.listTools)
	AddTool(s, Tool{Name: ToolCallAPIOperation, Title: "Call a Company API operation",
		Description: "Ask the Company to perform an operation of its OpenAPI API on the user's behalf. Poppydesk signs and sends the request itself. If the Company needs the user's approval, the result says it was NOT performed and gives an approval handle: the user decides in the Poppydesk window, and you can call wait_for_approval. You cannot approve." +
			"\nStatuses:" + statusList(callStatuses...),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "operation_id"], "properties": {` + companyProp + `, ` + accountProp + `, ` + intentProp + `,
			"api": {"type": "string", "maxLength": 2000, "description": "The API's url. Optional when the Company has one OpenAPI API."},
			"operation_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The operation_id from list_api_operations."},
			"path_params": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}, "maxProperties": 20, "description": "Path parameters by name, e.g. {\"id\": \"ord_7Hk2\"}."},
			"query": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 2000}, "maxProperties": 50, "description": "Query parameters by name."},
			"body": {"type": "object", "description": "The JSON request body, a JSON object as the operation's request_body schema describes. For a body that is not an object (an array, a string, a number), use body_json instead."},
			"body_json": {"type": "string", "maxLength": 262144, "description": "The request body as JSON text, for an operation whose body is not a JSON object (e.g. \"[1, 2]\"). Give body or body_json, not both."}}}`,
		Output:      output(callStatuses, callFields(), outcomeData()),
		Destructive: true, OpenWorld: true}, t.callAPI)
	AddTool(s, Tool{Name: ToolCallMCPTool, Title: "Call a Company MCP tool",
		Description: "Ask the Company to run a tool of its MCP server on the user's behalf. Poppydesk signs and sends the call itself. If the Company needs the user's approval, the result says it was NOT performed and gives an approval handle: the user decides in the Poppydesk window. You cannot approve. The tool's whole result reaches you inside the untrusted content (text, structured content, images, audio, resources), up to a size budget; a note says what was cut. Send a progress token to receive the Company server's progress." +
			"\nStatuses:" + statusList(callStatuses...),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "tool"], "properties": {` + companyProp + `, ` + accountProp + `, ` + intentProp + `,
			"server": {"type": "string", "maxLength": 2000, "description": "The MCP server's url. Optional when the Company has one MCP server."},
			"tool": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The tool's name from list_mcp_tools."},
			"arguments": {"type": "object", "description": "The tool's arguments, as its input schema describes."}}}`,
		Output:      output(callStatuses, callFields(), outcomeData()),
		Destructive: true, OpenWorld: true}, t.callTool)
	AddTool(s, Tool{Name: ToolRequestSignIn, Title: "Ask the user to sign in",
		Description: "Ask the USER to sign in to a Company with some scopes. Poppydesk shows your reason in its window, marked as your words; only the user can start the sign-in there. Nothing is signed in by this tool." +
			"\nStatuses:" + statusList(StatusAskedUser, StatusSignInNotOffered),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "scopes", "reason"], "properties": {` + companyProp + `,
			"scopes": {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": true, "items": {"type": "string", "minLength": 1, "maxLength": 200}, "description": "Scopes the Company lists (describe_company)."},
			"reason": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Why, in one or two sentences the user will read."}}}`,
		Output:     output([]string{StatusAskedUser, StatusSignInNotOffered}, js{"request_id": str("The sign-in request's ID.")}, nil),
		Idempotent: true}, t.requestSignIn)
	AddTool(s, Tool{Name: ToolGetApproval, Title: "Get an approval's state",
		Description: "The state of an approval by its handle, with the Company's summary and terms the user sees. Read-only." +
			"\nStatuses:" + statusList(approvalStatuses...),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["approval_id"], "properties": {
			"approval_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The approval handle a call returned."}}}`,
		Output: output(approvalStatuses, js{"state": str("The approval's state in Poppydesk's queue (pending, approved, sending, retrying, outcome_unknown, succeeded, failed, declined, expired, superseded)."),
			"interface": str("How the operation came: api, mcp or conversation."), "expires_at": str("When the Company's terms expire (RFC 3339)."), "updated": str("When the approval last changed (RFC 3339).")},
			js{"summary": str("The Company's summary the user sees."), "terms": anyJSON("The Company's terms."),
				"result": open(js{"status": str(""), "body": anyJSON(""), "text": str(""), "content": arrayOf(contentBlock(), "")})}),
		ReadOnly: true, Idempotent: true}, t.getApproval)
	AddTool(s, Tool{Name: ToolWaitForApproval, Title: "Wait for the user's decision",
		Description: "Wait until the user decides about an approval in Poppydesk and the Company answers, or until the timeout. Read-only: waiting never decides anything, and cancelling the wait (notifications/cancelled) ends it at once without changing the approval. Send a progress token to receive progress while it waits." +
			"\nStatuses:" + statusList(approvalStatuses...),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["approval_id"], "properties": {
			"approval_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The approval handle a call returned."},
			"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 300, "default": 60, "description": "How long to wait (at most 300 seconds)."}}}`,
		Output:   output(approvalStatuses, js{"waited_up_to_seconds": integer("The timeout of this wait."), "account": str("")}, outcomeData()),
		ReadOnly: true, Idempotent: true,
		Progress: "waiting for the user's decision in Poppydesk", ProgressEvery: d.ProgressInterval}, t.waitForApproval)
	AddTool(s, Tool{Name: ToolRecentActivity, Title: "Recent activity",
		Description: "Your recent requests to Poppydesk (tool, Company, time, result status, duration), newest first, as the user sees them in Poppydesk's Inspector.",
		Schema: `{"type": "object", "additionalProperties": false, "properties": {
			"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "How many entries."}}}`,
		Output: output([]string{StatusOK}, js{"activity": arrayOf(closed(js{"seq": integer(""), "tool": str(""), "company": str(""), "at": str(""), "status": str(""),
			"durationMs": integer(""), "approvalId": str("")}, "seq", "tool", "at", "status", "durationMs"), "Newest first.")}, nil),
		ReadOnly: true, Idempotent: true}, t.recentActivity)
}

// ---- the user's Companies ----

func (t *tools) listCompanies(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct{}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	known, err := t.d.Actions.Companies(ctx)
	if err != nil {
		return errorReply(err, nil, "")
	}
	list := []any{}
	names := map[string]any{}
	for _, k := range known {
		offers := map[string]any{"openapi_apis": 0, "mcp_servers": 0, "conversations": false, "website": false, "browser_join": false, "sign_in": false}
		e := map[string]any{"identifier": k.Identifier, "domain": k.Domain, "signed_in_accounts": accountsOrEmpty(k.Accounts), "offers": offers}
		if c := k.Company; c != nil {
			sel := apis.Select(c.Channels.APIs)
			offers["openapi_apis"], offers["mcp_servers"] = len(sel.OpenAPI), len(sel.MCP)
			_, offers["conversations"] = c.AgentEndpoint()
			offers["website"] = c.Channels.Web != nil
			offers["browser_join"] = c.Channels.Web != nil && c.Channels.Web.BrowserSessionEndpoint != ""
			offers["sign_in"] = c.SignIn.Offered && !c.SignIn.Disabled
			if c.Organization.Domain != "" {
				e["domain"] = c.Organization.Domain
			}
			names[k.Identifier] = c.Organization.Name
		}
		if k.Problem != "" {
			e["problem"] = k.Problem
		}
		list = append(list, e)
	}
	r := &Reply{Status: StatusOK, Fields: map[string]any{"companies": list},
		Message: fmt.Sprintf("the user has added %s to Poppydesk. Use an identifier or domain as company with the other tools; discover_company adds another.", plural(len(list), "Company", "Companies"))}
	if len(list) == 0 {
		r.Message = "the user has added no Company to Poppydesk yet. discover_company with a domain the user names adds one."
	}
	if len(names) > 0 {
		r.Company, r.CompanyName, r.Data = "", "the Companies listed", map[string]any{"names": names}
	}
	return r
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
	return &Reply{Status: StatusOK,
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
	data := map[string]any{"organization": map[string]any{"name": c.Organization.Name, "domain": c.Organization.Domain},
		"protocol_version": c.Version, "sign_in": signIn, "channels": channels, "scopes": scopes, "extensions": exts}
	coverageNote := describeCoverage(ctx, t.d, c, data) // coverage_tools.go (spec 9)
	return &Reply{Status: StatusOK,
		Message: "The Company as Poppydesk verified it. The user is " + state + " at this Company. Operations that change something may need the user's approval in Poppydesk." + coverageNote,
		Fields:  map[string]any{"identifier": c.Identifier, "domain": c.Organization.Domain, "signed_in_accounts": accountsOrEmpty(accounts)},
		Company: c.Identifier, CompanyName: c.Organization.Name, Data: data}
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
		return discovery.API{}, Failed(StatusNotFound, fmt.Sprintf("this Company lists no %s API in its poppy.json; describe_company shows what it offers", typ))
	case u == "" && len(list) == 1:
		return list[0], nil
	case u == "":
		return discovery.API{}, Refused(fmt.Sprintf("this Company has %d %s APIs; name one in %s: %s", len(list), typ, tool, strings.Join(urls, ", ")))
	}
	return discovery.API{}, Failed(StatusNotFound, fmt.Sprintf("%q is not one of this Company's %s APIs (%s)", u, typ, strings.Join(urls, ", ")))
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
			return "", Failed(StatusNotSignedIn, fmt.Sprintf("the user is not signed in to %s as %q (signed-in accounts: %s). Call request_sign_in to ask the user", c.Organization.Domain, *given, orNone(strings.Join(accounts, ", "))))
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
	return &Reply{Status: StatusOK,
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
		BodyJSON    *string           `json:"body_json"`
		Intent      map[string]string `json:"intent"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	if a.OperationID == "" || len(a.OperationID) > 200 {
		return Refused("operation_id is required (from list_api_operations)")
	}
	if a.BodyJSON != nil {
		if len(a.Body) > 0 && string(a.Body) != "null" {
			return Refused("give the body in body or in body_json, not both; nothing was sent")
		}
		if !json.Valid([]byte(*a.BodyJSON)) {
			return Refused("body_json must be JSON text (e.g. [1, 2] or \"text\"); nothing was sent")
		}
		a.Body = json.RawMessage(*a.BodyJSON)
	}
	if len(a.Body) > 0 {
		var body any
		if err := json.Unmarshal(a.Body, &body); err != nil {
			return Refused("body must be JSON")
		}
		if s, ok := body.(string); ok && a.BodyJSON == nil && json.Valid([]byte(s)) && (strings.HasPrefix(strings.TrimSpace(s), "{") || strings.HasPrefix(strings.TrimSpace(s), "[")) {
			// A client that sends every argument as text (it did not read the schema's type)
			// sent the object as a string: refuse it in words rather than send a string body.
			return Refused("body must be a JSON object, not a string holding JSON; send it as an object, or as text in body_json. Nothing was sent")
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
		Path: a.PathParams, Query: q, Body: a.Body, Intent: a.Intent, Requester: ClientFrom(ctx).Label()})
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
// performed and waits for the user. It never starts a sign-in (docs/DESIGN.md invariant 1; spec
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
		r := Failed(StatusSignInNeeded, fmt.Sprintf("not performed: %s needs the user's account for this, but offers no sign-in to Personal Agents (spec 4), so the user cannot sign in through Poppydesk; use what works signed out", c.Organization.Domain))
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
		return Failed(StatusSignInNeeded, fmt.Sprintf("not performed: %s needs the user to sign in (scopes: %s), and this Poppydesk cannot show sign-in requests; tell the user", c.Organization.Domain, orNone(list)))
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
	if rep := progressOf(ctx); rep != nil {
		// The Company server's progress reaches the client under the client's own token.
		ctx = apis.WithProgress(ctx, func(p apis.Progress) {
			rep.send(ctx, p.Progress, p.Total, companyProgress(p.Message))
		})
	}
	out, err := t.d.Actions.CallTool(ctx, ToolCall{Company: c.Identifier, Account: account, Server: srv.URL, Tool: a.Tool,
		Arguments: a.Arguments, Intent: a.Intent, Requester: ClientFrom(ctx).Label()})
	if err != nil {
		if scopes, ok := signInNeeded(err); ok {
			return t.waitForSignIn(ctx, c, account, scopes, nil, a.Tool)
		}
		return errorReply(err, c, a.Company)
	}
	return outcomeReply(out, c, map[string]any{"account": account})
}

// outcomeReply turns an Outcome into the model's reply: Poppydesk's status and words outside,
// the Company's body, words and content blocks inside the envelope.
func outcomeReply(o *Outcome, c *discovery.Company, fields map[string]any) *Reply {
	if o == nil {
		return Failed(StatusError, "Poppydesk got no outcome for this request; call get_approval or recent_activity to see where it stands")
	}
	status := outcomeStatus(o.Status)
	// The queue's words are used as they are only for statuses whose messages are fixed; for the
	// others (failed, outcome_unknown, ...) they can quote the Company (an error code, an error
	// text), so they go into the envelope as data and Poppydesk's fixed words are the message.
	msg := StatusMeanings[status]
	detail := ""
	switch {
	case o.Message != "" && fixedMessageStatuses[status]:
		msg = o.Message
		if status == StatusWaitingForUser && !strings.Contains(msg, "wait_for_approval") {
			msg += ". Call wait_for_approval with the approval handle to learn the decision; do not send the request again"
		}
		if status == StatusPerformed {
			msg += "; the Company's response is in the untrusted Company content"
		}
	case o.Message != "":
		detail = o.Message
	}
	r := &Reply{Status: status, Message: msg, ApprovalID: o.ApprovalID, Fields: fields, IsError: status == StatusFailed || status == StatusError || status == StatusCompanyError}
	if fields == nil {
		r.Fields = map[string]any{}
	}
	if o.HTTPStatus != 0 {
		r.Fields["http_status"] = o.HTTPStatus
	}
	switch {
	case status == StatusFailed && o.HTTPStatus == 401:
		r.Message += ". The Company needs the user's account for this: call request_sign_in with the scopes the operation lists (list_api_operations) and your reason; the user signs in in Poppydesk"
	case status == StatusFailed && o.HTTPStatus == 403 && len(o.Body) == 0:
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
	if blocks, parts := contentParts(o.Content); len(blocks) > 0 {
		data["content"] = blocks
		r.Parts = parts
	}
	if detail != "" {
		data["queue_detail_may_quote_company"] = detail
	}
	if len(data) > 0 && c != nil {
		r.Company, r.CompanyName, r.Data = c.Identifier, c.Organization.Name, data
	} else if len(data) > 0 {
		r.Company, r.CompanyName, r.Data = "unknown", "an unknown Company", data
	}
	return r
}

// contentParts turns the non-text content blocks of a Company tool result into the envelope's
// descriptions and the result's content parts (images, audio, embedded resources, resource
// links). Text blocks are already in the outcome's text. Everything here is the Company's.
func contentParts(cs []apis.Content) ([]any, []mcp.Content) {
	var blocks []any
	var parts []mcp.Content
	// Parts follow the two text parts (Poppydesk's, then the untrusted one).
	const first = 2
	for _, c := range cs {
		if c.Type == "text" && !c.Omitted {
			continue
		}
		b := map[string]any{"type": c.Type}
		for k, v := range map[string]string{"mime_type": c.MIMEType, "uri": c.URI, "name": c.Name, "title": c.Title, "description": c.Description, "note": c.Note} {
			if v != "" {
				b[k] = v
			}
		}
		if c.Size != nil {
			b["size"] = *c.Size
		}
		if c.Omitted {
			b["omitted"] = true
			blocks = append(blocks, b)
			continue
		}
		switch c.Type {
		case "image":
			b["bytes"], b["part"] = len(c.Data), first+len(parts)
			parts = append(parts, &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType})
		case "audio":
			b["bytes"], b["part"] = len(c.Data), first+len(parts)
			parts = append(parts, &mcp.AudioContent{Data: c.Data, MIMEType: c.MIMEType})
		case "resource":
			if c.Text != "" || c.Data == nil {
				b["text"] = c.Text
			} else {
				b["bytes"], b["part"] = len(c.Data), first+len(parts)
				parts = append(parts, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Blob: c.Data}})
			}
		case "resource_link":
			b["part"] = first + len(parts)
			parts = append(parts, &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size})
		}
		blocks = append(blocks, b)
	}
	return blocks, parts
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
		return Failed(StatusSignInNotOffered, fmt.Sprintf("%s offers no sign-in to Personal Agents (spec 4), so the user cannot sign in through Poppydesk; use what works signed out", c.Organization.Domain))
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
	return &Reply{Status: StatusAskedUser,
		Message: fmt.Sprintf("the user has been asked in Poppydesk to sign in to %s (scopes: %s), with your reason shown as your words. Nothing is signed in until the user does it there; ask the user to tell you when they have, then try again.", c.Organization.Domain, strings.Join(scopes, " ")),
		Fields:  map[string]any{"request_id": sr.ID, "scopes": scopes}}
}

// ---- approvals ----

// stateMessages are Poppydesk's words for an approval's state.
var stateMessages = map[string]string{
	"pending":         "not performed; waiting for the user's decision in Poppydesk",
	"approved":        "the user approved it; Poppydesk is sending it to the Company",
	"sending":         "the user approved it; Poppydesk is sending it to the Company",
	"retrying":        "the user approved it; Poppydesk is sending it to the Company again",
	"outcome_unknown": StatusMeanings[StatusOutcomeUnknown],
	"succeeded":       "the user approved it and the Company performed it",
	"failed":          "the user approved it but the Company refused or failed",
	"declined":        StatusMeanings[StatusDeclined],
	"expired":         StatusMeanings[StatusExpired],
	"superseded":      StatusMeanings[StatusSuperseded],
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
	status := stateStatus(v.State)
	if status == StatusInProgress && v.Result != nil && outcomeStatus(v.Result.Status) == StatusOutcomeUnknown {
		status = StatusOutcomeUnknown
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
		if blocks, _ := contentParts(v.Result.Content); len(blocks) > 0 {
			res["content"] = blocks
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
	return &Reply{Status: status, Message: msg, ApprovalID: v.ID, Fields: fields, IsError: status == StatusFailed,
		Company: v.Company, CompanyName: v.CompanyName, Data: data}
}

func (t *tools) waitForApproval(ctx context.Context, raw json.RawMessage) *Reply {
	secs := 60
	id, r := t.approvalID(raw, &secs)
	if r != nil {
		return r
	}
	progressOf(ctx).setTotal(float64(secs))
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
		if v.State == "superseded" {
			return &Reply{Status: StatusSuperseded, Message: stateMessages["superseded"], ApprovalID: id, Fields: map[string]any{"waited_up_to_seconds": secs}}
		}
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
	return &Reply{Status: StatusOK, Message: fmt.Sprintf("your %d most recent requests, newest first", len(list)),
		Fields: map[string]any{"activity": list}}
}

// ---- errors ----

// ErrNotFound marks a missing approval or Company for errorReply.
var ErrNotFound = fs.ErrNotExist

// errorReply tells the model what failed (classifyError): Poppydesk's status, words and detail
// outside; what the Company wrote, if anything, inside the envelope under the Company named by c
// or ref.
func errorReply(err error, c *discovery.Company, ref string) *Reply {
	v := classifyError(err)
	if v.status == StatusNotFound {
		if ref == "" {
			v.message = "Poppydesk has no approval with this handle; use the handle a call returned (recent_activity lists them)"
		} else {
			v.message = fmt.Sprintf("Poppydesk has not discovered %s yet; call discover_company with its domain first", ref)
		}
	}
	r := Failed(v.status, v.message)
	r.Fields = v.fields
	if v.detail != "" && v.detail != v.message {
		r.Fields["detail"] = v.detail
	}
	if len(r.Fields) == 0 {
		r.Fields = nil
	}
	if v.company != nil {
		r.Company, r.CompanyName = ref, ref
		if c != nil {
			r.Company, r.CompanyName = c.Identifier, c.Organization.Name
		}
		if r.Company == "" {
			r.Company, r.CompanyName = "unknown", "an unknown Company"
		}
		r.Data = v.company
	}
	return r
}

func orNone(s string) string {
	if s == "" {
		return "not named"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
