package modelapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// ApprovalMetaKey is the _meta key of an approval in an MCP tool call (Operations 6). The model
// may never send it, in any argument.
const ApprovalMetaKey = apis.ApprovalMetaKey

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

// The characters of what a model names; the lengths are checked apart (validDomain and the
// others), since a bounded repetition such as {1,128} compiles into that many copies of its
// class, which every start of the program would pay for.
var (
	domainRE   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$`)
	handleRE   = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)
	accountRE  = regexp.MustCompile(`^[^\x00-\x1f\x7f]*$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-/]+$`)
)

// validDomain: a host name of at most 253 characters, with an optional port.
func validDomain(s string) bool {
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host = s[:i]
	}
	return len(host) <= 253 && domainRE.MatchString(s)
}

// validHandle: an approval's handle, 1 to 128 characters.
func validHandle(s string) bool { return len(s) <= 128 && handleRE.MatchString(s) }

// validAccount: an account label, at most 100 characters and no control character.
func validAccount(s string) bool { return utf8.RuneCountInString(s) <= 100 && accountRE.MatchString(s) }

// validToolName: an MCP tool's name, 1 to 128 characters.
func validToolName(s string) bool { return len(s) <= 128 && toolNameRE.MatchString(s) }

type tools struct{ d Deps }

// companyProp is the schema of the company argument shared by most tools.
const companyProp = `"company": {"type": "string", "minLength": 1, "maxLength": 300, "description": "The Company's domain (e.g. shop.example or shop.localhost:8443 in the demo) or its identifier from discover_company."}`
const accountProp = `"account": {"type": "string", "maxLength": 100, "description": "The label of the user's account at the Company. Omit it: Poppydesk uses the user's only signed-in account, or none (signed out)."}`

// addActivityTools adds recent_activity: the model's own requests, as the Inspector shows them.
func addActivityTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
	AddTool(s, Tool{Name: ToolRecentActivity, Title: "Recent activity",
		Description: "Your recent requests to Poppydesk (tool, Company, time, result status, duration), newest first, as the user sees them in Poppydesk's Inspector.",
		Schema: `{"type": "object", "additionalProperties": false, "properties": {
			"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "How many entries."}}}`,
		Output: output([]string{StatusOK}, js{"activity": arrayOf(closed(js{"seq": integer(""), "tool": str(""), "company": str(""), "at": str(""), "status": str(""),
			"durationMs": integer(""), "approvalId": str("")}, "seq", "tool", "at", "status", "durationMs"), "Newest first.")}, nil),
		ReadOnly: true, Idempotent: true}, t.recentActivity)
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
