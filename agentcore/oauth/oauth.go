package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Grant types (RFC 6749, RFC 8628).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
	// AssertionType is the client_assertion_type of private_key_jwt (RFC 7523 §2.2, spec 4.1).
	AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// Identity is the Personal Agent's client identity (spec 4.1). *identity.Agent implements it.
type Identity interface {
	ClientID() string
	// ClientAssertion returns a fresh client assertion addressed to issuer (aud = issuer, 10.4).
	ClientAssertion(ctx context.Context, issuer string) (string, error)
	Metadata() identity.Metadata
}

// Config configures a Client.
type Config struct {
	Transport *transport.Transport // required: the engine's safe HTTPS client
	Identity  Identity             // required
	Secrets   store.Secrets        // required: the vault (OS keyring in production)
	// Now is the clock (nil: time.Now). Sleep waits d or until ctx ends (nil: a timer); tests
	// inject both to drive Device Sign-In polling.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger gets no secret values (nil: slog.Default()).
	Logger *slog.Logger
	// DirectTimeout bounds a Direct Sign-In (default 10 minutes).
	DirectTimeout time.Duration
}

// Client is the OAuth client of one Personal Agent, for every Company. Safe for concurrent use.
type Client struct {
	tr      *transport.Transport
	id      Identity
	secrets store.Secrets
	now     func() time.Time
	sleep   func(ctx context.Context, d time.Duration) error
	log     *slog.Logger
	timeout time.Duration

	mu        sync.Mutex
	locks     map[[2]string]*sync.Mutex  // per (company, account): refreshes and sign-ins
	nonces    map[string]string          // DPoP-Nonce per server origin
	resources map[string]string          // service URL -> resource ("" = default token)
	signers   map[[2]string]cachedSigner // parsed DPoP keys per (company, account)
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Transport == nil || cfg.Identity == nil || cfg.Secrets == nil {
		return nil, errors.New("oauth: Config needs Transport, Identity and Secrets")
	}
	c := &Client{tr: cfg.Transport, id: cfg.Identity, secrets: cfg.Secrets, now: cfg.Now, sleep: cfg.Sleep, log: cfg.Logger,
		timeout: cfg.DirectTimeout, locks: map[[2]string]*sync.Mutex{}, nonces: map[string]string{}, resources: map[string]string{},
		signers: map[[2]string]cachedSigner{}}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = cfg.Transport.Sleep
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.timeout <= 0 {
		c.timeout = 10 * time.Minute
	}
	return c, nil
}

func (c *Client) lock(company, account string) func() {
	c.mu.Lock()
	l, ok := c.locks[[2]string{company, account}]
	if !ok {
		l = &sync.Mutex{}
		c.locks[[2]string{company, account}] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Sentinel errors (errors.Is).
var (
	// ErrDeclined: the User declined, or approved no scope (spec 4.7), or denied the device code.
	ErrDeclined = errors.New("the sign-in was declined")
	// ErrSignedOut: the Company no longer accepts the refresh token (invalid_grant); the tokens
	// were removed and the account continues signed out (spec 5.5).
	ErrSignedOut = errors.New("signed out: the Company no longer accepts this account's refresh token")
	// ErrNotSignedIn: no refresh token is held for the account.
	ErrNotSignedIn = errors.New("not signed in to this account")
	// ErrNotOffered: the Company does not offer this sign-in type to Personal Agents (spec 3.2, 4).
	ErrNotOffered = errors.New("the Company does not offer this sign-in type")
	// ErrCancelled: the sign-in was cancelled in Poppydesk.
	ErrCancelled = errors.New("the sign-in was cancelled")
	// ErrTimedOut: the sign-in did not finish in time (Direct), or the code expired (Device).
	ErrTimedOut = errors.New("the sign-in did not finish in time")
)

// Error is a failed OAuth step. It never holds a token, code, verifier or assertion: Code is the
// OAuth error code (or the engine's check name) and Description the Company's own words, which
// are data for the developer, never instructions (spec 10.1).
type Error struct {
	Step        string // "token request", "authorization response", ...
	Code        string
	Description string
	Status      int
	Problem     string // what failed, in the engine's words, with the spec section
	wrapped     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Step)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, ": %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, " (Company says: %q)", e.Description)
	}
	if e.Problem != "" {
		b.WriteString(": " + e.Problem)
	}
	return b.String()
}

// Unwrap returns the sentinel this error stands for, if any.
func (e *Error) Unwrap() error { return e.wrapped }

