package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// Operator holds the keys published at jwks_uri (spec 4.1) and signs with them (spec 10.7).
// Implementations must be safe for concurrent use.
type Operator interface {
	// SigningKey names the key that signs new client assertions and delegations, and its JWS
	// algorithm: ES256, or PS384 for an operator that signs blindly (spec 4.1, 5.2, 10.7).
	SigningKey(ctx context.Context) (kid string, alg jwa.SignatureAlgorithm, err error)
	// Sign returns the raw JWS signature (RFC 7515 §5.1 step 5) over signingInput, which is
	// ASCII(BASE64URL(header) '.' BASE64URL(payload)), made with key kid.
	Sign(ctx context.Context, kid string, alg jwa.SignatureAlgorithm, signingInput []byte) ([]byte, error)
	// PublicKeys returns the key set to publish at jwks_uri: public keys only, newest first.
	PublicKeys(ctx context.Context) (jwk.Set, error)
}

// LocalOperator is the self-operated [Operator]: ES256 root keys kept through store.Secrets
// (one RootBundle item), generated on first use, held in memory after the first load.
type LocalOperator struct {
	secrets store.Secrets
	now     func() time.Time

	mu   sync.Mutex
	keys []rootKey // newest first; nil until loaded
}

type rootKey struct {
	kid  string
	priv *ecdsa.PrivateKey
	pub  jwk.Key
}

// NewLocalOperator returns a LocalOperator over secrets. now defaults to time.Now.
func NewLocalOperator(secrets store.Secrets, now func() time.Time) *LocalOperator {
	if now == nil {
		now = time.Now
	}
	return &LocalOperator{secrets: secrets, now: now}
}

// load reads the root bundle once, creating the first key if there is none. Caller holds o.mu.
func (o *LocalOperator) load(ctx context.Context) error {
	if o.keys != nil {
		return nil
	}
	b, err := o.secrets.LoadRoot(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return o.rotateLocked(ctx, nil)
	case err != nil:
		return fmt.Errorf("reading the root key from the keyring: %w; unlock the keyring and try again", err)
	}
	keys := make([]rootKey, 0, len(b.Keys))
	for i, raw := range b.Keys {
		k, err := parseRootKey(raw)
		if err != nil {
			return fmt.Errorf("root key %d in the keyring is unusable: %w; remove the item or reset Poppydesk", i, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return o.rotateLocked(ctx, nil)
	}
	o.keys = keys
	return nil
}

func parseRootKey(raw json.RawMessage) (rootKey, error) {
	k, err := jwk.ParseKey(raw)
	if err != nil {
		return rootKey{}, err
	}
	var priv ecdsa.PrivateKey
	if err := jwk.Export(k, &priv); err != nil {
		return rootKey{}, fmt.Errorf("not an EC private key: %w", err)
	}
	if priv.Curve != elliptic.P256() {
		return rootKey{}, errors.New("not a P-256 key")
	}
	return newRootKey(&priv)
}

func newRootKey(priv *ecdsa.PrivateKey) (rootKey, error) {
	pub, err := jwk.Import(priv.Public())
	if err != nil {
		return rootKey{}, err
	}
	kid, err := Thumbprint(pub)
	if err != nil {
		return rootKey{}, err
	}
	for name, v := range map[string]any{jwk.KeyIDKey: kid, jwk.AlgorithmKey: jwa.ES256(), jwk.KeyUsageKey: "sig"} {
		if err := pub.Set(name, v); err != nil {
			return rootKey{}, err
		}
	}
	return rootKey{kid: kid, priv: priv, pub: pub}, nil
}

// rotateLocked generates a new root key, puts it before older, and persists. Caller holds o.mu.
func (o *LocalOperator) rotateLocked(ctx context.Context, older []rootKey) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating a root key: %w", err)
	}
	k, err := newRootKey(priv)
	if err != nil {
		return err
	}
	return o.saveLocked(ctx, append([]rootKey{k}, older...))
}

// saveLocked persists keys (newest first) as one RootBundle and adopts them. Caller holds o.mu.
func (o *LocalOperator) saveLocked(ctx context.Context, keys []rootKey) error {
	b := &store.RootBundle{Created: o.now().UTC()}
	for _, rk := range keys {
		pk, err := jwk.Import(rk.priv)
		if err != nil {
			return err
		}
		if err := pk.Set(jwk.KeyIDKey, rk.kid); err != nil {
			return err
		}
		raw, err := json.Marshal(pk)
		if err != nil {
			return err
		}
		b.Keys = append(b.Keys, raw)
	}
	if err := o.secrets.SaveRoot(ctx, b); err != nil {
		return fmt.Errorf("saving the root key in the keyring: %w; unlock the keyring and try again", err)
	}
	o.keys = keys
	return nil
}

// Rotate makes a new root key the signing key. Older keys stay published in the JWKS so that
// delegations and assertions they signed keep verifying (spec 10.7); remove one with Retire once
// everything it signed has expired (delegations live at most 24 hours).
func (o *LocalOperator) Rotate(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.load(ctx); err != nil {
		return err
	}
	return o.rotateLocked(ctx, o.keys)
}

// Retire removes an older root key from the key set. Removing a key revokes every delegation it
// signed once Companies' caches expire (spec 10.7). The current signing key cannot be retired.
func (o *LocalOperator) Retire(ctx context.Context, kid string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.load(ctx); err != nil {
		return err
	}
	if o.keys[0].kid == kid {
		return errors.New("the current signing key cannot be retired; rotate first")
	}
	rest := make([]rootKey, 0, len(o.keys))
	for _, k := range o.keys {
		if k.kid != kid {
			rest = append(rest, k)
		}
	}
	if len(rest) == len(o.keys) {
		return fmt.Errorf("no root key with kid %q", kid)
	}
	return o.saveLocked(ctx, rest)
}

// SigningKey implements [Operator].
func (o *LocalOperator) SigningKey(ctx context.Context) (string, jwa.SignatureAlgorithm, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.load(ctx); err != nil {
		return "", jwa.EmptySignatureAlgorithm(), err
	}
	return o.keys[0].kid, jwa.ES256(), nil
}

// Sign implements [Operator].
func (o *LocalOperator) Sign(ctx context.Context, kid string, alg jwa.SignatureAlgorithm, signingInput []byte) ([]byte, error) {
	if alg != jwa.ES256() {
		return nil, fmt.Errorf("the local operator signs only ES256, not %s", alg)
	}
	o.mu.Lock()
	if err := o.load(ctx); err != nil {
		o.mu.Unlock()
		return nil, err
	}
	var priv *ecdsa.PrivateKey
	for _, k := range o.keys {
		if k.kid == kid {
			priv = k.priv
		}
	}
	o.mu.Unlock()
	if priv == nil {
		return nil, fmt.Errorf("no root key with kid %q", kid)
	}
	return jwsbb.Sign(priv, alg.String(), signingInput, rand.Reader)
}

// PublicKeys implements [Operator].
func (o *LocalOperator) PublicKeys(ctx context.Context) (jwk.Set, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.load(ctx); err != nil {
		return nil, err
	}
	set := jwk.NewSet()
	for _, k := range o.keys {
		if err := set.AddKey(k.pub); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// Thumbprint returns the RFC 7638 SHA-256 JWK thumbprint of k, base64url-encoded without padding.
func Thumbprint(k jwk.Key) (string, error) {
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("computing the JWK thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}
