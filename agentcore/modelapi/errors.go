package modelapi

// Errors as the model sees them, classified in one place ([classifyError]): whose words are
// whose. Poppydesk's own failures — a name that does not resolve, a connection refused, a TLS
// error, an address or URL its rules forbid (spec 3, 5.2), its own time bound — are reported in
// Poppydesk's words, trusted, outside the untrusted envelope. What a Company wrote — the code and
// description of its error response (*transport.ProtocolError), the words of its authorization
// server (*oauth.Error), its MCP server's JSON-RPC error, the Location of a redirect, what a
// discovery check quotes from its documents — goes inside the envelope, and Poppydesk's detail
// text names it without quoting it (spec 10.1, Operations 8).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// UnavailableError is what an [Actions] returns when the part of Poppydesk behind a tool does
// not run (the engine did not start, no window): Reason is Poppydesk's words, shown as they are.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }

// errorView is an error as the model sees it.
type errorView struct {
	status, message string
	// detail is Poppydesk's own technical text (trusted): the error with every Company-written
	// part replaced by a note that names it.
	detail string
	// fields are more of Poppydesk's values (scopes, retry_after_seconds, http_status).
	fields map[string]any
	// company is what the Company wrote (untrusted), nil when nothing.
	company map[string]any
}

// codeTransportFailed is the JSON-RPC code the MCP SDK gives an exchange its HTTP transport
// could not complete (jsonrpc2.ErrRejected, "rejected by transport", which the SDK keeps
// internal): the connection broke, not an answer of the Company's MCP server.
const codeTransportFailed = -32005

// companyWords is the placeholder for a Company-written part of an error text.
const companyWords = "[the Company's words, in the untrusted Company content]"

