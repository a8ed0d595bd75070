package modelapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

const intentProp = `"intent": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}, "maxProperties": 20, "description": "What you intend, in the request's own field names (e.g. {\"replacement_sku\": \"...\"}). Poppydesk checks the Company's terms against it and shows differences to the user."}`

// callStatuses are the statuses of call_api_operation and call_mcp_tool.
var callStatuses = append(slices.Clone(outcomeStatuses), StatusWaitingForSignIn, StatusSignInNotOffered, StatusNotSignedIn)

// addCallTools adds the tools that ask a Company to act through its APIs (spec 7): list_mcp_tools,
// call_api_operation and call_mcp_tool.
func addCallTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
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
	if !validToolName(a.Tool) {
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
	// The queue's message is Poppydesk's own words (it never quotes the Company): the message
	// itself for the statuses whose messages are fixed, else Poppydesk's detail under the status's
	// meaning. What the queue says of the Company's answer that may quote it (Detail) goes into
	// the envelope as data.
	msg := StatusMeanings[status]
	r := &Reply{Status: status, Message: msg, ApprovalID: o.ApprovalID, Fields: fields, IsError: status == StatusFailed || status == StatusError || status == StatusCompanyError}
	if fields == nil {
		r.Fields = map[string]any{}
	}
	switch {
	case o.Message != "" && fixedMessageStatuses[status]:
		msg = o.Message
		if status == StatusWaitingForUser && !strings.Contains(msg, "wait_for_approval") {
			msg += ". Call wait_for_approval with the approval handle to learn the decision; do not send the request again"
		}
		if status == StatusPerformed {
			msg += "; the Company's response is in the untrusted Company content"
		}
		r.Message = msg
	case o.Message != "":
		r.Fields["detail"] = o.Message
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
	if o.Detail != "" {
		data["queue_detail_may_quote_company"] = o.Detail
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
