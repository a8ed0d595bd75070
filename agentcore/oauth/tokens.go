package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Credential is an access token for one service, for engine code only (spec 10.2): the token
// itself is unexported, so a Credential marshalled or printed by mistake shows no secret.
type Credential struct {
	TokenType string   // "Bearer" or "DPoP"
	Resource  string   // "" for the default token (https://{organization.domain})
	Scopes    []string // scopes of the token
	ExpiresAt time.Time

	accessToken string
}

// Token returns the access token, for the engine's transport only (never for the window or model).
func (c Credential) Token() string { return c.accessToken }

// AccountStatus is what the window may show about an account: no token.
type AccountStatus struct {
	Company  string   `json:"company"`
	Account  string   `json:"account"`
	SignedIn bool     `json:"signed_in"`
	Scopes   []string `json:"scopes,omitempty"`
	// Resources are the services with their own token (spec 4.5).
	Resources []string `json:"resources,omitempty"`
}

// expirySkew refreshes an access token this long before it expires.
const expirySkew = 30 * time.Second

func findToken(b *store.CompanyBundle, resource string) *store.Token {
	for i := range b.Tokens {
		if b.Tokens[i].Resource == resource {
			return &b.Tokens[i]
		}
	}
	return nil
}

func setToken(b *store.CompanyBundle, t store.Token) {
	if old := findToken(b, t.Resource); old != nil {
		*old = t
		return
	}
	b.Tokens = append(b.Tokens, t)
}

// Status reports whether account is signed in at the Company and with which scopes.
func (c *Client) Status(ctx context.Context, company, account string) (AccountStatus, error) {
	st := AccountStatus{Company: company, Account: account}
	b, err := c.secrets.LoadCompany(ctx, company, account)
	if errors.Is(err, store.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading the account from the secret store failed: %w", err)
	}
	if t := findToken(b, ""); t != nil && t.RefreshToken != "" {
		st.SignedIn, st.Scopes = true, append([]string(nil), t.Scopes...)
	}
	for _, t := range b.Tokens {
		if t.Resource != "" {
			st.Resources = append(st.Resources, t.Resource)
		}
	}
	return st, nil
}

// Held returns the scopes the account's refresh token holds (nil when signed out).
func (c *Client) Held(ctx context.Context, company, account string) ([]string, error) {
	st, err := c.Status(ctx, company, account)
	return st.Scopes, err
}

// Accounts lists the signed-in accounts at company (an account holds a refresh token), in label
// order. An account signed out keeps its keyring bundle (its pairwise User ID, spec 5.1), so a
// bundle alone does not make an account signed in. The window and the model both ask this.
func (c *Client) Accounts(ctx context.Context, company string) ([]AccountStatus, error) {
	all, err := c.SignedIn(ctx)
	if err != nil {
		return nil, err
	}
	return all[company], nil
}

// SignedIn lists the signed-in accounts of every Company, by Company identifier, each list in
// label order: one listing of the keyring, then each account's status.
func (c *Client) SignedIn(ctx context.Context) (map[string][]AccountStatus, error) {
	pairs, err := c.secrets.Companies(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]AccountStatus{}
	for _, p := range pairs {
		if p[1] == "" {
			continue
		}
		st, err := c.Status(ctx, p[0], p[1])
		if err != nil {
			return nil, err
		}
		if st.SignedIn {
			out[p[0]] = append(out[p[0]], st)
		}
	}
	for _, l := range out {
		slices.SortFunc(l, func(a, b AccountStatus) int { return strings.Compare(a.Account, b.Account) })
	}
	return out, nil
}