// classifyError says whose error err is and how to tell the model.
func classifyError(err error) errorView {
	v := errorView{fields: map[string]any{}}
	company := map[string]any{}
	detail := err.Error()
	// Every Company-written part is lifted out of the text first, whatever else the error is.
	var pe *transport.ProtocolError
	if errors.As(err, &pe) {
		detail = strings.ReplaceAll(detail, pe.Error(), fmt.Sprintf("%s %s answered HTTP %d %s", pe.Method, pe.URL, pe.Status, companyWords))
		company["http_status"] = pe.Status
		if pe.Code != "" {
			company["error"] = pe.Code
		}
		if pe.Description != "" {
			company["error_description"] = pe.Description
		}
		if pe.Extension != "" {
			company["extension"] = pe.Extension
		}
	}
	var oe *oauth.Error
	if errors.As(err, &oe) {
		detail = strings.ReplaceAll(detail, oe.Error(), oe.Step+" failed: "+oe.Problem+" "+companyWords)
		if oe.Code != "" {
			company["oauth_error"] = oe.Code
		}
		if oe.Description != "" {
			company["oauth_error_description"] = oe.Description
		}
	}
	var we *jsonrpc.Error
	// The MCP SDK's own code for an exchange its HTTP transport could not complete carries the
	// SDK's words, not the Company's: they stay in Poppydesk's detail.
	if errors.As(err, &we) && we.Code != codeTransportFailed {
		detail = strings.ReplaceAll(detail, we.Error(), fmt.Sprintf("the Company's MCP server answered JSON-RPC error %d %s", we.Code, companyWords))
		company["jsonrpc_error"] = map[string]any{"error_number": we.Code, "message": we.Message}
		if len(we.Data) > 0 {
			company["jsonrpc_error"].(map[string]any)["data"] = string(we.Data)
		}
	}
	var ce *discovery.CheckError
	if errors.As(err, &ce) && ce.Detail != "" {
		// The check's detail quotes the Company's documents.
		detail = strings.ReplaceAll(detail, ": "+ce.Detail, ": "+companyWords)
		company["check_detail"] = ce.Detail
	}
	var re *transport.RedirectError
	if errors.As(err, &re) {
		detail = strings.ReplaceAll(detail, fmt.Sprintf("%q", re.Location), companyWords)
		company["redirect_location"] = re.Location
	}
	if len(company) > 0 {
		v.company = company
	}
	v.detail = redact.String(detail)
	if len(v.detail) > 2000 {
		v.detail = v.detail[:2000] + "…"
	}

	var ue *UnavailableError
	var bae *browserjoin.ActionError
	var ae *transport.AddressError
	var se *transport.SchemeError
	var pathErr *transport.PathError
	var de *transport.DestinationError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.As(err, &ue):
		v.status, v.message = StatusUnavailable, ue.Reason
		v.detail = ""
	case errors.As(err, &bae) && bae.Refused:
		v.status, v.message = StatusRefused, "Poppydesk refused the browser request's arguments (the detail says which); nothing was done. Ask again with a page of the Company's website, or a form and fields the current page shows"
	case bae != nil:
		v.status, v.message = StatusBlocked, "Poppydesk's rules stopped the controlled browser: the page left the Company's website, or the form would send to another site (Poppy spec 6). Nothing was sent there, and the browser left that page"
	case errors.Is(err, approvals.ErrRefused):
		v.status, v.message = StatusRefused, "Poppydesk refused this request before sending anything; nothing was done. An approval comes only from the user in the Poppydesk window"
	case errors.Is(err, context.Canceled):
		v.status, v.message = StatusCancelled, "the request was cancelled; nothing changed because of the cancellation"
	case errors.As(err, &ae):
		v.status, v.message = StatusBlocked, fmt.Sprintf("Poppydesk refused to connect to %s: it resolves to a %s address, which Poppydesk never connects to for a Company (Poppy spec 3). Nothing was sent; retrying will not help. Tell the user the Company's address looks wrong", ae.Host, ae.Why)
	case errors.As(err, &se):
		v.status, v.message = StatusBlocked, "Poppydesk refused a URL that is not HTTPS (Poppy spec 3). Nothing was sent; the Company must publish it as https://"
	case errors.As(err, &pathErr):
		v.status, v.message = StatusBlocked, "Poppydesk refused a URL whose path could reach another resource than it names (a dot-segment or an encoded slash; Poppy spec 3, 5.2). Nothing was sent"
	case errors.As(err, &de):
		v.status, v.message = StatusBlocked, "Poppydesk refused to send this request: its URL is not one of the Company's Session destinations (Poppy spec 5.2). Nothing was sent"
	case re != nil:
		v.status, v.message = StatusBlocked, "the Company answered with a redirect, which Poppydesk does not follow for signed requests (Poppy spec 3). Nothing more was sent; where it pointed is in the untrusted Company content"
	case errors.Is(err, apis.ErrMCPResponseTooLarge):
		v.status, v.message = StatusCompanyError, fmt.Sprintf("the Company's MCP server sent a response larger than %d MiB; Poppydesk cut it and the call failed. Ask the Company to fix it", apis.MaxMCPResponseBody>>20)
	case errors.As(err, &dnsErr):
		v.status, v.message = StatusNetworkError, fmt.Sprintf("Poppydesk could not look up the address of %s (%s). Nothing was sent. Check the domain and the network, then try again", dnsErr.Name, dnsWhy(dnsErr))
	case tlsProblem(err) != "":
		v.status, v.message = StatusNetworkError, "Poppydesk could not set up a secure connection to the Company: "+tlsProblem(err)+". Nothing was sent. This is a problem of the Company's certificate or of the network, not of the request"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		v.status, v.message = StatusTimeout, "Poppydesk's time limit for this request passed before the Company answered. If the request changes something, check its outcome before sending it again (get_approval or recent_activity)"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		v.status, v.message = StatusNetworkError, "Poppydesk could not connect to the Company (the connection was refused or failed). Nothing was sent. Try again later"
	case pe != nil:
		protocolView(pe, &v)
	case oe != nil:
		v.status, v.message = StatusCompanyError, "the Company's authorization server refused a step of the sign-in ("+oe.Step+"); its words are in the untrusted Company content. Tell the user; signing in again in Poppydesk may help"
	case we != nil && we.Code == codeTransportFailed:
		v.status, v.message = StatusConnectionLost, "the connection to the Company's MCP server broke before it answered (the detail says how). The call may have reached the Company and been performed: check (recent_activity, or read what it would change) before calling it again"
	case we != nil:
		v.status, v.message = StatusCompanyError, "the Company's MCP server answered with an error; its words are in the untrusted Company content"
	case ce != nil:
		v.status, v.message = StatusDiscoveryFailed, fmt.Sprintf("Poppydesk could not verify the Company at %s: the check %q failed (Poppy spec %s). Poppydesk will not act at this Company until it is fixed; tell the user", ce.Domain, ce.Check, ce.Section)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, store.ErrNotFound):
		v.status, v.message = StatusNotFound, "Poppydesk has no such record"
	default:
		v.status, v.message = StatusError, "Poppydesk could not do this; the detail says why. If it persists, tell the user"
	}
	return v
}