// IsCode reports whether err is an *Error with the given OAuth error code.
func IsCode(err error, code string) bool {
	var oe *Error
	return errors.As(err, &oe) && oe.Code == code
}

func companyErr(step, problem string) *Error { return &Error{Step: step, Problem: problem} }

// asMetadata returns the Company's checked authorization server metadata, or an error when
// the Company has no issuer or turned sign-in off (spec 3.2).
// prepareSignIn checks what Direct and Device Sign-In both need before they start: the Company
// offers this sign-in type to Personal Agents (offered, and not auth.disabled), an account is
// named, and the scopes to request are every scope still needed (spec 4.7).
func (c *Client) prepareSignIn(ctx context.Context, req SignInRequest, kind string, offered func(*discovery.Company, *discovery.ASMetadata) bool) (*signInStart, error) {
	as, err := asMetadata(req.Company)
	if err != nil {
		return nil, err
	}
	co := req.Company
	if co.SignIn.Disabled || !offered(co, as) {
		return nil, fmt.Errorf("%w: %s does not offer %s to Personal Agents", ErrNotOffered, co.Organization.Domain, kind)
	}
	if req.Account == "" {
		return nil, errors.New("name the account to sign in to (for example \"personal\"); each account keeps its own tokens (spec 5.4)")
	}
	held, err := c.Held(ctx, co.Identifier, req.Account)
	if err != nil {
		return nil, err
	}
	scopes := Plan(req.Scopes, held)
	if err := validScopes(scopes); err != nil {
		return nil, err
	}
	return &signInStart{co: co, as: as, scopes: scopes, held: held}, nil
}

// signInStart is what prepareSignIn checked: the Company, its AS metadata, the scopes to request
// and the scopes the account already holds.
type signInStart struct {
	co     *discovery.Company
	as     *discovery.ASMetadata
	scopes []string
	held   []string
}

func asMetadata(co *discovery.Company) (*discovery.ASMetadata, error) {
	if co == nil {
		return nil, errors.New("oauth: no Company given")
	}
	if co.Issuer == "" || co.AuthorizationServer == nil {
		return nil, fmt.Errorf("%w: %s has no OAuth issuer, so it offers only signed-out Sessions (spec 3.2)", ErrNotOffered, co.Organization.Domain)
	}
	return co.AuthorizationServer, nil
}

// tokenResponse is a successful token endpoint response (RFC 6749 §5.1, spec 4.7).
type tokenResponse struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	ExpiresIn    json.Number     `json:"expires_in"`
	RefreshToken string          `json:"refresh_token"`
	Scope        *string         `json:"scope"`
	Extra        json.RawMessage `json:"-"`
}

// maxBody bounds what is read of an OAuth response.
const maxBody = 64 << 10

// postForm sends an authenticated form POST (client assertion addressed to the issuer, spec
// 4.1, 10.4) to endpoint through the no-redirect client (spec 3), with a DPoP proof when key
// is set (RFC 9449 §4), retried once with a nonce on use_dpop_nonce (RFC 9449 §8). It returns
// the body of a 2xx response; any other answer becomes an *Error.
func (c *Client) postForm(ctx context.Context, issuer, endpoint, step string, form url.Values, key *dpopSigner) ([]byte, error) {
	u, err := transport.CheckURL(endpoint)
	if err != nil {
		return nil, &Error{Step: step, Problem: fmt.Sprintf("the endpoint URL is unusable: %v (spec 3)", err)}
	}
	for attempt := 0; ; attempt++ {
		assertion, err := c.id.ClientAssertion(ctx, issuer)
		if err != nil {
			return nil, fmt.Errorf("%s: making the client assertion failed: %w", step, err)
		}
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set("client_id", c.id.ClientID())
		f.Set("client_assertion_type", AssertionType)
		f.Set("client_assertion", assertion)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(f.Encode()))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if key != nil {
			proof, err := c.proof(key, http.MethodPost, u, "", c.nonce(u))
			if err != nil {
				return nil, err
			}
			req.Header.Set("DPoP", proof)
		}
		resp, err := c.tr.NoRedirectClient().Do(req)
		var te *transport.TimeoutError
		if errors.As(err, &te) {
			// The document client's deadline (transport.Config.DocumentTimeout): the Company's
			// endpoint hangs; a sign-in, refresh or revocation never waits longer.
			return nil, &Error{Step: step, Problem: redact.String(te.Error()), wrapped: te}
		}
		if err != nil {
			return nil, &Error{Step: step, Problem: fmt.Sprintf("the request to %s failed: %s; check the connection and try again", redact.URL(u), redact.String(err.Error()))}
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if errors.As(err, &te) {
			return nil, &Error{Step: step, Problem: redact.String(te.Error()), wrapped: te}
		}
		if err != nil {
			return nil, &Error{Step: step, Problem: fmt.Sprintf("reading the answer of %s failed: %s; check the connection and try again", redact.URL(u), redact.String(err.Error()))}
		}
		if n := resp.Header.Get("DPoP-Nonce"); n != "" && key != nil {
			c.setNonce(u, n)
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return nil, &transport.RedirectError{Method: http.MethodPost, URL: redact.URL(u), Status: resp.StatusCode, Location: resp.Header.Get("Location")}
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return body, nil
		}
		oe := &Error{Step: step, Status: resp.StatusCode}
		var eb struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(body, &eb) == nil {
			oe.Code, oe.Description = eb.Error, eb.Description
		}
		if oe.Code == "" {
			oe.Problem = "the Company answered with an error that is not an OAuth error response (RFC 6749 §5.2)"
			return nil, oe
		}
		if oe.Code == "use_dpop_nonce" && key != nil && attempt == 0 && resp.Header.Get("DPoP-Nonce") != "" {
			continue // RFC 9449 §8: send the request again with the nonce, once
		}
		oe.Problem = explain(oe.Code)
		return nil, oe
	}
}

// explain says in words what an OAuth error code means for the User or developer.
func explain(code string) string {
	switch code {
	case "invalid_client":
		return "the Company did not accept Poppydesk's client assertion or client_id (spec 4.1)"
	case "unauthorized_client":
		return "the Company does not allow this Personal Agent this sign-in type; continue signed out (spec 4.1)"
	case "invalid_grant":
		return "the code or refresh token is no longer valid; sign in again (spec 4.4, 5.5)"
	case "invalid_scope":
		return "the Company rejected the requested scopes (spec 4.7)"
	case "invalid_target":
		return "the Company does not serve the requested resource (spec 4.5, RFC 8707)"
	case "access_denied":
		return "the sign-in was declined"
	case "expired_token":
		return "the code expired before it was approved; start again (RFC 8628 §3.5)"
	case "use_dpop_nonce":
		return "the Company asked for a DPoP nonce twice (RFC 9449 §8)"
	case "invalid_dpop_proof":
		return "the Company rejected the DPoP proof (RFC 9449 §5)"
	}
	return "the Company refused the request"
}

// parseToken reads and checks a token response (RFC 6749 §5.1, spec 4.7, RFC 9449 §5). requested
// is the scope set the request asked for; needRefresh says a refresh token is required (every
// sign-in returns one, spec 4.4, 4.8). dpop says a proof was sent.
func parseToken(step string, body []byte, requested []string, needRefresh, dpop bool) (*tokenResponse, []string, error) {
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		return nil, nil, companyErr(step, fmt.Sprintf("the token response is not JSON (RFC 6749 §5.1): %v", redact.String(err.Error())))
	}
	if tr.AccessToken == "" {
		return nil, nil, companyErr(step, "the token response has no access_token (RFC 6749 §5.1)")
	}
	switch {
	case strings.EqualFold(tr.TokenType, "Bearer"):
		tr.TokenType = "Bearer"
	case strings.EqualFold(tr.TokenType, "DPoP") && dpop:
		tr.TokenType = "DPoP"
	default:
		return nil, nil, companyErr(step, fmt.Sprintf("token_type %q is not Bearer, or DPoP for a request that carried a proof (spec 4.5, RFC 9449 §5)", tr.TokenType))
	}
	if needRefresh && tr.RefreshToken == "" {
		return nil, nil, companyErr(step, "sign-in returned no refresh token; every sign-in must (spec 4.4, 4.8)")
	}
	granted, err := CheckGranted(requested, tr.Scope)
	if err != nil && needRefresh && errors.Is(err, errNoScope) {
		// spec 4.7: a sign-in that grants no scope ends as a decline, exactly as one the User
		// declined (the same error, window words and loopback page).
		return &tr, nil, &Error{Step: step, Problem: "no scope was approved, so the sign-in ended as a decline (spec 4.7); the tokens were not stored", wrapped: ErrDeclined}
	}
	if err != nil {
		return nil, nil, &Error{Step: step, Problem: err.Error()}
	}
	return &tr, granted, nil
}

func (tr *tokenResponse) expiry(now time.Time) time.Time {
	n, err := tr.ExpiresIn.Int64()
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(n) * time.Second)
}
