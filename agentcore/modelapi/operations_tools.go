package modelapi

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
)

// ToolDescribeAPIOperation describes one OpenAPI operation in full.
const ToolDescribeAPIOperation = "describe_api_operation"

// Budgets of the operations tools: a page of list_api_operations holds at most
// ListPageBytes of operation lines (and at most the limit asked for, ListPageMax at most), and
// its first page at most ListTagBytes of tags; describe_api_operation returns at most
// DescribeSchemaBytes of component schemas, naming the ones it leaves out. A 1,223-operation
// API (GitHub's) thus takes a few pages of about 16 KiB rather than one result of several
// megabytes, and an API with hundreds of tags (Microsoft Graph's) a first page of the same size.
const (
	ListPageBytes       = 16 << 10
	ListTagBytes        = 2 << 10
	ListPageDefault     = 50
	ListPageMax         = 200
	DescribeSchemaBytes = 48 << 10
	summaryRunes        = 120
	descriptionRunes    = 4000
)

// listOperationsSchema is list_api_operations' input: the API, filters and paging.
const listOperationsSchema = `{"type": "object", "additionalProperties": false, "required": ["company"], "properties": {` + companyProp + `,
	"api": {"type": "string", "maxLength": 2000, "description": "The API's url from describe_company. Optional when the Company has one OpenAPI API."},
	"tag": {"type": "string", "maxLength": 200, "description": "Only operations with this tag (the first page lists the tags with their counts; the ones with the most operations when there are many)."},
	"path_prefix": {"type": "string", "maxLength": 2000, "description": "Only operations whose path starts with this, e.g. /repos/{owner}/{repo}/issues."},
	"query": {"type": "string", "maxLength": 200, "description": "Only operations whose operation_id, summary or path contain every word of this (case-insensitive)."},
	"cursor": {"type": "string", "maxLength": 200, "description": "next_cursor from the previous page of the same listing."},
	"limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50, "description": "At most this many operations on this page (a page also stops at about 16 KiB)."}}}`

// describeOperationSchema is describe_api_operation's input.
const describeOperationSchema = `{"type": "object", "additionalProperties": false, "required": ["company", "operation_id"], "properties": {` + companyProp + `,
	"api": {"type": "string", "maxLength": 2000, "description": "The API's url from describe_company. Optional when the Company has one OpenAPI API."},
	"operation_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The operation_id from list_api_operations."},
	"schemas": {"type": "array", "maxItems": 50, "uniqueItems": true, "items": {"type": "string", "minLength": 1, "maxLength": 300},
		"description": "Only these component schemas (names from omitted_schemas of an earlier answer), instead of the operation."}}}`

// listOperationsOutput is list_api_operations' outputSchema (schema.go).
func listOperationsOutput() json.RawMessage {
	return output([]string{StatusOK}, js{
		"api":         str("The API's url."),
		"matched":     integer("How many operations pass the filters."),
		"returned":    integer("How many operations this page lists."),
		"next_cursor": str("Pass as cursor, with the same filters, for the next page; absent on the last page."),
	}, js{
		"title": str("The description's title."), "version": str("The description's version."),
		"description":      str("The poppy.json entry's description of the API."),
		"total_operations": integer("How many operations the API has."),
		"tags":             stringList("On the first page, each tag with its number of operations, \"tag (n)\"; when they are many, those with the most operations, in that order."),
		"tags_total":       integer("How many tags the API has, when tags lists only some of them."),
		"operations":       stringList("One line per operation: operation_id METHOD path — summary [scopes] (flags)."),
	})
}

// describeOperationOutput is describe_api_operation's outputSchema (schema.go).
func describeOperationOutput() json.RawMessage {
	scope := open(js{"name": str("The scope."), "description": str("The security scheme's description of it.")})
	return output([]string{StatusOK}, js{
		"api":             str("The API's url."),
		"omitted_schemas": stringList("Referenced component schemas left out for size; ask for them with schemas."),
	}, js{
		"operation_id": str(""), "method": str(""), "path": str("The path template."), "server_url": str("The server the operation is called at."),
		"summary": str(""), "description": str(""), "tags": stringList(""), "deprecated": boolean(""),
		"unavailable": str("Why Poppydesk will not call this operation, when it will not."),
		"parameters": arrayOf(open(js{"name": str(""), "in": str("path, query or header."), "required": boolean(""), "description": str(""),
			"schema": anyJSON("The parameter's JSON schema as the description writes it.")}), ""),
		"request_body": open(js{"required": boolean(""), "content_types": stringList(""), "schema": anyJSON("The JSON body's schema; local $refs name entries of schemas.")}),
		"responses":    arrayOf(open(js{"status": str("A status code, a range such as 4XX, or default."), "description": str("")}), ""),
		"security": arrayOf(arrayOf(open(js{"scheme": str(""), "type": str("oauth2, http, apiKey or openIdConnect."),
			"scopes": arrayOf(scope, "")}), "Requirements that all apply."), "Alternatives: any one suffices; none means callable signed out."),
		"scopes":  stringList("The scopes of the first security alternative."),
		"schemas": open(js{}),
	})
}

