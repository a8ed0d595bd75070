package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// Signer adds the Session header (and whatever else the Session signs) to a request. The
// agentcore/session Session implements it. accessToken is "" for a signed-out request.
type Signer interface {
	SignRequest(ctx context.Context, req *http.Request, accessToken string) error
}

// SignerFunc adapts a function to Signer.
type SignerFunc func(ctx context.Context, req *http.Request, accessToken string) error

// SignRequest calls f.
func (f SignerFunc) SignRequest(ctx context.Context, req *http.Request, accessToken string) error {
	return f(ctx, req, accessToken)
}

// Hooks are what the layers above give the pipeline: the sign-in layer's tokens and proofs, and
// the engine's Sessions. Each is optional.
type Hooks struct {
	// Token gives the access token for a request that carries none (Request.AccessToken ""):
	// the account's token for the service u belongs to (spec 4.5), "" to send it signed out. An
	// error matching ErrSignedOut continues signed out, with the error as the reason (spec
	// 5.5); any other error stops the request before anything is sent (*NotSentError). Nil:
	// such requests go signed out.
	Token func(ctx context.Context, u *url.URL) (string, error)
	// Refresh is called once on invalid_token with the rejected token and returns a new access
	// token (spec 4.4). When it is nil or fails, the request is sent once more signed out
	// (spec 5.5 "continues signed out"), Response.SignedOut is set and the refresh's error is
	// the reason.
	Refresh func(ctx context.Context, rejected string, u *url.URL) (string, error)
	// RenewSession is called once on session_ended and returns the Signer of a new Session with
	// a new sid (spec 5.5). The request is then sent again, once. Nil: the error is returned.
	RenewSession func(ctx context.Context) (Signer, error)
	// Rediscover is called once on version_unsupported. It fetches poppy.json again without any
	// cache and chooses a version again (spec 3.4). If the chosen version differs from the one in
	// use, it returns the new version (and extensions) with the Signer of a new Session, and the
	// request is sent again, once. Nil: the error is returned.
	Rediscover func(ctx context.Context) (Rediscovery, error)
	// Authorize, when set, puts the access token on a signed-in attempt instead of
	// "Authorization: Bearer token": the sign-in layer sets "Bearer", or "DPoP" and a DPoP proof
	// for this method and URL with ath, for a DPoP-bound token (spec 4.5, RFC 9449 §7;
	// agentcore/oauth's Client.Authorize). It is called for every attempt (each proof is used
	// once), after Poppy-Version is set and before the Signer signs, with the Authorization and
	// DPoP headers removed. A signed-out attempt carries neither header and doesn't call it.
	Authorize func(ctx context.Context, req *http.Request, token string) error
	// OnResponse, when set, sees every response before it is handled, e.g. to keep a DPoP-Nonce
	// the resource sent for the next proof (RFC 9449 §9; oauth's Client.NoteNonce). It must not
	// read the body.
	OnResponse func(ctx context.Context, resp *http.Response)
}

// CodeUseDPoPNonce is the RFC 9449 §9 error of a resource that wants a nonce in DPoP proofs: a
// signed-in request that gets it with a DPoP-Nonce header is sent again once, so the Authorize
// hook can put the nonce in the new proof.
const CodeUseDPoPNonce = "use_dpop_nonce"

// Rediscovery is what Hooks.Rediscover found.
type Rediscovery struct {
	Version    string // the newly chosen protocol version ("major.minor")
	Extensions string // the Poppy-Extensions value for the new Session ("" for none)
	Signer     Signer // the new Session's signer (required when Version changed)
}

// SessionConfig configures a SessionClient: one Session at one Company.
type SessionConfig struct {
	Signer       Signer
	Destinations *Destinations
	Version      string // Poppy-Version, e.g. "0.4" (spec 3.4)
	Extensions   string // Poppy-Extensions value, e.g. `"operations";v="2"` ("" for none)
	Hooks        Hooks
}

// SessionClient is the one signed-request pipeline: it sends requests of one Session to one
// Company's Session destinations (spec 5.2, 5.6, 7), and every signed request of the engine
// passes through it — API calls, MCP (RoundTripper), conversations, feedback reports and the
// browser's authorize request. It never follows redirects (spec 3). Safe for concurrent use.
type SessionClient struct {
	t     *Transport
	dest  *Destinations
	hooks Hooks

	mu      sync.Mutex
	signer  Signer
	version string
	exts    string
	values  map[string][]string // headerValue's slices, by value
}