// storeSignIn keeps the tokens of a new sign-in, replacing the account's tokens in one atomic
// update (spec 4.7: the new refresh token replaces the old one; resource tokens came from the
// old one and are requested again when needed). It returns the replaced refresh token.
func (c *Client) storeSignIn(ctx context.Context, co *discovery.Company, account string, tr *tokenResponse, granted []string) (string, error) {
	var replaced string
	now := c.now()
	_, err := c.secrets.UpdateCompany(ctx, co.Identifier, account, func(b *store.CompanyBundle) error {
		if old := findToken(b, ""); old != nil && old.RefreshToken != tr.RefreshToken {
			replaced = old.RefreshToken
		}
		b.Tokens = []store.Token{{AccessToken: tr.AccessToken, TokenType: tr.TokenType, RefreshToken: tr.RefreshToken,
			Scopes: granted, ExpiresAt: tr.expiry(now)}}
		b.AccountLabel = account
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("storing the tokens in the secret store failed: %w; the sign-in must be repeated", err)
	}
	return replaced, nil
}

// signOutLocally removes every token of the account (spec 5.5: it continues signed out).
func (c *Client) signOutLocally(ctx context.Context, company, account string) error {
	_, err := c.secrets.UpdateCompany(ctx, company, account, func(b *store.CompanyBundle) error {
		b.Tokens = nil
		return nil
	})
	return err
}

// Refresh gets a new access token for resource ("" for the default token) with the account's
// refresh token and the client assertion (spec 4.4). A rotated refresh token replaces the old
// one in the same atomic store update. invalid_grant removes the account's tokens and returns an
// error matching ErrSignedOut (spec 5.5).
func (c *Client) Refresh(ctx context.Context, co *discovery.Company, account, resource string) (Credential, error) {
	unlock := c.lock(co.Identifier, account)
	defer unlock()
	return c.refreshLocked(ctx, co, account, resource)
}

func (c *Client) refreshLocked(ctx context.Context, co *discovery.Company, account, resource string) (Credential, error) {
	as, err := asMetadata(co)
	if err != nil {
		return Credential{}, err
	}
	b, err := c.secrets.LoadCompany(ctx, co.Identifier, account)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Credential{}, fmt.Errorf("reading the account from the secret store failed: %w", err)
	}
	var def *store.Token
	if b != nil {
		def = findToken(b, "")
	}
	if def == nil || def.RefreshToken == "" {
		return Credential{}, fmt.Errorf("%w at %s (account %q): sign in first (spec 5.4)", ErrNotSignedIn, co.Organization.Domain, account)
	}
	key, err := c.dpopKey(ctx, co, account)
	if err != nil {
		return Credential{}, err
	}
	form := url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {def.RefreshToken}}
	if resource != "" {
		form.Set("resource", resource)
	}
	body, err := c.postForm(ctx, co.Issuer, as.TokenEndpoint, "refresh at the token endpoint", form, key)
	if err != nil {
		if IsCode(err, "invalid_grant") {
			if derr := c.signOutLocally(ctx, co.Identifier, account); derr != nil {
				return Credential{}, fmt.Errorf("%w; removing the tokens also failed: %v", err, derr)
			}
			var oe *Error
			errors.As(err, &oe)
			oe.wrapped = ErrSignedOut
			oe.Problem = fmt.Sprintf("the Company no longer accepts the refresh token (revoked, expired or disconnected in the account settings); Poppydesk removed the tokens and continues signed out. Sign in again if you want account access (spec 5.5)")
			return Credential{}, oe
		}
		return Credential{}, err
	}
	tr, granted, err := parseToken("refresh at the token endpoint", body, def.Scopes, false, key != nil)
	if err != nil {
		return Credential{}, err
	}
	now := c.now()
	cred := Credential{TokenType: tr.TokenType, Resource: resource, Scopes: granted, ExpiresAt: tr.expiry(now), accessToken: tr.AccessToken}
	_, err = c.secrets.UpdateCompany(ctx, co.Identifier, account, func(b *store.CompanyBundle) error {
		d := findToken(b, "")
		if d == nil || d.RefreshToken != def.RefreshToken {
			return errors.New("the account's refresh token changed during the refresh")
		}
		if tr.RefreshToken != "" {
			d.RefreshToken = tr.RefreshToken // rotation (RFC 6749 §6): use the new one from now on
		}
		if resource == "" {
			d.AccessToken, d.TokenType, d.ExpiresAt, d.Scopes = tr.AccessToken, tr.TokenType, cred.ExpiresAt, granted
			return nil
		}
		setToken(b, store.Token{Resource: resource, AccessToken: tr.AccessToken, TokenType: tr.TokenType, Scopes: granted, ExpiresAt: cred.ExpiresAt})
		return nil
	})
	if err != nil {
		return Credential{}, fmt.Errorf("storing the refreshed tokens failed: %w", err)
	}
	return cred, nil
}