// addOperationsTools adds list_api_operations (paged and filtered) and describe_api_operation.
func addOperationsTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
	AddTool(s, Tool{Name: ToolListAPIOperations, Title: "List an API's operations",
		Description: "List the operations of one of the Company's OpenAPI APIs, one compact line each (operation_id, method, path, summary, scopes), a page at a time, filtered by tag, path prefix or words. Then describe one with describe_api_operation (parameters, body schema, scopes) and call it with call_api_operation. Read-only." +
			"\nStatuses:" + statusList(StatusOK, StatusRefused, StatusNotFound),
		Schema: listOperationsSchema, Output: listOperationsOutput(),
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.listOperations)
	AddTool(s, Tool{Name: ToolDescribeAPIOperation, Title: "Describe an API operation",
		Description: "Describe one operation of a Company's OpenAPI API in full: parameters with their schemas, the request body schema, responses, and the scopes it needs, with the component schemas its $refs name. Read-only." +
			"\nStatuses:" + statusList(StatusOK, StatusRefused, StatusNotFound),
		Schema: describeOperationSchema, Output: describeOperationOutput(),
		ReadOnly: true, Idempotent: true, OpenWorld: true}, t.describeOperation)
}

// cursorKey ties a cursor to one listing: the API, its version and the filters.
func cursorKey(api string, d *apis.Description, f apis.OperationFilter) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%s\x00%s\x00%s", api, d.Title, d.Version, len(d.Operations), f.Tag, f.PathPrefix, f.Query)
	return strconv.FormatUint(h.Sum64(), 36)
}

// operationLine is the compact line of one operation.
func operationLine(o *apis.Operation) string {
	var b strings.Builder
	b.WriteString(o.ID)
	if o.ID != o.Method+" "+o.Path {
		b.WriteString(" " + o.Method + " " + o.Path)
	}
	if s := truncateRunes(oneLine(o.Summary), summaryRunes); s != "" {
		b.WriteString(" — " + s)
	}
	if sc := o.Scopes(); len(sc) > 0 {
		b.WriteString(" [scopes: " + strings.Join(sc, " ") + "]")
	}
	if o.Deprecated {
		b.WriteString(" (deprecated)")
	}
	if o.Unavailable != "" {
		b.WriteString(" (unavailable: describe it for why)")
	}
	return b.String()
}

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// tagLines are the first page's tags, "tag (n)", and how many tags there are (operations
// without a tag are not one): every tag, by name (byName), when they fit in ListTagBytes; else
// those with the most operations that fit, in byOps's order (most first, ties by name).
func tagLines(byName, byOps []apis.TagCount) (lines []string, total int) {
	untagged := func(tc apis.TagCount) bool { return tc.Tag == "" }
	counts := slices.DeleteFunc(byName, untagged)
	// as JSON lists it: the tag, " (n)", quotes, a comma and a space
	size := func(tc apis.TagCount) int { return len(tc.Tag) + len(strconv.Itoa(tc.Operations)) + 3 + 4 }
	all := 0
	for _, tc := range counts {
		all += size(tc)
	}
	if all > ListTagBytes {
		counts = slices.DeleteFunc(byOps, untagged)
	}
	used := 0
	for _, tc := range counts {
		if used += size(tc); used > ListTagBytes {
			break
		}
		lines = append(lines, fmt.Sprintf("%s (%d)", tc.Tag, tc.Operations))
	}
	return lines, len(counts)
}