// headerValue returns a shared one-element header value slice for v.
func (c *SessionClient) headerValue(v string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	hv, ok := c.values[v]
	if !ok {
		if c.values == nil || len(c.values) > 16 {
			c.values = map[string][]string{}
		}
		hv = []string{v}
		c.values[v] = hv
	}
	return hv
}

// Session returns a SessionClient over t.
func (t *Transport) Session(cfg SessionConfig) (*SessionClient, error) {
	if cfg.Signer == nil {
		return nil, errors.New("transport: a SessionClient needs a Signer (every request to a Session destination carries the Session header, spec 5.2)")
	}
	if cfg.Version == "" {
		return nil, errors.New("transport: a SessionClient needs the chosen protocol version for Poppy-Version (spec 3.4)")
	}
	return &SessionClient{t: t, dest: cfg.Destinations, hooks: cfg.Hooks, signer: cfg.Signer, version: cfg.Version, exts: cfg.Extensions}, nil
}

// Destinations are the Session destinations this client signs for (spec 5.2).
func (c *SessionClient) Destinations() *Destinations { return c.dest }

// Transport is the transport the client sends through.
func (c *SessionClient) Transport() *Transport { return c.t }

// Request is one request to a Session destination. Body is kept so the request can be re-sent.
type Request struct {
	Method      string
	URL         string
	Header      http.Header // extra headers (Content-Type, Idempotency-Key, ...)
	Body        []byte
	AccessToken string // "" for the Token hook's token, or signed out without one
	// Prove, when set, is asked about a URL that the Session destinations neither allow nor
	// refuse: whether it is a request URL of an OpenAPI description the Company serves, read
	// this run (spec 5.2, 7; agentcore/apis). What the destinations refuse stays refused.
	Prove func(ctx context.Context, u *url.URL) bool
	// Stream bounds only the wait for the response headers by Config.Timeout; the body then
	// streams for as long as ctx allows (an MCP server's SSE answer, bounded by its call).
	// Otherwise the whole exchange, body included, ends within Config.Timeout.
	Stream bool
}

// Response is a response that arrived. The caller closes Body.
type Response struct {
	*http.Response
	// AccessToken is the token the last attempt used ("" when it went signed out).
	AccessToken string
	// SignedOut is true when the request went signed out because the account's sign-in no
	// longer works: the Token hook said so, or a rejected token could not be refreshed.
	SignedOut bool
	// Renewed is true when the request succeeded in a new Session (session_ended or
	// version_unsupported handling); later requests of this client use that Session too.
	Renewed bool
	// SignedOutReason is why the request went signed out (SignedOut): the error of
	// Hooks.Token or Hooks.Refresh, such as a refresh token the Company no longer accepts
	// (spec 5.5).
	SignedOutReason error
}

// ErrSignedOut is matched by a Token hook's error when the account's sign-in no longer works (the
// Company refused its refresh token): the request then continues signed out (spec 5.5).
var ErrSignedOut = errors.New("transport: the account's sign-in is no longer accepted")

// ErrNotSent is matched (errors.Is) by every *NotSentError.
var ErrNotSent = errors.New("transport: the request was not sent")

// NotSentError is a request Poppydesk did not send, for a reason of its own: a URL its rules
// refuse (not HTTPS, not a Session destination, a token in the query), a token it could not
// get, a Session header it could not sign. Nothing of this attempt reached the Company, and an
// earlier attempt of the same request did only if the Company refused it (the pipeline sends
// again only after a refusal).
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() }

// Unwrap gives the reason.
func (e *NotSentError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotSent) true.
func (e *NotSentError) Is(target error) bool { return target == ErrNotSent }

// SignedOutError is the error of a request that went signed out (spec 5.5) and then failed:
// Reason is why it went signed out (a Token or Refresh hook's error, such as agentcore/engine's
// *SignInRequiredError), Err the error of the signed-out attempt. errors.Is and errors.As see
// both.
type SignedOutError struct{ Reason, Err error }

func (e *SignedOutError) Error() string {
	return e.Reason.Error() + "; the request sent signed out failed: " + e.Err.Error()
}

// Unwrap gives the reason and the signed-out attempt's error.
func (e *SignedOutError) Unwrap() []error { return []error{e.Reason, e.Err} }

