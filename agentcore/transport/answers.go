package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// answer is step 5 of Send: what the Company's answer to one attempt means. A success is the
// caller's (a Response, nil); a redirect is refused (spec 3); an error status is typed
// (*ProtocolError) and then either sent again after the one policy for its condition (nil, nil)
// or given to the caller with the whole answer readable (a Response and the error).
//
// The policies, one per condition (docs/DESIGN.md, "The signed request"):
//
//	429                        wait Retry-After (1 s without one), at most Config.Max429Retries
//	                           times and never longer than Config.MaxRetryAfter; then stop (spec 5.6)
//	use_dpop_nonce + DPoP-Nonce send again once, the nonce in the new proof (RFC 9449 §9)
//	invalid_token               refresh once (Hooks.Refresh) and send again; when that fails,
//	                           send again once signed out and say why (spec 4.4, 5.5, 7)
//	session_ended               a new Session (new sid) once and send again; stop when the new
//	                           Session is ended too (spec 5.5)
//	version_unsupported         poppy.json again without cache; a new Session and send again once
//	                           only when the chosen version changed (spec 3.4)
//	anything else               the caller's: invalid_session, 401 and insufficient_scope
//	                           challenges, extension_required, 8.13 errors, the API's own errors
func (c *SessionClient) answer(ctx context.Context, a *attempt, resp *http.Response) (*Response, error) {
	if c.hooks.OnResponse != nil {
		c.hooks.OnResponse(ctx, resp)
	}
	switch {
	case resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified:
		return a.response(resp), nil
	case resp.StatusCode < 400:
		loc := resp.Header.Get("Location")
		drain(resp)
		return nil, &RedirectError{Method: methodOf(a.req.Method), URL: redact.URL(a.u), Status: resp.StatusCode, Location: loc}
	}
	head, pe := readErrorResponse(methodOf(a.req.Method), redact.URL(a.u), resp, c.t.now())
	if !hasPolicy(resp, pe) {
		return a.response(resp), pe
	}
	// The exchange ends (and is reported) before its policy acts; the caller reads what was read.
	drain(resp)
	if c.again(ctx, a, resp, pe) {
		return nil, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(head))
	return a.response(resp), pe
}

// hasPolicy reports whether the answer's condition has a policy that may send the request again.
func hasPolicy(resp *http.Response, pe *ProtocolError) bool {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return true
	case pe.Code == CodeUseDPoPNonce, pe.Code == CodeInvalidToken, pe.Code == CodeSessionEnded, pe.Code == CodeVersionUnsupported:
		return true
	}
	return false
}

// response is the Response of the attempt's answer.
func (a *attempt) response(resp *http.Response) *Response {
	return &Response{Response: resp, AccessToken: a.token, SignedOut: a.signedOut != nil, SignedOutReason: a.signedOut,
		Renewed: a.renewed || a.rediscovered}
}

// again applies the policy of the error's condition and reports whether to send again.
func (c *SessionClient) again(ctx context.Context, a *attempt, resp *http.Response, pe *ProtocolError) bool {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return c.waitRateLimit(ctx, a, resp, pe)
	case pe.Code == CodeUseDPoPNonce && a.token != "" && !a.nonceRetried && resp.Header.Get("DPoP-Nonce") != "":
		a.nonceRetried = true // RFC 9449 §9: once, with the nonce in the new proof
		return true
	case pe.Code == CodeInvalidToken && a.token != "" && !a.refreshed:
		c.refresh(ctx, a)
		return true
	case pe.Code == CodeSessionEnded:
		return c.renew(ctx, a, pe)
	case pe.Code == CodeVersionUnsupported:
		return c.rediscover(ctx, a, pe)
	}
	return false
}

// waitRateLimit is the 429 policy (spec 5.6): the Company's Retry-After, within the bounds.
func (c *SessionClient) waitRateLimit(ctx context.Context, a *attempt, resp *http.Response, pe *ProtocolError) bool {
	wait := pe.RetryAfter
	if _, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), c.t.now()); !ok {
		wait = time.Second // no usable Retry-After: still back off
	}
	switch {
	case a.waited429 >= c.t.cfg.Max429Retries:
		pe.Note = fmt.Sprintf("gave up after %d rate-limited attempts", a.waited429+1)
		return false
	case wait > c.t.cfg.MaxRetryAfter:
		pe.Note = fmt.Sprintf("Retry-After exceeds the engine's limit of %s; not waiting", c.t.cfg.MaxRetryAfter)
		return false
	}
	a.waited429++
	if err := c.t.sleep(ctx, wait); err != nil {
		pe.Note = "stopped waiting: " + err.Error()
		return false
	}
	return true
}

// errNoRefresh is why a request went signed out when its token was rejected and nothing could
// refresh it.
var errNoRefresh = errors.New("the Company rejected the access token (invalid_token) and there is no way to refresh it")

// refresh is the invalid_token policy (spec 4.4, 5.5, 7): a new token once, else signed out.
func (c *SessionClient) refresh(ctx context.Context, a *attempt) {
	a.refreshed = true
	reason := errNoRefresh
	if c.hooks.Refresh != nil {
		nt, err := c.hooks.Refresh(ctx, a.token, a.u)
		if err == nil && nt != "" {
			a.token = nt
			return
		}
		if err != nil {
			reason = err
		}
	}
	a.token, a.signedOut = "", reason // continue signed out (spec 5.5)
}

// renew is the session_ended policy (spec 5.5): a new Session once.
func (c *SessionClient) renew(ctx context.Context, a *attempt, pe *ProtocolError) bool {
	if a.renewed || c.hooks.RenewSession == nil {
		if a.renewed {
			pe.Note = "the new Session was ended too, so the request was not sent again (spec 5.5)"
		}
		return false
	}
	a.renewed = true
	ns, err := c.hooks.RenewSession(ctx)
	if err != nil || ns == nil {
		pe.Note = fmt.Sprintf("starting a new Session failed: %v", err)
		return false
	}
	c.mu.Lock()
	c.signer = ns
	c.mu.Unlock()
	return true
}

// rediscover is the version_unsupported policy (spec 3.4): choose again from a fresh poppy.json;
// a new Session only for another version.
func (c *SessionClient) rediscover(ctx context.Context, a *attempt, pe *ProtocolError) bool {
	if a.rediscovered || c.hooks.Rediscover == nil {
		if a.rediscovered {
			pe.Note = "the Company refused the newly chosen version too (spec 3.4)"
		}
		return false
	}
	a.rediscovered = true
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	rd, err := c.hooks.Rediscover(ctx)
	switch {
	case err != nil:
		pe.Note = fmt.Sprintf("fetching poppy.json again failed: %v", err)
		return false
	case rd.Version == version || rd.Signer == nil:
		pe.Note = fmt.Sprintf("poppy.json fetched again still chooses version %s, so the request was not sent again (spec 3.4)", version)
		return false
	}
	c.mu.Lock()
	c.signer, c.version, c.exts = rd.Signer, rd.Version, rd.Extensions
	c.mu.Unlock()
	return true
}

// readErrorResponse types an error answer as spec 7 and 8.13 do, from its first maxErrorBody
// bytes (head), and leaves the whole answer readable in resp.Body for the caller.
func readErrorResponse(method, redactedURL string, resp *http.Response, now time.Time) ([]byte, *ProtocolError) {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = &readBody{Reader: io.MultiReader(bytes.NewReader(head), resp.Body), Closer: resp.Body}
	return head, parseErrorResponse(method, redactedURL, resp, head, now)
}

type readBody struct {
	io.Reader
	io.Closer
}
