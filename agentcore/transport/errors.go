package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes of spec 7, 8.13, 3.3 and 3.4.
const (
	CodeInvalidToken           = "invalid_token"
	CodeInsufficientScope      = "insufficient_scope"
	CodeInvalidSession         = "invalid_session"
	CodeSessionEnded           = "session_ended"
	CodeVersionUnsupported     = "version_unsupported"
	CodeExtensionRequired      = "extension_required"
	CodeInvalidRequest         = "invalid_request"
	CodeConversationNotFound   = "conversation_not_found"
	CodeConversationClosed     = "conversation_closed"
	CodeDirectConversationOpen = "direct_conversation_open"
	CodeMessageIDConflict      = "message_id_conflict"
	CodeInvalidCursor          = "invalid_cursor"
	CodeCursorExpired          = "cursor_expired"
	// CodeRateLimited is set by the engine on HTTP 429 (spec 5.6), which has no error code.
	CodeRateLimited = "rate_limited"
)

// ProtocolError is an error response of a Company, typed as spec 7 and 8.13 describe. Company
// text (Description) is data for the developer, never instructions (spec 10.1).
type ProtocolError struct {
	Method, URL string // the request (URL redacted)
	Status      int
	// Code is the error code from the WWW-Authenticate challenge or the JSON body; "" for a 401
	// challenge without an error code (the request needs an access token, spec 7).
	Code        string
	Description string
	// Scopes are the scopes the request needs, from the challenge's scope attribute.
	Scopes []string
	// Extension is the extension an extension_required error names (spec 3.3).
	Extension string
	// ConversationID is the open Direct Conversation of direct_conversation_open (spec 8.13).
	ConversationID string
	// ResourceMetadata is the resource_metadata challenge attribute (RFC 9728 §5.1).
	ResourceMetadata string
	// RetryAfter is how long a 429 or 503 asked to wait (0 if none).
	RetryAfter time.Duration
	// Challenges are every WWW-Authenticate challenge received.
	Challenges []Challenge
	// Note is the engine's explanation of what it did (e.g. "renewed the Session once").
	Note string
}

func (e *ProtocolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: HTTP %d", e.Method, e.URL, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, " (Company says: %q)", e.Description)
	}
	switch {
	case e.NeedsScopes():
		fmt.Fprintf(&b, ": the request needs account access with scopes %q; sign in or refresh with them (spec 7, 5.4)", strings.Join(e.Scopes, " "))
	case e.Code == CodeInvalidSession:
		b.WriteString(": the Company rejected the Session header; a new Session won't fix it, fix the cause (expired delegation, wrong htu, refused client_id) (spec 5.3, 7)")
	case e.Code == CodeSessionEnded:
		b.WriteString(": the Session has ended (spec 5.5)")
	case e.Code == CodeVersionUnsupported:
		b.WriteString(": the Company does not serve a version compatible with Poppy-Version (spec 3.4)")
	case e.Code == CodeExtensionRequired:
		fmt.Fprintf(&b, ": the request must declare extension %q in Poppy-Extensions (spec 3.3)", e.Extension)
	case e.Code == CodeInvalidToken:
		b.WriteString(": the access token is expired, revoked or invalid (spec 7, 4.4)")
	case e.Status == http.StatusTooManyRequests:
		fmt.Fprintf(&b, ": rate limited, Retry-After %s (spec 5.6)", e.RetryAfter)
	}
	if e.Note != "" {
		b.WriteString("; " + e.Note)
	}
	return b.String()
}

// NeedsScopes reports whether the error asks for (more) account access: insufficient_scope, or a
// 401 challenge without an error code, which spec 7 says to handle as insufficient_scope.
func (e *ProtocolError) NeedsScopes() bool {
	return e.Code == CodeInsufficientScope || e.Status == http.StatusUnauthorized && e.Code == "" && len(e.Challenges) > 0
}