// listOperations is list_api_operations: filters, then a page within the limits.
func (t *tools) listOperations(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company    string `json:"company"`
		API        string `json:"api"`
		Tag        string `json:"tag"`
		PathPrefix string `json:"path_prefix"`
		Query      string `json:"query"`
		Cursor     string `json:"cursor"`
		Limit      *int   `json:"limit"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	limit := ListPageDefault
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > ListPageMax {
			return Refused(fmt.Sprintf("limit must be between 1 and %d", ListPageMax))
		}
		limit = *a.Limit
	}
	c, r := t.company(ctx, a.Company)
	if r != nil {
		return r
	}
	api, r := pickAPI(c, "openapi", a.API, "api")
	if r != nil {
		return r
	}
	d, err := t.d.Actions.Operations(ctx, c.Identifier, api)
	if err != nil {
		return errorReply(err, c, a.Company)
	}
	f := apis.OperationFilter{Tag: a.Tag, PathPrefix: a.PathPrefix, Query: a.Query}
	key := cursorKey(api.URL, d, f)
	start := 0
	if a.Cursor != "" {
		off, k, ok := strings.Cut(a.Cursor, ".")
		n, err := strconv.Atoi(off)
		if !ok || err != nil || n < 0 || k != key {
			return Refused("that cursor is not from this listing (another API, other filters, or the API's description changed); list again without a cursor")
		}
		start = n
	}
	matched := d.Find(f)
	lines := []string{}
	size, next := 0, -1
	for i := start; i < len(matched); i++ {
		if len(lines) == limit {
			next = i
			break
		}
		l := operationLine(&d.Operations[matched[i]])
		if len(lines) > 0 && size+len(l) > ListPageBytes {
			next = i
			break
		}
		size += len(l) + 4
		lines = append(lines, l)
	}
	data := map[string]any{"title": d.Title, "version": d.Version, "description": d.APIDescribe, "total_operations": len(d.Operations), "operations": lines}
	tagsNote := ""
	if start == 0 {
		tags, total := tagLines(d.TagCounts(), d.TagCountsByOperations())
		if len(tags) > 0 {
			data["tags"] = tags
		}
		if len(tags) < total {
			data["tags_total"] = total
			tagsNote = fmt.Sprintf(" The API has %d tags; tags lists the %d with the most operations: find operations of the others with query or path_prefix.", total, len(tags))
		}
	}
	fields := map[string]any{"api": api.URL, "matched": len(matched), "returned": len(lines)}
	msg := fmt.Sprintf("Operations %d-%d of the %d that match (the API has %d).", min(start+1, len(matched)), start+len(lines), len(matched), len(d.Operations))
	if next >= 0 {
		fields["next_cursor"] = strconv.Itoa(next) + "." + key
		msg += " More: call list_api_operations again with the same filters and cursor = next_cursor, or narrow with tag, path_prefix or query."
	}
	if len(matched) == 0 {
		msg = fmt.Sprintf("No operation matches those filters (the API has %d operations); try a tag from the first page, a shorter path_prefix or fewer words.", len(d.Operations))
	}
	msg += tagsNote + " Describe one with describe_api_operation (its parameters, body schema and scopes) before calling it with call_api_operation. Operations that change something may need the user's approval in Poppydesk; operations marked unavailable cannot be called."
	return &Reply{Status: StatusOK, Message: msg, Fields: fields, Company: c.Identifier, CompanyName: c.Organization.Name, Data: data}
}

// describeOperation is describe_api_operation.
func (t *tools) describeOperation(ctx context.Context, raw json.RawMessage) *Reply {
	var a struct {
		Company     string   `json:"company"`
		API         string   `json:"api"`
		OperationID string   `json:"operation_id"`
		Schemas     []string `json:"schemas"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return r
	}
	if a.OperationID == "" || len(a.OperationID) > 200 {
		return Refused("operation_id must be an operation_id from list_api_operations")
	}
	c, r := t.company(ctx, a.Company)
	if r != nil {
		return r
	}
	api, r := pickAPI(c, "openapi", a.API, "api")
	if r != nil {
		return r
	}
	d, err := t.d.Actions.Operations(ctx, c.Identifier, api)
	if err != nil {
		return errorReply(err, c, a.Company)
	}
	det, err := d.Detail(ctx, a.OperationID)
	if err != nil {
		if _, ok := d.Operation(a.OperationID); !ok {
			return Failed(StatusNotFound, fmt.Sprintf("the API has no operation %q; find it with list_api_operations (query, tag or path_prefix)", a.OperationID))
		}
		return errorReply(err, c, a.Company)
	}
	fields := map[string]any{"api": api.URL}
	if len(a.Schemas) > 0 {
		schemas, omitted, missing := map[string]any{}, []string{}, []string{}
		size := 0
		for _, n := range a.Schemas {
			s, ok := d.Schema(n)
			switch {
			case !ok:
				missing = append(missing, n)
			case size+len(s) > DescribeSchemaBytes && size > 0:
				omitted = append(omitted, n)
			default:
				size += len(s)
				schemas[n] = json.RawMessage(s)
			}
		}
		msg := fmt.Sprintf("%d component schemas.", len(schemas))
		if len(missing) > 0 {
			msg += " The description defines no schema " + strings.Join(missing, ", ") + "."
		}
		if len(omitted) > 0 {
			fields["omitted_schemas"] = omitted
			msg += " Left out for size (ask again for them): " + strings.Join(omitted, ", ") + "."
		}
		return &Reply{Status: StatusOK, Message: msg, Fields: fields, Company: c.Identifier, CompanyName: c.Organization.Name,
			Data: map[string]any{"operation_id": det.ID, "schemas": schemas}}
	}
	data := operationData(&det.Operation)
	schemas := map[string]any{}
	var omitted []string
	size := 0
	for _, n := range det.SchemaNames {
		s := det.Schemas[n]
		if size+len(s) > DescribeSchemaBytes {
			omitted = append(omitted, n)
			continue
		}
		size += len(s)
		schemas[n] = json.RawMessage(s)
	}
	if len(schemas) > 0 {
		data["schemas"] = schemas
	}
	msg := "The operation in full. Call it with call_api_operation (operation_id, path_params, query, body as request_body.schema says); Poppydesk signs it and, if the Company asks, the user approves it in Poppydesk."
	if len(omitted) > 0 {
		sort.Strings(omitted)
		fields["omitted_schemas"] = omitted
		msg += fmt.Sprintf(" %d referenced schemas were left out for size; ask for them with describe_api_operation and schemas: [names].", len(omitted))
	}
	if det.Unavailable != "" {
		msg = "This operation cannot be called: " + det.Unavailable + "."
	}
	return &Reply{Status: StatusOK, Message: msg, Fields: fields, Company: c.Identifier, CompanyName: c.Organization.Name, Data: data}
}

