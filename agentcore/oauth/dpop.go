package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// usesDPoP reports whether the issuer lists ES256 in dpop_signing_alg_values_supported
// (spec 4.5, RFC 9449 §5.1).
func usesDPoP(as *discovery.ASMetadata) bool {
	return as != nil && slices.Contains(as.DPoPSigningAlgs, "ES256")
}

// dpopKey returns the account's DPoP key, creating and storing it in the CompanyBundle when
// the issuer supports DPoP and the bundle has none. It returns nil when DPoP is not used.
func (c *Client) dpopKey(ctx context.Context, co *discovery.Company, account string) (*ecdsa.PrivateKey, error) {
	if !usesDPoP(co.AuthorizationServer) {
		return nil, nil
	}
	b, err := c.secrets.LoadCompany(ctx, co.Identifier, account)
	if err == nil && len(b.DPoPKey) > 0 {
		return parseDPoPKey(b.DPoPKey)
	}
	var key *ecdsa.PrivateKey
	_, err = c.secrets.UpdateCompany(ctx, co.Identifier, account, func(b *store.CompanyBundle) error {
		if len(b.DPoPKey) > 0 {
			k, err := parseDPoPKey(b.DPoPKey)
			key = k
			return err
		}
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		jk, err := jwk.Import(k)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(jk)
		if err != nil {
			return err
		}
		b.DPoPKey, key = raw, k
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("keeping the DPoP key in the secret store failed: %w", err)
	}
	return key, nil
}

func parseDPoPKey(raw json.RawMessage) (*ecdsa.PrivateKey, error) {
	k, err := jwk.ParseKey(raw)
	if err != nil {
		return nil, fmt.Errorf("the stored DPoP key is unreadable: %w", err)
	}
	var priv ecdsa.PrivateKey
	if err := jwk.Export(k, &priv); err != nil {
		return nil, fmt.Errorf("the stored DPoP key is not an EC private key: %w", err)
	}
	return &priv, nil
}

// DPoPProof builds a DPoP proof JWT (RFC 9449 §4.2) with key, as of now: typ dpop+jwt, ES256,
// the public key as jwk in the header; jti, htm, htu (u without query and fragment), iat, ath
// when accessToken is set, nonce when the server gave one. It is the one DPoP proof builder: the
// sign-in layer's (token requests, signed-in requests) and poppydesk check's probes.
func DPoPProof(key *ecdsa.PrivateKey, method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	pub, err := jwk.Import(&key.PublicKey)
	if err != nil {
		return "", err
	}
	htu := *u
	htu.RawQuery, htu.Fragment, htu.RawFragment = "", "", ""
	b := jwt.NewBuilder().JwtID(identity.NewID(16)).IssuedAt(now).
		Claim("htm", method).Claim("htu", htu.String())
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		b = b.Claim("ath", base64.RawURLEncoding.EncodeToString(sum[:]))
	}
	if nonce != "" {
		b = b.Claim("nonce", nonce)
	}
	tok, err := b.Build()
	if err != nil {
		return "", err
	}
	hdr := jws.NewHeaders()
	if err := hdr.Set(jws.TypeKey, "dpop+jwt"); err != nil {
		return "", err
	}
	if err := hdr.Set(jws.JWKKey, pub); err != nil {
		return "", err
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.ES256(), key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", fmt.Errorf("signing the DPoP proof failed: %w", err)
	}
	return string(signed), nil
}

// proof is DPoPProof on the Client's clock.
func (c *Client) proof(key *ecdsa.PrivateKey, method string, u *url.URL, accessToken, nonce string) (string, error) {
	return DPoPProof(key, method, u, accessToken, nonce, c.now())
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (c *Client) nonce(u *url.URL) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nonces[origin(u)]
}

func (c *Client) setNonce(u *url.URL, n string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nonces[origin(u)] = n
}

// Authorize sets the Authorization header of req for cred (spec 4.5): "Bearer" for tokens the
// Company did not bind, "DPoP" plus a DPoP proof with ath for DPoP-bound ones (RFC 9449 §7).
// Call it in engine code only, right before sending; the request must not follow redirects.
func (c *Client) Authorize(ctx context.Context, co *discovery.Company, account string, req *http.Request, cred Credential) error {
	if cred.accessToken == "" {
		return fmt.Errorf("%w at %s for account %q", ErrNotSignedIn, co.Organization.Domain, account)
	}
	if cred.TokenType != "DPoP" {
		req.Header.Set("Authorization", "Bearer "+cred.accessToken)
		req.Header.Del("DPoP")
		return nil
	}
	key, err := c.dpopKey(ctx, co, account)
	if err != nil {
		return err
	}
	if key == nil {
		return fmt.Errorf("the access token is DPoP-bound but the issuer no longer lists dpop_signing_alg_values_supported; sign in again (RFC 9449)")
	}
	p, err := c.proof(key, req.Method, req.URL, cred.accessToken, c.nonce(req.URL))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "DPoP "+cred.accessToken)
	req.Header.Set("DPoP", p)
	return nil
}

// NoteNonce records a DPoP-Nonce a resource server returned (RFC 9449 §9), for the next proof.
func (c *Client) NoteNonce(resp *http.Response) {
	if n := resp.Header.Get("DPoP-Nonce"); n != "" && resp.Request != nil {
		c.setNonce(resp.Request.URL, n)
	}
}