// Do sends req through the pipeline (Send). An error status comes back as the error alone (a
// *ProtocolError, its body consumed), so the caller has nothing to close.
func (c *SessionClient) Do(ctx context.Context, req *Request) (*Response, error) {
	resp, err := c.Send(ctx, req)
	if err != nil {
		if resp != nil {
			drain(resp.Response)
		}
		return nil, err
	}
	return resp, nil
}

// Send sends req, signed, through the pipeline's steps, composed here in the order they run:
//
//  1. destination: the URL is HTTPS, one of the Session destinations (or proven by
//     Request.Prove), with no token in its query (spec 3, 5.2, 5.6); else *NotSentError with
//     the *DestinationError, *SchemeError or *PathError.
//  2. token: the account's token for the URL's service from Hooks.Token (spec 4.5).
//  3. build: Poppy-Version and Poppy-Extensions (3.4), the token as Bearer or as DPoP with a
//     fresh proof (Hooks.Authorize, RFC 9449), then a fresh Session JWT whose ath covers it (5.2).
//  4. exchange: one HTTP exchange through the transport's guard, bounded by Config.Timeout,
//     never followed when redirected (*RedirectError), never replayed by net/http.
//  5. answer: what the Company's answer means for another attempt, one policy per condition
//     (answers.go, the table in docs/DESIGN.md): 429 waits, use_dpop_nonce, invalid_token,
//     session_ended, version_unsupported; anything else is the caller's.
//
// A success (2xx, 304) is returned with its body open. A final error status is returned as a
// *ProtocolError TOGETHER with the Response, whose Body is the whole answer (the caller closes
// it): an API's 403 approval_required carries the operation there. A request that went signed
// out and then failed gets a *SignedOutError around its error.
func (c *SessionClient) Send(ctx context.Context, req *Request) (*Response, error) {
	u, err := c.destination(ctx, req)
	if err != nil {
		return nil, &NotSentError{Err: err}
	}
	a := &attempt{req: req, u: u, token: req.AccessToken}
	if err := c.token(ctx, a); err != nil {
		return nil, &NotSentError{Err: err}
	}
	for {
		hr, cancel, err := c.build(ctx, a)
		if err != nil {
			return nil, a.failed(&NotSentError{Err: err})
		}
		resp, err := c.exchange(ctx, hr, cancel, a)
		if err != nil {
			return nil, a.failed(err)
		}
		ans, err := c.answer(ctx, a, resp)
		switch {
		case err != nil:
			return ans, a.failed(err)
		case ans != nil:
			return ans, nil
		}
	}
}

// attempt is one request on its way through the pipeline: what Send decided so far.
type attempt struct {
	req   *Request
	u     *url.URL
	token string
	// Which answers have been handled once already (answers.go), and how many 429s waited.
	nonceRetried, refreshed, renewed, rediscovered bool
	waited429                                      int
	signedOut                                      error // why the request went signed out
}

// failed is err as the caller gets it: around a *SignedOutError when the request went signed out.
func (a *attempt) failed(err error) error {
	if a.signedOut != nil {
		return &SignedOutError{Reason: a.signedOut, Err: err}
	}
	return err
}

// destination is step 1: the URL may carry the Session header (spec 3, 5.2, 5.6).
func (c *SessionClient) destination(ctx context.Context, req *Request) (*url.URL, error) {
	u, err := CheckURL(req.URL)
	if err != nil {
		return nil, err
	}
	if !c.dest.allowsChecked(u) && (req.Prove == nil || c.dest.Refuses(u) || !req.Prove(ctx, u)) {
		return nil, &DestinationError{URL: redact.URL(u)}
	}
	if u.RawQuery != "" && u.Query().Has("access_token") {
		return nil, errors.New("transport: refused a URL with access_token in its query: spec 5.6 forbids tokens in URLs")
	}
	return u, nil
}

// token is step 2: the account's token for the URL's service (spec 4.5), or signed out.
func (c *SessionClient) token(ctx context.Context, a *attempt) error {
	if a.token != "" || c.hooks.Token == nil {
		return nil
	}
	tok, err := c.hooks.Token(ctx, a.u)
	switch {
	case errors.Is(err, ErrSignedOut):
		a.signedOut = err // spec 5.5: continue signed out
	case err != nil:
		return fmt.Errorf("transport: getting the access token for %s %s failed: %w", methodOf(a.req.Method), redact.URL(a.u), err)
	}
	a.token = tok
	return nil
}