// RefreshHook returns a function for transport.Hooks.Refresh: on invalid_token it returns a
// newer access token for (account, resource), refreshing unless another request already did.
// The request's URL is not needed: the token's resource is given.
func (c *Client) RefreshHook(co *discovery.Company, account, resource string) func(ctx context.Context, rejected string, _ *url.URL) (string, error) {
	return func(ctx context.Context, rejected string, _ *url.URL) (string, error) {
		unlock := c.lock(co.Identifier, account)
		defer unlock()
		if b, err := c.secrets.LoadCompany(ctx, co.Identifier, account); err == nil {
			if t := findToken(b, resource); t != nil && t.AccessToken != "" && t.AccessToken != rejected && c.fresh(t) {
				return t.AccessToken, nil
			}
		}
		cred, err := c.refreshLocked(ctx, co, account, resource)
		if err != nil {
			return "", err
		}
		return cred.accessToken, nil
	}
}

func (c *Client) fresh(t *store.Token) bool {
	return t.ExpiresAt.IsZero() || c.now().Add(expirySkew).Before(t.ExpiresAt)
}

// AccessToken returns the access token to use at serviceURL (an MCP server's url, an OpenAPI
// server URL, or a conversation endpoint): before the first signed-in call it reads the
// service's protected resource metadata (spec 4.5, RFC 9728) and, when its resource is not
// https://{organization.domain}, uses a token requested with resource set to it (RFC 8707).
// An expired or missing token is refreshed.
func (c *Client) AccessToken(ctx context.Context, co *discovery.Company, account, serviceURL string) (Credential, error) {
	resource, err := c.ResourceFor(ctx, co, serviceURL)
	if err != nil {
		return Credential{}, err
	}
	unlock := c.lock(co.Identifier, account)
	defer unlock()
	b, err := c.secrets.LoadCompany(ctx, co.Identifier, account)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Credential{}, fmt.Errorf("reading the account from the secret store failed: %w", err)
	}
	if b != nil {
		if t := findToken(b, resource); t != nil && t.AccessToken != "" && c.fresh(t) {
			return Credential{TokenType: t.TokenType, Resource: resource, Scopes: t.Scopes, ExpiresAt: t.ExpiresAt, accessToken: t.AccessToken}, nil
		}
	}
	return c.refreshLocked(ctx, co, account, resource)
}

// ResourceFor returns the resource whose token serviceURL needs: "" for the default token, or
// the resource of the service's protected resource metadata when it isn't
// https://{organization.domain} (spec 4.5). The answer is remembered; ForgetResource drops it
// (after an invalid_token whose challenge names resource_metadata, RFC 9728 §5.1).
func (c *Client) ResourceFor(ctx context.Context, co *discovery.Company, serviceURL string) (string, error) {
	c.mu.Lock()
	r, ok := c.resources[serviceURL]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := c.fetchResource(ctx, co, serviceURL)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.resources[serviceURL] = r
	c.mu.Unlock()
	return r, nil
}

// ForgetResource drops what ResourceFor remembered about serviceURL.
func (c *Client) ForgetResource(serviceURL string) {
	c.mu.Lock()
	delete(c.resources, serviceURL)
	c.mu.Unlock()
}

