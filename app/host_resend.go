package app

// The Inspector's edit-and-resend, for a Company developer in developer mode: an exchange of
// the log, edited (method, URL, headers, body), is sent again in the Session of its account at
// its Company, through the one signed-request pipeline (agentcore/apis over
// transport.SessionClient.Send: the same destination checks as every request, spec 5.2, 5.6, 7),
// freshly signed: a new Session JWT with a new jti (spec 5.2), the account's current access
// token with a new DPoP proof (spec 4.5, RFC 9449). Nothing secret is taken from the log (it
// holds none, docs/DESIGN.md invariant 5), and nothing the user approves is ever sent by it:
// Poppy-Approval goes only with an approval given in Poppydesk's own dialog (Operations 6).
//
// Exchanges of a Company's MCP server and of its Company Agent are refused (statefulChannel):
// each belongs to a conversation Poppydesk's client holds with the Company, which the exchange
// alone cannot be sent again in.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

// ResendRemade are the headers a resend never takes from the edit: the pipeline makes them
// anew for every request (a fresh Session JWT, the account's current token with a new DPoP
// proof, the Session's version and extensions), and the transport sets the framing ones.
var ResendRemade = []string{"Poppy-Session", "Dpop", "Authorization", "Poppy-Version", "Poppy-Extensions", "Host", "Content-Length",
	"Connection", "Transfer-Encoding", "Te", "Upgrade", "Keep-Alive", "Proxy-Connection", "Accept-Encoding"}

// Resend is an exchange of the log as a Company developer edited it, to send again.
type Resend struct {
	Of     int64 // the exchange sent again
	Method string
	URL    string
	Header http.Header // the [ResendRemade] headers in it are dropped
	Body   []byte
}

// Resent is what a resend did.
type Resent struct {
	// IDs are the new exchanges in the log, oldest first: one, or more when the pipeline sent
	// again (a DPoP nonce, a refreshed token, a renewed Session); the last holds the answer.
	IDs    []int64
	Status int
	// Refused is the Company's refusal in words (its status, error and error_description), ""
	// for a 2xx or 3xx answer.
	Refused string
}

// ErrResendNotDeveloper is the refusal of a resend outside developer mode.
var ErrResendNotDeveloper = errors.New("sending a request again is part of developer mode, for Company developers: turn it on in Settings → Developer mode (or start with --dev-company) and start Poppydesk again. Nothing was sent")

// developerOn reports whether developer mode is on in this run (the demo's counts).
func (h *Host) developerOn() bool {
	if h.demo != nil {
		return h.demo.developer().On()
	}
	return h.cfg.Developer.On()
}

// ResendOffered reports whether the Inspector offers edit-and-resend (developer mode is on).
func (h *Host) ResendOffered() bool { return h != nil && h.Refusal() == nil && h.developerOn() }

// Resend sends r in the Session of the account that sent exchange r.Of, at its Company, through
// the signed-request pipeline, freshly signed (see the file's comment). The new exchanges carry
// the cause "window: Inspector.Resend" with Resends = r.Of. An error says, in words, why nothing
// was sent: not developer mode, the exchange went without a Session or is gone, a header or the
// body still holds a masked value, Poppy-Approval, or a URL the pipeline refuses (not one of the
// Company's Session destinations). A Company's error answer is no error: Resent.Refused says it.
func (h *Host) Resend(ctx context.Context, r Resend) (Resent, error) {
	if err := h.Refusal(); err != nil {
		return Resent{}, err
	}
	if !h.developerOn() {
		return Resent{}, ErrResendNotDeveloper
	}
	exs, err := h.ExchangesByID(ctx, []int64{r.Of})
	if err != nil {
		return Resent{}, fmt.Errorf("exchange %d cannot be sent again: %w", r.Of, err)
	}
	d, err := inspect.ParseDetails(exs[0].Details)
	if err != nil || d.SID == "" {
		return Resent{}, fmt.Errorf("exchange %d went without a Session header (discovery, client metadata and sign-in requests do, spec 5.2), so there is no Session to sign it again in: "+
			"send again a request to the Company's APIs, MCP server or Company Agent, or run this one with its curl export. Nothing was sent", r.Of)
	}
	sess, err := h.state.GetSession(ctx, d.SID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Resent{}, fmt.Errorf("exchange %d was sent in Session %s, which Poppydesk no longer knows (the Company was forgotten or everything was reset): sign in or call the Company again, then send one of the new exchanges. Nothing was sent", r.Of, d.SID)
		}
		return Resent{}, err
	}
	if co, err := h.engine.Company(ctx, sess.Company); err == nil {
		if why := statefulChannel(co, exs[0].URL, r.URL); why != "" {
			return Resent{}, fmt.Errorf("exchange %d %s. Nothing was sent", r.Of, why)
		}
	}
	req, err := resendRequest(r)
	if err != nil {
		return Resent{}, err
	}
	ac, err := h.engine.APIClient(ctx, sess.Company, sess.Account)
	if err != nil {
		return Resent{}, fmt.Errorf("no Session with %s can be opened for exchange %d: %w. Nothing was sent", sess.Company, r.Of, err)
	}
	if err := h.engine.FlushExchanges(ctx); err != nil {
		return Resent{}, err
	}
	last, err := h.state.ListExchanges(ctx, vault.ExchangeQuery{Newest: true, NoBodies: true, Limit: 1})
	if err != nil {
		return Resent{}, fmt.Errorf("reading the exchange log failed: %w", err)
	}
	var after int64
	if len(last) > 0 {
		after = last[0].ID
	}
	sctx := inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseWindow, Name: "Inspector.Resend", Resends: r.Of})
	res, err := ac.Send(sctx, req)
	out := Resent{}
	var perr *transport.ProtocolError
	switch {
	case res != nil && errors.As(err, &perr):
		out.Status, out.Refused = res.Status, refusalWords(perr, res.Body)
	case err != nil && errors.Is(err, transport.ErrNotSent):
		return Resent{}, fmt.Errorf("Poppydesk did not send it (nothing reached the Company): %s", strings.TrimPrefix(err.Error(), "transport: "))
	case err != nil:
		return Resent{}, fmt.Errorf("sending exchange %d again failed: %w", r.Of, err)
	default:
		out.Status = res.Status
	}
	if out.IDs, err = h.resentIDs(ctx, after, r.Of); err != nil {
		return out, err
	}
	h.log.Info("inspector: an exchange sent again", "of", r.Of, "company", sess.Company, "status", out.Status, "exchanges", out.IDs)
	return out, nil
}

