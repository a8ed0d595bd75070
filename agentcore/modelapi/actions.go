package modelapi

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// Actions is everything the model's tools may ask of Poppydesk. Every method is a request: none
// decides an approval or signs in (docs/DESIGN.md invariant 1). [NewEngineActions] implements it over
// the engine and the approval queue; the tools never reach the engine in any other way.
type Actions interface {
	// Discover finds and verifies the Company at domain now (spec 3), its documents fetched anew.
	Discover(ctx context.Context, domain string) (*discovery.Company, error)
	// Company returns a discovered Company by its identifier ("https://...") or its domain
	// (discovered again through the cache when only the domain is given). An error matching
	// fs.ErrNotExist means it was never discovered.
	Company(ctx context.Context, ref string) (*discovery.Company, error)
	// Accounts lists the labels of the accounts the user signed in to at the Company (never a
	// User ID or token); empty when signed out.
	Accounts(ctx context.Context, company string) ([]string, error)
	// Operations fetches and reads an openapi API's description (spec 7).
	Operations(ctx context.Context, company string, api discovery.API) (*apis.Description, error)
	// Tools lists an mcp API's tools (spec 7) in the account's Session.
	Tools(ctx context.Context, company, account string, server discovery.API) ([]apis.Tool, error)
	// CallAPI and CallTool send the model's request through the approval queue (Operations 4-7):
	// an operation the Company returns becomes a pending approval that only the window decides.
	CallAPI(ctx context.Context, c APICall) (*Outcome, error)
	CallTool(ctx context.Context, c ToolCall) (*Outcome, error)
	// Approval is the state of one approval, as the model may see it.
	Approval(ctx context.Context, id string) (*ApprovalView, error)
	// Wait blocks until the approval reaches a final state or one that needs the user, or until
	// timeout or until ctx ends (the client cancelled); it never changes the approval.
	Wait(ctx context.Context, id string, timeout time.Duration) (*Outcome, error)
	// Companies lists the Companies the user has added (the state database's), each with its
	// verified description when Poppydesk can read it and the labels of its signed-in accounts.
	Companies(ctx context.Context) ([]KnownCompany, error)
}

// KnownCompany is one Company the user has added, as list_companies shows it.
type KnownCompany struct {
	Identifier, Domain string
	// Company is the verified description (nil when it cannot be read now; Problem says why).
	Company *discovery.Company
	Problem string
	// Accounts are the labels of the signed-in accounts (never a User ID or token).
	Accounts []string
}

// APICall is the model's request to call an OpenAPI operation. There is no header, token or
// approval field: Poppydesk signs the request itself (spec 5.2, 10.2).
type APICall struct {
	Company, Account string
	API              string // apis[].url of an openapi API
	OperationID      string
	Path             map[string]string
	Query            url.Values
	Body             json.RawMessage
	Intent           map[string]string
	// Requester is the agent that asked, in words (Client.Label; "" when unknown).
	Requester string
}

// ToolCall is the model's request to call a Company MCP tool. The model's _meta is never sent.
type ToolCall struct {
	Company, Account string
	Server           string // apis[].url of an mcp API
	Tool             string
	Arguments        json.RawMessage
	Intent           map[string]string
	// Requester is the agent that asked, in words (Client.Label; "" when unknown).
	Requester string
}

// Outcome is the result of a call as the model may see it (the approval queue's Outcome).
type Outcome struct {
	Status     string          // the queue's: done | waiting_for_user | outcome_unknown | in_progress | declined | expired | failed
	ApprovalID string          // the handle, when an approval is involved
	HTTPStatus int             // API calls
	Body       json.RawMessage // the Company's body or structured content: untrusted data
	Text       string          // the Company's own words: untrusted
	// Content are the content blocks of a Company MCP tool result (untrusted), within the
	// budget of apis.MaxToolContentBytes.
	Content []apis.Content
	Message string // Poppydesk's plain-language status, in its own words (it never quotes the Company)
	// Detail is Poppydesk's description of what the Company answered, which may quote it:
	// untrusted, shown inside the Company content.
	Detail string
}

// ApprovalView is one approval as the model may see it: no sid, User ID, account secret or
// digest, only what the user is asked and where it stands.
type ApprovalView struct {
	ID          string
	Company     string // identifier
	CompanyName string // from verified discovery
	Interface   string // api | mcp | conversation
	State       string
	Summary     string          // the Company's summary of the latest revision: untrusted
	Terms       json.RawMessage // untrusted
	ExpiresAt   time.Time
	Updated     time.Time
	Result      *Outcome // after a decision
}