// protocolView fills v for a Company's error response: Poppydesk's words name only the codes it
// knows (spec 7, 5.3, 5.5, 3.3, 5.6); everything the Company wrote stays in v.company.
func protocolView(pe *transport.ProtocolError, v *errorView) {
	v.fields["http_status"] = pe.Status
	switch {
	case pe.Status == 401 && pe.Code == "", pe.Code == transport.CodeInsufficientScope, pe.Code == transport.CodeInvalidToken:
		v.status = StatusSignInNeeded
		v.message = fmt.Sprintf("not performed: the Company needs the user's account (scopes: %s). Call request_sign_in with these scopes and your reason; the user signs in in Poppydesk", orNone(strings.Join(pe.Scopes, " ")))
		v.fields["scopes"] = nonNil(pe.Scopes)
	case pe.Code == transport.CodeExtensionRequired:
		v.status, v.message = StatusExtensionRequired, "not performed: the Company requires an extension for this request that Poppydesk does not use here (its name is in the untrusted Company content)"
	case pe.Status == 429:
		v.status = StatusRateLimited
		v.message = fmt.Sprintf("not performed: the Company is limiting requests; try again in %d seconds", int(pe.RetryAfter.Seconds())+1)
		v.fields["retry_after_seconds"] = int(pe.RetryAfter.Seconds()) + 1
	case pe.Code == transport.CodeInvalidSession:
		v.status, v.message = StatusSessionRefused, "not performed: the Company refused Poppydesk's Session (Poppy spec 5.3). Tell the user; retrying will not help"
	case pe.Code == transport.CodeSessionEnded, pe.Code == transport.CodeVersionUnsupported:
		v.status, v.message = StatusSessionEnded, "not performed: the Company ended the Session again after Poppydesk started a new one (Poppy spec 5.5). Try again later"
	default:
		v.status, v.message = StatusCompanyError, fmt.Sprintf("not performed: the Company answered HTTP %d; its words are in the untrusted Company content", pe.Status)
	}
}

// dnsWhy is a DNS failure in a few words.
func dnsWhy(e *net.DNSError) string {
	switch {
	case e.IsNotFound:
		return "no such name"
	case e.IsTimeout:
		return "the lookup timed out"
	case e.IsTemporary:
		return "a temporary failure"
	}
	return "the lookup failed"
}

// tlsProblem names a TLS or certificate failure in err, or returns "".
func tlsProblem(err error) string {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var al tls.AlertError
	switch {
	case errors.As(err, &ua):
		return "its certificate is not signed by an authority Poppydesk trusts"
	case errors.As(err, &he):
		return "its certificate is for another name"
	case errors.As(err, &ci):
		return "its certificate is invalid or expired"
	case errors.As(err, &cv):
		return "its certificate could not be verified"
	case errors.As(err, &rh):
		return "the server did not answer with TLS"
	case errors.As(err, &al):
		return "the TLS handshake failed (" + al.Error() + ")"
	}
	return ""
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
