package modelapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// EngineActions implements [Actions] over the engine (discovery, Sessions, API descriptions, MCP
// tool lists) and the approval queue (every call that may change something). The signed-in
// accounts come from the engine's sign-in layer, as the window's do, so both name the same ones.
type EngineActions struct {
	engine *engine.Engine
	queue  *approvals.Queue
	known  CompanyLister
}

// CompanyLister lists the Companies the user has added; *vault.State is the one the app uses.
type CompanyLister interface {
	ListCompanies(ctx context.Context) ([]store.Company, error)
}

// ListFrom makes Companies list what l lists (the Host's state database) and returns a.
func (a *EngineActions) ListFrom(l CompanyLister) *EngineActions {
	a.known = l
	return a
}

// Companies lists the Companies of the state database with their verified descriptions (from
// the engine, which refreshes a stale one) and the labels of their signed-in accounts.
func (a *EngineActions) Companies(ctx context.Context) ([]KnownCompany, error) {
	if a.known == nil {
		return nil, &UnavailableError{Reason: "this Poppydesk keeps no list of the user's Companies; nothing was done"}
	}
	cos, err := a.known.ListCompanies(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the user's Companies from Poppydesk's state database failed: %w", err)
	}
	signedIn, err := a.engine.OAuth().SignedIn(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts from the keyring failed: %w; unlock the keyring", err)
	}
	out := make([]KnownCompany, 0, len(cos))
	for _, co := range cos {
		k := KnownCompany{Identifier: co.Identifier, Domain: co.Domain, Accounts: labels(signedIn[co.Identifier])}
		if d, err := a.engine.Company(ctx, co.Identifier); err == nil {
			k.Company = d
		} else {
			k.Problem = "Poppydesk cannot read its verified description now (" + classifyError(err).message + "); describe_company tries again"
		}
		out = append(out, k)
	}
	return out, nil
}

var _ Actions = (*EngineActions)(nil)

// NewEngineActions returns the Actions of the app: e and q are the window's own engine and
// approval queue (so the window shows what the model asked).
func NewEngineActions(e *engine.Engine, q *approvals.Queue) (*EngineActions, error) {
	if e == nil || q == nil {
		return nil, errors.New("modelapi: the model's actions need the engine and the approval queue")
	}
	return &EngineActions{engine: e, queue: q}, nil
}

// Discover is engine.DiscoverAnew (spec 3): the model asked to verify the Company now, as the
// person does with the window's Discover, so its documents are fetched anew, not from the cache.
func (a *EngineActions) Discover(ctx context.Context, domain string) (*discovery.Company, error) {
	return a.engine.DiscoverAnew(ctx, domain)
}

// Company reads a Company by identifier, or by domain through discovery (its RFC 9111 cache).
func (a *EngineActions) Company(ctx context.Context, ref string) (*discovery.Company, error) {
	if strings.HasPrefix(ref, "https://") {
		return a.engine.Company(ctx, ref)
	}
	return a.engine.Discover(ctx, strings.ToLower(ref))
}

// Accounts lists the labels of the accounts signed in at the Company (the sign-in layer's
// answer, the window's too).
func (a *EngineActions) Accounts(ctx context.Context, company string) ([]string, error) {
	st, err := a.engine.OAuth().Accounts(ctx, company)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts from the keyring failed: %w; unlock the keyring", err)
	}
	return labels(st), nil
}

// labels are the accounts' labels, in their order; empty, never nil.
func labels(st []oauth.AccountStatus) []string {
	out := make([]string, 0, len(st))
	for _, s := range st {
		out = append(out, s.Account)
	}
	return out
}

// Operations is the description from the engine's shared cache (apis.Descriptions: fetched without
// the Session header, spec 5.2, once per version; parsed once).
func (a *EngineActions) Operations(ctx context.Context, company string, api discovery.API) (*apis.Description, error) {
	cl, err := a.engine.Client(ctx, company, "")
	if err != nil {
		return nil, err
	}
	ac, err := cl.APIs()
	if err != nil {
		return nil, err
	}
	return ac.FetchOpenAPI(ctx, api)
}

// Tools lists the MCP server's tools in the account's Session (spec 7).
func (a *EngineActions) Tools(ctx context.Context, company, account string, server discovery.API) ([]apis.Tool, error) {
	cl, err := a.engine.Client(ctx, company, account)
	if err != nil {
		return nil, err
	}
	ac, err := cl.APIs()
	if err != nil {
		return nil, err
	}
	ms, err := ac.ConnectMCP(ctx, server)
	if err != nil {
		return nil, err
	}
	defer ms.Close()
	return ms.ListTools(ctx)
}

// CallAPI is queue.CallAPI: Poppydesk signs and sends; an operation becomes a pending approval.
func (a *EngineActions) CallAPI(ctx context.Context, c APICall) (*Outcome, error) {
	out, err := a.queue.CallAPI(ctx, approvals.APICall{Company: c.Company, Account: c.Account, API: c.API, OperationID: c.OperationID,
		Input: apis.Input{Path: c.Path, Query: c.Query, Body: c.Body}, Intent: c.Intent, Requester: c.Requester})
	return outcome(out), err
}

// CallTool is queue.CallTool.
func (a *EngineActions) CallTool(ctx context.Context, c ToolCall) (*Outcome, error) {
	out, err := a.queue.CallTool(ctx, approvals.ToolCall{Company: c.Company, Account: c.Account, Server: c.Server, Tool: c.Tool,
		Arguments: c.Arguments, Intent: c.Intent, Requester: c.Requester})
	return outcome(out), err
}

// Approval is queue.Get without what the model must not see (sid, digest, the request sent).
func (a *EngineActions) Approval(ctx context.Context, id string) (*ApprovalView, error) {
	it, err := a.queue.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &ApprovalView{ID: it.ID, Company: it.Company, CompanyName: it.CompanyName, Interface: it.Interface, State: it.State,
		Summary: it.Current.SummaryText, Terms: it.Current.Terms, ExpiresAt: it.Current.ExpiresAt, Updated: it.Updated,
		Result: outcome(it.Result)}, nil
}

// Wait is queue.Wait.
func (a *EngineActions) Wait(ctx context.Context, id string, timeout time.Duration) (*Outcome, error) {
	out, err := a.queue.Wait(ctx, id, timeout)
	return outcome(out), err
}

func outcome(o *approvals.Outcome) *Outcome {
	if o == nil {
		return nil
	}
	return &Outcome{Status: o.Status, ApprovalID: o.ApprovalID, HTTPStatus: o.HTTPStatus, Body: o.Body, Text: o.Text, Content: o.Content, Message: o.Message, Detail: o.Detail}
}
