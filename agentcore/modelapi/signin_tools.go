package modelapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// addSignInTools adds request_sign_in: the model asks, the user signs in in the window (spec 4.2,
// 4.3, 5.4).
func addSignInTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
	AddTool(s, Tool{Name: ToolRequestSignIn, Title: "Ask the user to sign in",
		Description: "Ask the USER to sign in to a Company with some scopes. Poppydesk shows your reason in its window, marked as your words; only the user can start the sign-in there. Nothing is signed in by this tool." +
			"\nStatuses:" + statusList(StatusAskedUser, StatusSignInNotOffered),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "scopes", "reason"], "properties": {` + companyProp + `,
			"scopes": {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": true, "items": {"type": "string", "minLength": 1, "maxLength": 200}, "description": "Scopes the Company lists (describe_company)."},
			"reason": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Why, in one or two sentences the user will read."}}}`,
		Output:     output([]string{StatusAskedUser, StatusSignInNotOffered}, js{"request_id": str("The sign-in request's ID.")}, nil),
		Idempotent: true}, t.requestSignIn)
}

func (t *tools) account(ctx context.Context, c *discovery.Company, given *string) (string, *Reply) {
	if given != nil {
		if !validAccount(*given) {
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
