package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// Token types (spec 5.2, RFC 8725 §3.11).
const (
	DelegationType = "poppy-delegation+jwt"
	SessionType    = "poppy-session+jwt"
)

// LoopbackRedirectURI is the loopback redirect URI registered for Direct Sign-In in a native app
// (spec 4.1, 4.2, RFC 8252 §7.3). It has no port: the Company must accept any port on it.
const LoopbackRedirectURI = "http://127.0.0.1/callback"

// MaxDelegationLifetime is the longest a delegation may live (spec 5.2: exp at most 24 h after iat).
const MaxDelegationLifetime = 24 * time.Hour

// AssertionLifetime is how long a client assertion is valid (spec 4.1: short-lived).
const AssertionLifetime = 60 * time.Second

// Config describes the Personal Agent's published identity (spec 4.1).
type Config struct {
	// ClientID is the HTTPS URL of the client metadata document, e.g.
	// https://agent.example/agent.json.
	ClientID string
	// ClientName is shown to Users by Companies. Defaults to "Poppydesk".
	ClientName string
	// LogoURI is an HTTPS URL of the logo. Defaults to logo.png next to ClientID.
	LogoURI string
	// JWKSURI is the HTTPS URL of the key set, on the same host as ClientID. Defaults to
	// jwks.json next to ClientID.
	JWKSURI string
	// RedirectURIs are extra HTTPS redirect URIs on ClientID's host. The loopback redirect URI
	// [LoopbackRedirectURI] is always registered.
	RedirectURIs []string
}

// Metadata is the client metadata document (spec 4.1, CIMD draft).
type Metadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	LogoURI                 string   `json:"logo_uri,omitempty"`
	JWKSURI                 string   `json:"jwks_uri"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// Agent is the Personal Agent's identity: its metadata and the operator that signs for it.
type Agent struct {
	meta        Metadata
	defaultLogo bool // logo_uri is the generated logo.png next to client_id
	op          Operator
	now         func() time.Time
}

// New validates cfg (spec 3 "HTTPS", 4.1) and returns the Agent. now defaults to time.Now.
func New(cfg Config, op Operator, now func() time.Time) (*Agent, error) {
	if op == nil {
		return nil, errors.New("identity: no operator given")
	}
	if now == nil {
		now = time.Now
	}
	cid, err := url.Parse(cfg.ClientID)
	if err != nil || cid.Scheme != "https" || cid.Host == "" || cid.User != nil || cid.RawQuery != "" || cid.Fragment != "" || cid.Path == "" || cid.Path == "/" {
		return nil, fmt.Errorf("client_id %q must be an HTTPS URL with a path and no query, fragment or user info, such as https://agent.example/agent.json (spec 4.1)", cfg.ClientID)
	}
	for _, seg := range strings.Split(cid.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("client_id %q must not contain dot segments (spec 4.1, CIMD)", cfg.ClientID)
		}
	}
	if strings.ToLower(cid.Host) != cid.Host {
		return nil, fmt.Errorf("client_id %q: write the host in lowercase, since Companies compare client_id character for character (spec 4.1)", cfg.ClientID)
	}
	m := Metadata{
		ClientID:                cfg.ClientID,
		ClientName:              cfg.ClientName,
		LogoURI:                 cfg.LogoURI,
		JWKSURI:                 cfg.JWKSURI,
		GrantTypes:              []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "private_key_jwt",
	}
	if m.ClientName == "" {
		m.ClientName = "Poppydesk"
	}
	if m.JWKSURI == "" {
		m.JWKSURI = cid.ResolveReference(&url.URL{Path: "jwks.json"}).String()
	}
	defaultLogo := m.LogoURI == ""
	if defaultLogo {
		m.LogoURI = cid.ResolveReference(&url.URL{Path: "logo.png"}).String()
	}
	if err := sameHostHTTPS(cid, m.JWKSURI, "jwks_uri"); err != nil {
		return nil, err
	}
	if u, err := url.Parse(m.LogoURI); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("logo_uri %q must be an HTTPS URL (spec 3 \"HTTPS\")", m.LogoURI)
	}
	for _, r := range cfg.RedirectURIs {
		if r == LoopbackRedirectURI {
			continue
		}
		if err := sameHostHTTPS(cid, r, "redirect_uri"); err != nil {
			return nil, fmt.Errorf("%w, or the loopback redirect URI %s", err, LoopbackRedirectURI)
		}
		m.RedirectURIs = append(m.RedirectURIs, r)
	}
	m.RedirectURIs = append(m.RedirectURIs, LoopbackRedirectURI)
	return &Agent{meta: m, defaultLogo: defaultLogo, op: op, now: now}, nil
}

func sameHostHTTPS(cid *url.URL, raw, field string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("%s %q must be an HTTPS URL without a fragment (spec 4.1)", field, raw)
	}
	if !strings.EqualFold(u.Host, cid.Host) {
		return fmt.Errorf("%s %q must be on the same host as client_id %q (spec 4.1)", field, raw, cid.String())
	}
	return nil
}

// IsLoopbackRedirect reports whether raw is a loopback redirect URI as RFC 8252 §7.3 defines
// (http, the literal 127.0.0.1 or [::1], any port).
func IsLoopbackRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// ClientID returns the client_id (spec 4.1).
func (a *Agent) ClientID() string { return a.meta.ClientID }

// Metadata returns a copy of the client metadata document.
func (a *Agent) Metadata() Metadata {
	m := a.meta
	m.RedirectURIs = append([]string(nil), a.meta.RedirectURIs...)
	m.GrantTypes = append([]string(nil), a.meta.GrantTypes...)
	m.ResponseTypes = append([]string(nil), a.meta.ResponseTypes...)
	return m
}

// MetadataJSON returns the client metadata document to publish at client_id.
func (a *Agent) MetadataJSON() ([]byte, error) { return json.MarshalIndent(a.meta, "", "  ") }

// JWKSJSON returns the public key set to publish at jwks_uri (spec 4.1: public keys only).
func (a *Agent) JWKSJSON(ctx context.Context) ([]byte, error) {
	set, err := a.op.PublicKeys(ctx)
	if err != nil {
		return nil, err
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if priv, err := jwk.IsPrivateKey(k); err != nil || priv {
			return nil, errors.New("the operator returned a private key for the JWKS; refusing to publish it (spec 4.1)")
		}
	}
	return json.MarshalIndent(set, "", "  ")
}

// NewID returns n random bytes, base64url-encoded without padding: unguessable identifiers
// for jti, sid, User IDs and Agent IDs (spec 4.1, 5.1, 5.2). Panics only if the system's
// random source fails, which crypto/rand treats as fatal anyway.
func NewID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid"`
}