// resendRequest is r as the pipeline's request, or why it cannot be sent.
func resendRequest(r Resend) (*apis.Request, error) {
	method := strings.ToUpper(strings.TrimSpace(r.Method))
	if method == "" || strings.ContainsAny(method, " \t\r\n()<>@,;:\\\"/[]?={}") {
		return nil, fmt.Errorf("%q is not an HTTP method (GET, POST, PUT, PATCH, DELETE, ...). Nothing was sent", r.Method)
	}
	h := http.Header{}
	for k, vs := range r.Header {
		k = http.CanonicalHeaderKey(strings.TrimSpace(k))
		if k == "" || slices.Contains(ResendRemade, k) {
			continue
		}
		if k == "Poppy-Approval" {
			return nil, errors.New("Poppy-Approval goes only with an approval you give in Poppydesk's own dialog (Operations 6), never with a request sent again: remove the header; " +
				"a request that needs approval then gets the Company's approval_required answer. Nothing was sent")
		}
		for _, v := range vs {
			if strings.Contains(v, redact.Mask) {
				return nil, fmt.Errorf("the header %s still holds %s, a value the log masked (it keeps no secrets): type the value or remove the header. Nothing was sent", k, redact.Mask)
			}
			h.Add(k, v)
		}
	}
	if strings.Contains(string(r.Body), redact.Mask) {
		return nil, fmt.Errorf("the body still holds %s, a value the log masked (it keeps no secrets): type the value or remove it. Nothing was sent", redact.Mask)
	}
	if strings.Contains(r.URL, redact.Mask) {
		return nil, fmt.Errorf("the URL still holds %s, a value the log masked: type the value or remove it. Nothing was sent", redact.Mask)
	}
	var body []byte
	if len(r.Body) > 0 {
		body = r.Body
	}
	// The Idempotency-Key is the developer's: kept as edited, none added when removed.
	return &apis.Request{Method: method, URL: strings.TrimSpace(r.URL), Header: h, Body: body, NoIdempotencyKey: true}, nil
}

// refusalWords is a Company's error answer as the window shows it beside the original.
func refusalWords(e *transport.ProtocolError, body []byte) string {
	s := fmt.Sprintf("The Company refused it: HTTP %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	if e.Code == "" && e.Description == "" && len(body) > 0 {
		s += ": " + redact.Text(string(body[:min(len(body), 300)]))
	}
	return s + "."
}

// resentIDs are the exchanges newer than after that send exchange of again, oldest first.
func (h *Host) resentIDs(ctx context.Context, after, of int64) ([]int64, error) {
	if err := h.engine.FlushExchanges(ctx); err != nil {
		return nil, err
	}
	var ids []int64
	q := vault.ExchangeQuery{AfterID: after, NoBodies: true, Limit: 500}
	for {
		page, err := h.state.ListExchanges(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("reading the exchange log failed: %w", err)
		}
		for _, ex := range page {
			if d, err := inspect.ParseDetails(ex.Details); err == nil && d.Cause != nil && d.Cause.Resends == of {
				ids = append(ids, ex.ID)
			}
		}
		if len(page) < q.Limit {
			return ids, nil
		}
		q.AfterID = page[len(page)-1].ID
	}
}

// statefulChannel says why an exchange at one of urls (the original's and the edit's) cannot be
// sent again ("" when it can): an MCP server's requests belong to the MCP session Poppydesk's
// client holds (its Mcp-Session-Id, and JSON-RPC ids the client must never use twice in it, MCP
// base protocol), and the Company Agent's to a conversation Poppydesk keeps (its message ids,
// which the Company takes as retries of the same message, and its events in order, spec 8).
func statefulChannel(co *discovery.Company, urls ...string) string {
	under := func(u, base string) bool {
		base = strings.TrimSuffix(base, "/")
		u, _, _ = strings.Cut(u, "?")
		return base != "" && (u == base || strings.HasPrefix(u, base+"/"))
	}
	for _, u := range urls {
		for _, a := range co.Channels.APIs {
			if a.Type == "mcp" && under(u, a.URL) {
				return "is a request to the Company's MCP server " + a.URL + ", which belongs to the MCP session Poppydesk's client holds with it: " +
					"its Mcp-Session-Id and a JSON-RPC id the client must never use twice in that session (MCP base protocol), so it cannot be sent again on its own. " +
					"Call the tool again through the model (call_mcp_tool), which signs a new request in the session, or run this one with its curl export"
			}
		}
		if ep, ok := co.AgentEndpoint(); ok && under(u, ep) {
			return "is part of a conversation with the Company Agent at " + ep + ", which Poppydesk keeps in order (spec 8): sent again, a message with the same id is a retry the Company answers as before, " +
				"and one with a new id is a message Poppydesk's conversation does not know. Continue the conversation in Poppydesk instead, or run this one with its curl export"
		}
	}
	return ""
}