// IsCode reports whether err is a *ProtocolError with the given code.
func IsCode(err error, code string) bool {
	var pe *ProtocolError
	return errors.As(err, &pe) && pe.Code == code
}

// maxErrorBody bounds how much of an error response body is read.
const maxErrorBody = 64 << 10

// parseErrorResponse builds a *ProtocolError from an error response and its body (the first
// maxErrorBody bytes): the code, description, scopes, extension and resource_metadata from
// WWW-Authenticate first, then the JSON body; Retry-After of a 429 or 503.
func parseErrorResponse(method, redactedURL string, resp *http.Response, body []byte, now time.Time) *ProtocolError {
	pe := &ProtocolError{Method: method, URL: redactedURL, Status: resp.StatusCode}
	if vals := resp.Header.Values("WWW-Authenticate"); len(vals) > 0 {
		cs, _ := ParseChallenges(vals) // keep what parsed; a malformed tail is ignored
		pe.Challenges = cs
		for _, c := range cs {
			if code := c.Param("error"); code != "" && pe.Code == "" {
				pe.Code = code
				pe.Description = c.Param("error_description")
			}
			if s := c.Param("scope"); s != "" && pe.Scopes == nil {
				pe.Scopes = strings.Fields(s)
			}
			if x := c.Param("extension"); x != "" && pe.Extension == "" {
				pe.Extension = x
			}
			if m := c.Param("resource_metadata"); m != "" && pe.ResourceMetadata == "" {
				pe.ResourceMetadata = m
			}
		}
	}
	var jb struct {
		Error          string `json:"error"`
		Description    string `json:"error_description"`
		Extension      string `json:"extension"`
		ConversationID string `json:"conversation_id"`
		Scope          string `json:"scope"`
	}
	if len(body) > 0 && json.Unmarshal(body, &jb) == nil {
		if pe.Code == "" {
			pe.Code = jb.Error
			pe.Description = jb.Description
		}
		if pe.Extension == "" {
			pe.Extension = jb.Extension
		}
		pe.ConversationID = jb.ConversationID
		if pe.Scopes == nil && jb.Scope != "" {
			pe.Scopes = strings.Fields(jb.Scope)
		}
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		if pe.Code == "" {
			pe.Code = CodeRateLimited
		}
		pe.RetryAfter, _ = ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	case http.StatusServiceUnavailable:
		pe.RetryAfter, _ = ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
	return pe
}

// Refused reports whether the Company refused the request at its door, before handling it: at
// its Session, version, extension, token or rate checks (spec 3.3, 3.4, 5.3, 5.5, 5.6, 7) — any
// 401 or 429, a challenge in WWW-Authenticate, or one of those checks' error codes. Nothing a
// refused request asked for was performed. Other error answers are the API's own, about what
// the request asked (a 400 invalid_request, a 403 approval_required, a 404, a 5xx).
func (e *ProtocolError) Refused() bool {
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusTooManyRequests || len(e.Challenges) > 0 {
		return true
	}
	switch e.Code {
	case CodeInvalidSession, CodeSessionEnded, CodeVersionUnsupported, CodeExtensionRequired, CodeInvalidToken,
		CodeInsufficientScope, CodeUseDPoPNonce, CodeRateLimited:
		return true
	}
	return false
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
// ok is false when the value is missing or malformed.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// ErrRedirectRefused is matched (errors.Is) by every *RedirectError.
var ErrRedirectRefused = errors.New("transport: redirect refused")

// RedirectError reports a redirect answered to a request that carries (or would carry) the
// protocol's secrets. The engine never follows it (spec 3 "Redirects and addresses").
type RedirectError struct {
	Method, URL string
	Status      int
	Location    string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s %s answered HTTP %d redirecting to %q: not followed, because spec 3 forbids sending a token, Session JWT, assertion or credentials after a redirect; the Company must serve this endpoint at the URL it published", e.Method, e.URL, e.Status, e.Location)
}

// Is makes errors.Is(err, ErrRedirectRefused) true.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirectRefused }
