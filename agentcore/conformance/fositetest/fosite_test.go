// Package fositetest_test runs `poppydesk check` against a Company whose authorization server
// is github.com/ory/fosite, a well-known OAuth 2.0 library the project did not write: the
// reference Company serves discovery, the APIs and the Session checks, and fosite answers as
// its issuer (spec 4). Whatever check reports there must be a real violation of the
// specification by the library as configured, with the Company's own words beside it.
//
// fosite needs three Company-side settings for Poppy: its TokenURL is the issuer (it compares a
// client assertion's aud with it; spec 4.1 says aud is the issuer), it issues refresh tokens
// without an offline scope (RefreshTokenScopes empty), and the Company adds iss to successful
// authorization responses itself (RFC 9207; fosite does not). It cannot resolve a client_id URL
// to its metadata document, so the Company's storage fetches it (spec 4.1, CIMD).
//
// This package has test files only: fosite never reaches the product binary (app's TestDependencyRules).
package fositetest_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/storage"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

var scopes = []string{"orders:read", "orders:write"}

// clientStore is fosite's memory store, with clients resolved from their client_id URL: the
// client metadata document and its jwks_uri, fetched without redirects (spec 4.1).
type clientStore struct {
	*storage.MemoryStore
	hc *http.Client
}

func (c *clientStore) fetch(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (c *clientStore) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	if u, err := url.Parse(id); err != nil || u.Scheme != "https" {
		return nil, fosite.ErrNotFound
	}
	var meta identity.Metadata
	if err := c.fetch(ctx, id, &meta); err != nil || meta.ClientID != id {
		return nil, fosite.ErrNotFound.WithHintf("the client metadata at %s could not be fetched: %v", id, err)
	}
	var keys jose.JSONWebKeySet
	if err := c.fetch(ctx, meta.JWKSURI, &keys); err != nil {
		return nil, fosite.ErrNotFound.WithHintf("the client's JWKS could not be fetched: %v", err)
	}
	return &fosite.DefaultOpenIDConnectClient{
		DefaultClient: &fosite.DefaultClient{ID: id, RedirectURIs: meta.RedirectURIs, GrantTypes: []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"}, Scopes: scopes},
		JSONWebKeys: &keys, TokenEndpointAuthMethod: "private_key_jwt", TokenEndpointAuthSigningAlgorithm: "ES256",
	}, nil
}

// issuer is the Company's fosite authorization server at the reference Company's issuer host.
type issuer struct {
	s   *refcompany.Server
	p   fosite.OAuth2Provider
	iss string
}

// newIssuer is fosite as the issuer of s, comparing a client assertion's aud with tokenURL.
func newIssuer(t *testing.T, s *refcompany.Server, tokenURL string) *issuer {
	tr, err := transport.New(s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	secret := make([]byte, 32)
	rand.Read(secret)
	iss := s.Issuer()
	cfg := &fosite.Config{GlobalSecret: secret, TokenURL: tokenURL, EnforcePKCE: true, RefreshTokenScopes: []string{},
		AccessTokenLifespan: time.Hour, RefreshTokenLifespan: 24 * time.Hour, AuthorizeCodeLifespan: time.Minute}
	st := &clientStore{MemoryStore: storage.NewMemoryStore(), hc: tr.NoRedirectClient()}
	p := compose.Compose(cfg, st, compose.NewOAuth2HMACStrategy(cfg), compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory, compose.OAuth2TokenRevocationFactory, compose.OAuth2PKCEFactory)
	return &issuer{s: s, p: p, iss: iss}
}

func (is *issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	switch {
	case r.URL.Path == "/.well-known/oauth-authorization-server":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.iss, "authorization_endpoint": is.iss + "/oauth/authorize", "token_endpoint": is.iss + "/oauth/token",
			"revocation_endpoint": is.iss + "/oauth/revoke", "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"response_types_supported": []string{"code"}, "scopes_supported": scopes, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"private_key_jwt"}, "token_endpoint_auth_signing_alg_values_supported": []string{"ES256"},
			"protected_resources": []string{is.s.Origin()},
		})
	case r.URL.Path == "/oauth/authorize":
		ar, err := is.p.NewAuthorizeRequest(ctx, r)
		if err != nil {
			is.p.WriteAuthorizeError(ctx, w, ar, err)
			return
		}
		if r.Method != http.MethodPost {
			// The sign-in and consent page: the User approves with the button.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>Sign in</title><form method="post" action="%s"><button name="decision" value="approve">Allow</button></form>`,
				html.EscapeString("/oauth/authorize?"+r.URL.RawQuery))
			return
		}
		for _, sc := range ar.GetRequestedScopes() {
			ar.GrantScope(sc)
		}
		resp, err := is.p.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: "user-1"})
		if err != nil {
			is.p.WriteAuthorizeError(ctx, w, ar, err)
			return
		}
		resp.AddParameter("iss", is.iss) // RFC 9207, which fosite does not add
		is.p.WriteAuthorizeResponse(ctx, w, ar, resp)
	case r.URL.Path == "/oauth/token":
		ar, err := is.p.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
		if err != nil {
			is.p.WriteAccessError(ctx, w, ar, err)
			return
		}
		resp, err := is.p.NewAccessResponse(ctx, ar)
		if err != nil {
			is.p.WriteAccessError(ctx, w, ar, err)
			return
		}
		// The Company's APIs accept what its issuer issued.
		is.s.AddAccessToken(resp.GetAccessToken(), ar.GetClient().GetID(), ar.GetGrantedScopes()...)
		is.p.WriteAccessResponse(ctx, w, ar, resp)
	case r.URL.Path == "/oauth/revoke":
		is.p.WriteRevocationResponse(ctx, w, is.p.NewRevocationRequest(ctx, r))
	default:
		http.NotFound(w, r)
	}
}