// sign writes header and claims, has the operator sign the signing input, and returns the
// compact JWS.
func (a *Agent) sign(ctx context.Context, typ string, claims any) (string, error) {
	kid, alg, err := a.op.SigningKey(ctx)
	if err != nil {
		return "", err
	}
	// spec 4.1, 5.2: client assertions and delegations are ES256 or PS384, and kid names the
	// key in jwks_uri. Checked here so that no Operator can make the Agent emit anything else.
	if alg != jwa.ES256() && alg != jwa.PS384() {
		return "", fmt.Errorf("the operator wants to sign with %q; only ES256 or PS384 may sign client assertions and delegations (spec 4.1, 5.2); fix the operator's configuration", alg.String())
	}
	if kid == "" {
		return "", errors.New("the operator named no key (kid) to sign with; kid must name a key in jwks_uri (spec 5.2); fix the operator's configuration")
	}
	hdr, err := json.Marshal(jwtHeader{Alg: alg.String(), Typ: typ, Kid: kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := jwsbb.SignBuffer(nil, hdr, payload, base64.RawURLEncoding, true)
	sig, err := a.op.Sign(ctx, kid, alg, input)
	if err != nil {
		return "", fmt.Errorf("the operator could not sign: %w", err)
	}
	// Appended by hand: jwsbb.AppendSignature drops the signing input when it has to grow the
	// buffer (jwx v3.4.0).
	out := append(input, '.')
	return string(base64.RawURLEncoding.AppendEncode(out, sig)), nil
}

type assertionClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	Aud string `json:"aud"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	Jti string `json:"jti"`
}

// ClientAssertion returns a client assertion (RFC 7523 §3, spec 4.1) for the Company whose
// issuer is issuer: iss = sub = client_id, aud = issuer as one string (spec 10.4), iat, exp
// 60 s later, and an unguessable jti generated here (spec 10.7).
func (a *Agent) ClientAssertion(ctx context.Context, issuer string) (string, error) {
	if u, err := url.Parse(issuer); err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("client assertion audience %q is not an HTTPS issuer identifier (spec 4.1, 10.4)", issuer)
	}
	now := a.now()
	return a.sign(ctx, "", assertionClaims{
		Iss: a.meta.ClientID, Sub: a.meta.ClientID, Aud: issuer,
		Iat: now.Unix(), Exp: now.Add(AssertionLifetime).Unix(), Jti: NewID(16),
	})
}

type delegationClaims struct {
	Iss string        `json:"iss"`
	Cnf delegationCnf `json:"cnf"`
	Iat int64         `json:"iat"`
	Exp int64         `json:"exp"`
	Jti string        `json:"jti"`
}

type delegationCnf struct {
	JWK json.RawMessage `json:"jwk"`
}

// PublicJWK returns the public JWK of pub with only its public members (kty, crv, x, y), as
// cnf.jwk needs (spec 5.2), and its RFC 7638 thumbprint.
func PublicJWK(pub *ecdsa.PublicKey) (json.RawMessage, string, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return nil, "", errors.New("a delegated key must be a P-256 key (spec 5.2: ES256)")
	}
	k, err := jwk.Import(pub)
	if err != nil {
		return nil, "", err
	}
	tp, err := Thumbprint(k)
	if err != nil {
		return nil, "", err
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, "", err
	}
	return raw, tp, nil
}

// Delegate issues a delegation (spec 5.2 "Delegated keys") for the delegated public key pub,
// valid for lifetime (at most 24 h). The delegation names nothing about the User or the Company:
// its claims are exactly iss, cnf, iat, exp and jti.
func (a *Agent) Delegate(ctx context.Context, pub *ecdsa.PublicKey, lifetime time.Duration) (string, time.Time, error) {
	if lifetime <= 0 || lifetime > MaxDelegationLifetime {
		return "", time.Time{}, fmt.Errorf("delegation lifetime %v must be positive and at most 24h (spec 5.2)", lifetime)
	}
	raw, _, err := PublicJWK(pub)
	if err != nil {
		return "", time.Time{}, err
	}
	now := a.now().Truncate(time.Second)
	exp := now.Add(lifetime)
	dlg, err := a.sign(ctx, DelegationType, delegationClaims{
		Iss: a.meta.ClientID, Cnf: delegationCnf{JWK: raw},
		Iat: now.Unix(), Exp: exp.Unix(), Jti: NewID(16),
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return dlg, exp, nil
}
