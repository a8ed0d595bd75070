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

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// usesDPoP reports whether the issuer lists ES256 in dpop_signing_alg_values_supported
// (spec 4.5, RFC 9449 §5.1).
func usesDPoP(as *discovery.ASMetadata) bool {
	return as != nil && slices.Contains(as.DPoPSigningAlgs, "ES256")
}

// dpopKey returns the account's DPoP signer, creating the key and storing it in the
// CompanyBundle when the issuer supports DPoP and the bundle has none. It returns nil when DPoP
// is not used. A stored key is parsed once: the signer is kept by (company, account) with the
// bundle's key it came from, and built again only when that key changes.
func (c *Client) dpopKey(ctx context.Context, co *discovery.Company, account string) (*dpopSigner, error) {
	if !usesDPoP(co.AuthorizationServer) {
		return nil, nil
	}
	b, err := c.secrets.LoadCompany(ctx, co.Identifier, account)
	if err == nil && len(b.DPoPKey) > 0 {
		return c.dpopSignerOf(co.Identifier, account, b.DPoPKey)
	}
	var key *dpopSigner
	_, err = c.secrets.UpdateCompany(ctx, co.Identifier, account, func(b *store.CompanyBundle) error {
		if len(b.DPoPKey) > 0 {
			k, err := c.dpopSignerOf(co.Identifier, account, b.DPoPKey)
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
		if key, err = newDPoPSigner(k); err != nil {
			return err
		}
		b.DPoPKey = raw
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("keeping the DPoP key in the secret store failed: %w", err)
	}
	return key, nil
}

// maxDPoPSigners bounds the parsed DPoP keys a Client keeps (all are dropped together when it
// is reached; each is parsed again on its next use).
const maxDPoPSigners = 64

// cachedSigner is a parsed DPoP key and the stored form it was parsed from.
type cachedSigner struct {
	raw string
	s   *dpopSigner
}

// dpopSignerOf is the signer of the stored key raw of (company, account), parsed once.
func (c *Client) dpopSignerOf(company, account string, raw json.RawMessage) (*dpopSigner, error) {
	k := [2]string{company, account}
	c.mu.Lock()
	e, ok := c.signers[k]
	c.mu.Unlock()
	if ok && e.raw == string(raw) {
		return e.s, nil
	}
	priv, err := parseDPoPKey(raw)
	if err != nil {
		return nil, err
	}
	s, err := newDPoPSigner(priv)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.signers) >= maxDPoPSigners {
		clear(c.signers)
	}
	c.signers[k] = cachedSigner{raw: string(raw), s: s}
	c.mu.Unlock()
	return s, nil
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

// dpopSigner makes DPoP proofs with one key. The proof's protected header (typ dpop+jwt, alg
// ES256, the public key as jwk) is the same for every proof of the key, so it is encoded once;
// each proof encodes only its claims and signs with jwx's ES256 primitive (jwsbb).
type dpopSigner struct {
	key    *ecdsa.PrivateKey
	prefix string // base64url(header) + "."
}

func newDPoPSigner(key *ecdsa.PrivateKey) (*dpopSigner, error) {
	pub, err := jwk.Import(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("the DPoP key's public part: %w", err)
	}
	hdr, err := json.Marshal(struct {
		Typ string  `json:"typ"`
		Alg string  `json:"alg"`
		JWK jwk.Key `json:"jwk"`
	}{"dpop+jwt", "ES256", pub})
	if err != nil {
		return nil, fmt.Errorf("the DPoP proof's header: %w", err)
	}
	return &dpopSigner{key: key, prefix: base64.RawURLEncoding.EncodeToString(hdr) + "."}, nil
}

// dpopClaims are a DPoP proof's claims (RFC 9449 §4.2).
type dpopClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// proof is a DPoP proof JWT for method and u as of now (see DPoPProof).
func (s *dpopSigner) proof(method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	htu := *u
	htu.RawQuery, htu.Fragment, htu.RawFragment = "", "", ""
	cl := dpopClaims{JTI: identity.NewID(16), HTM: method, HTU: htu.String(), IAT: now.Unix(), Nonce: nonce}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		cl.ATH = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	payload, err := json.Marshal(cl)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	buf := make([]byte, 0, len(s.prefix)+enc.EncodedLen(len(payload))+1+enc.EncodedLen(64))
	buf = append(buf, s.prefix...)
	buf = enc.AppendEncode(buf, payload)
	sig, err := jwsbb.Sign(s.key, "ES256", buf, rand.Reader)
	if err != nil {
		return "", fmt.Errorf("signing the DPoP proof failed: %w", err)
	}
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig)
	return string(buf), nil
}

// DPoPProof builds a DPoP proof JWT (RFC 9449 §4.2) with key, as of now: typ dpop+jwt, ES256,
// the public key as jwk in the header; jti, htm, htu (u without query and fragment), iat, ath
// when accessToken is set, nonce when the server gave one. It is the one DPoP proof builder: the
// sign-in layer's (token requests, signed-in requests, with the key's header encoded once) and
// poppydesk check's probes.
func DPoPProof(key *ecdsa.PrivateKey, method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	s, err := newDPoPSigner(key)
	if err != nil {
		return "", err
	}
	return s.proof(method, u, accessToken, nonce, now)
}

// proof is a DPoP proof on the Client's clock.
func (c *Client) proof(key *dpopSigner, method string, u *url.URL, accessToken, nonce string) (string, error) {
	return key.proof(method, u, accessToken, nonce, c.now())
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