// signIn plays the User's browser: it opens the sign-in page, approves, and follows the
// redirect back to check's loopback listener.
func signIn(ctx context.Context, tr *transport.Transport, authURL string) error {
	hc := tr.NoRedirectClient()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, authURL, strings.NewReader("decision=approve"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode/100 != 3 || err != nil {
		return fmt.Errorf("the consent answer was HTTP %d, not a redirect back", resp.StatusCode)
	}
	if ip := net.ParseIP(back.Hostname()); back.Scheme != "http" || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the redirect back goes to %s", back.Redacted())
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, back.String(), nil)
	lt := &http.Transport{}
	defer lt.CloseIdleConnections()
	resp, err = (&http.Client{Transport: lt}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// TestFositeCompany: check against a Company whose issuer is fosite reports only MUSTs fosite
// breaks as configured, each with the Company's own words:
//
//   - set up for Poppy (TokenURL is the issuer): it accepts a client assertion whose aud is an
//     array holding the issuer (spec 4.1, 10.4: the issuer as one string), and its error
//     redirects carry no iss (RFC 9207, spec 4.2). Everything else passes, or is skipped
//     because the issuer does not offer it (Device Sign-In, DPoP);
//   - with fosite's default TokenURL, the token endpoint: it refuses the correct assertion,
//     whose aud is the issuer, and says the audience must be its token endpoint; check blames
//     the audience rule with those words, not the fetching of the client metadata.
func TestFositeCompany(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tokenURL func(issuer string) string
		want     []string
		words    string
	}{
		{"token URL is the issuer", func(is string) string { return is }, []string{inspect.RuleOAuthAssertionAud, inspect.RuleOAuthIss}, ""},
		{"token URL is the token endpoint", func(is string) string { return is + "/oauth/token" }, []string{inspect.RuleOAuthAssertionAud, inspect.RuleOAuthIss}, "audience"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := runFosite(t, tc.tokenURL)
			var failed []string
			for _, r := range rep.Results {
				t.Logf("%-4s %s %s: %s | said: %s", strings.ToUpper(r.Status), r.Rule, r.Probe, r.Evidence, r.Said)
				if r.Status != conformance.Fail {
					continue
				}
				failed = append(failed, r.Rule)
				if r.Said == nil || r.Said.Status == 0 && !r.Said.Redirect || r.Said.Error == "" {
					t.Errorf("the failure of %s does not show what the Company said: %+v", r.Rule, r.Said)
				}
				if r.Rule == inspect.RuleOAuthAssertionAud && !strings.Contains(strings.ToLower(r.Said.String()), tc.words) {
					t.Errorf("the audience failure does not carry the Company's words %q: %s", tc.words, r.Said)
				}
			}
			slices.Sort(failed)
			if !slices.Equal(failed, tc.want) {
				t.Errorf("failed rules %v, want %v (fosite's real MUST failures)", failed, tc.want)
			}
		})
	}
}

// runFosite runs check, every action allowed, against the reference Company with fosite as
// its issuer.
func runFosite(t *testing.T, tokenURL func(issuer string) string) *conformance.Report {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := poppytest.Start(t, refcompany.Options{})
	s.AddHost(refcompany.AuthHost, newIssuer(t, s, tokenURL(s.Issuer())))
	op := identity.NewLocalOperator(store.NewSecrets(store.NewMemoryKV()), time.Now)
	a, err := identity.New(identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json"), ClientName: "Poppydesk check"}, op, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	s.AddHost(refcompany.AgentHost, a.Handler(nil))
	browser, err := transport.New(s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer browser.Close()
	rep, err := conformance.Run(ctx, conformance.Config{Domain: s.Domain, Transport: s.ClientConfig(), Agent: a, Operator: op,
		ProbeURL: s.URL(refcompany.ShopHost, "/api/products"), AllowActions: conformance.Actions,
		SignIn: func(ctx context.Context, authURL string) error { return signIn(ctx, browser, authURL) },
		Operation: &conformance.OperationRequest{Method: "POST", URL: s.URL(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges"),
			Body:    []byte(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`),
			Changed: []byte(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-l"}`)},
		Timeout: 5 * time.Second, Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
