package modelapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// addCompanyTools adds the tools that find and describe Companies (spec 3, 3.1): list_companies,
// discover_company and describe_company.
func addCompanyTools(s *mcp.Server, d Deps) {
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
		Description: "Find and verify the Company at a domain (its poppy.json and sign-in metadata, Poppy spec section 3). Its documents are fetched anew, not from Poppydesk's cache, so a change the Company just made is seen. Returns the Company's identifier and a short summary. Read-only: nothing is sent on the user's behalf." +
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
}

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

func (t *tools) discover(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Domain string `json:"domain"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	if !validDomain(a.Domain) || !strings.Contains(a.Domain, ".") {
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
	if !strings.HasPrefix(ref, "https://") && !validDomain(ref) {
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