// ResourceMetadataURL is the RFC 9728 §3.1 metadata URL of resource: the well-known path is
// inserted between the host and the path, without a trailing slash after the host.
func ResourceMetadataURL(resource string) (string, error) {
	u, err := transport.CheckURL(resource)
	if err != nil {
		return "", err
	}
	m := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/.well-known/oauth-protected-resource", RawQuery: u.RawQuery}
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		m.Path += u.Path
		m.Path = strings.TrimSuffix(m.Path, "/")
	}
	return m.String(), nil
}

func (c *Client) fetchResource(ctx context.Context, co *discovery.Company, serviceURL string) (string, error) {
	const step = "reading the service's protected resource metadata"
	mu, err := ResourceMetadataURL(serviceURL)
	if err != nil {
		return "", &Error{Step: step, Problem: fmt.Sprintf("the service URL is unusable: %v (spec 3)", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mu, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.tr.NoRedirectClient().Do(req)
	if err != nil {
		return "", &Error{Step: step, Problem: fmt.Sprintf("GET %s failed: %s; try again", mu, redact.String(err.Error()))}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return "", nil // no metadata: the default token works there (spec 4.5)
	case resp.StatusCode != http.StatusOK:
		return "", &Error{Step: step, Status: resp.StatusCode, Problem: fmt.Sprintf("GET %s did not answer 200 or 404, so Poppydesk cannot tell which token the service needs (spec 4.5, RFC 9728 §3.2)", mu)}
	}
	var m struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Resource == "" {
		return "", &Error{Step: step, Problem: fmt.Sprintf("%s is not protected resource metadata with a resource (RFC 9728 §2)", mu)}
	}
	def := "https://" + strings.ToLower(co.Organization.Domain)
	if strings.EqualFold(m.Resource, def) {
		return "", nil
	}
	if m.Resource != serviceURL {
		return "", &Error{Step: step, Problem: fmt.Sprintf("the metadata at %s names resource %q, not %q; RFC 9728 §3.3 forbids using it", mu, m.Resource, serviceURL)}
	}
	return m.Resource, nil
}

// SignOut revokes every refresh token held for the account at the Company's
// revocation_endpoint (token_type_hint=refresh_token, client assertion; spec 4.6, RFC 7009),
// then deletes the account's tokens (spec 5.5). If the Company does not confirm a revocation,
// the tokens are kept so the User can try again, and the error says so.
func (c *Client) SignOut(ctx context.Context, co *discovery.Company, account string) error {
	as, err := asMetadata(co)
	if err != nil {
		return err
	}
	unlock := c.lock(co.Identifier, account)
	defer unlock()
	b, err := c.secrets.LoadCompany(ctx, co.Identifier, account)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the account from the secret store failed: %w", err)
	}
	var rts []string
	for _, t := range b.Tokens {
		if t.RefreshToken != "" {
			rts = append(rts, t.RefreshToken)
		}
	}
	for _, rt := range rts {
		if err := c.revoke(ctx, co.Issuer, as.RevocationEndpoint, rt); err != nil {
			return fmt.Errorf("sign-out at %s is not complete: %w; the tokens were kept so you can try again (spec 5.5)", co.Organization.Domain, err)
		}
	}
	if err := c.signOutLocally(ctx, co.Identifier, account); err != nil {
		return fmt.Errorf("the Company revoked the refresh token, but removing the tokens from the secret store failed: %w", err)
	}
	c.log.InfoContext(ctx, "signed out", "company", co.Identifier, "account", account, "revoked", len(rts))
	return nil
}

func (c *Client) revoke(ctx context.Context, issuer, endpoint, refreshToken string) error {
	_, err := c.postForm(ctx, issuer, endpoint, "revocation", url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}}, nil)
	return err
}

// String keeps the access token out of fmt output (spec 10.2).
func (c Credential) String() string {
	return fmt.Sprintf("Credential{%s, resource %q, scopes %q}", c.TokenType, c.Resource, c.Scopes)
}

// GoString: see String.
func (c Credential) GoString() string { return c.String() }