// operationData is an operation as describe_api_operation shows it.
func operationData(o *apis.Operation) map[string]any {
	m := map[string]any{"operation_id": o.ID, "method": o.Method, "path": o.Path, "server_url": o.ServerURL, "summary": o.Summary}
	if o.Description != "" {
		m["description"] = truncateRunes(o.Description, descriptionRunes)
	}
	if len(o.Tags) > 0 {
		m["tags"] = o.Tags
	}
	if o.Deprecated {
		m["deprecated"] = true
	}
	if o.Unavailable != "" {
		m["unavailable"] = o.Unavailable
	}
	params := []any{}
	for _, p := range o.Parameters {
		pm := map[string]any{"name": p.Name, "in": p.In, "required": p.Required}
		if p.Description != "" {
			pm["description"] = truncateRunes(p.Description, descriptionRunes)
		}
		if len(p.Schema) > 0 {
			pm["schema"] = json.RawMessage(p.Schema)
		}
		params = append(params, pm)
	}
	m["parameters"] = params
	if b := o.RequestBody; b != nil {
		bm := map[string]any{"required": b.Required, "content_types": b.ContentTypes}
		if len(b.Schema) > 0 {
			bm["schema"] = json.RawMessage(b.Schema)
		}
		m["request_body"] = bm
	}
	resps := []any{}
	for _, r := range o.Responses {
		resps = append(resps, map[string]any{"status": r.Status, "description": truncateRunes(r.Description, 300)})
	}
	m["responses"] = resps
	sec := []any{}
	for _, alt := range o.Security {
		var reqs []any
		for _, r := range alt {
			scopes := []any{}
			for _, s := range r.Scopes {
				scopes = append(scopes, map[string]any{"name": s.Name, "description": s.Description})
			}
			reqs = append(reqs, map[string]any{"scheme": r.Scheme, "type": r.Type, "scopes": scopes})
		}
		sec = append(sec, reqs)
	}
	m["security"] = sec
	if sc := o.Scopes(); len(sc) > 0 {
		m["scopes"] = sc
	}
	return m
}
