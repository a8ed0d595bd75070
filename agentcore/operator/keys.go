package operator

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/poppydesk/poppydesk/agentcore/identity"
)

// Key sizes. 3072 bits is the default: it matches the 128-bit security of the ES256 keys that
// self-operated Poppydesks use, and stays acceptable after 2030, when NIST SP 800-57 stops
// accepting 2048-bit RSA. The price is speed: a 3072-bit blind signature costs about three
// times a 2048-bit one (BenchmarkBlindSignatures measures it against a bare RSA operation);
// `poppydesk operator keygen --bits 2048` makes the faster key. 2048 is the least a key may
// have, and what devices accept.
const (
	DefaultKeyBits = 3072
	MinKeyBits     = identity.MinOperatorKeyBits
)

// SignFromHeader is the PEM header of a key file that says when the key starts signing, in
// RFC 3339. A key whose time has not come is published but does not sign (rotation with
// overlap); a key without the header signs from the start.
const SignFromHeader = "Sign-From"

// Grace is how long the previous key still signs after the next one took over, so a device that
// read the schedule just before the switch is not refused. Removing a key counts from then.
const Grace = 10 * time.Minute

// CacheMaxAge is the Cache-Control max-age of the client metadata document and the JWKS: how
// long a Company may keep an old key set (sessioncheck's default cache is as long).
const CacheMaxAge = 5 * time.Minute

// Key is one RSA key of the operator (PS384, RFC 9474 RSABSSA-SHA384-PSS-Deterministic).
type Key struct {
	// Kid is the RFC 7638 thumbprint of the public key.
	Kid string
	// SignFrom is when the key starts signing (zero: from the start).
	SignFrom time.Time
	// Source names where the key was read (a file or an environment variable).
	Source string
	Bits   int

	priv   *rsa.PrivateKey
	signer *crtSigner
	pub    jwk.Key
}

// ParseKeys reads every RSA private key in PEM data (PKCS #8 "PRIVATE KEY" or PKCS #1 "RSA
// PRIVATE KEY" blocks), with each block's Sign-From header. source names the data in errors.
func ParseKeys(data []byte, source string) ([]*Key, error) {
	var out []*Key
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			break
		}
		var priv any
		var err error
		switch blk.Type {
		case "PRIVATE KEY":
			priv, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			priv, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: a key does not parse: %v", source, err)
		}
		rk, ok := priv.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: the key is not an RSA key; blind signatures (RFC 9474) need RSA", source)
		}
		k, err := newKey(rk, source)
		if err != nil {
			return nil, err
		}
		if v := blk.Headers[SignFromHeader]; v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return nil, fmt.Errorf("%s: the %s header %q is not an RFC 3339 time such as 2026-05-02T12:00:00Z", source, SignFromHeader, v)
			}
			k.SignFrom = t.UTC()
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no RSA private key in PEM form", source)
	}
	return out, nil
}

func newKey(rk *rsa.PrivateKey, source string) (*Key, error) {
	if err := rk.Validate(); err != nil {
		return nil, fmt.Errorf("%s: the RSA key is invalid: %v", source, err)
	}
	if bits := rk.N.BitLen(); bits < MinKeyBits {
		return nil, fmt.Errorf("%s: the RSA key has %d bits; an operator's key needs at least %d (%d recommended)", source, bits, MinKeyBits, DefaultKeyBits)
	}
	pub, err := jwk.Import(&rk.PublicKey)
	if err != nil {
		return nil, err
	}
	kid, err := identity.Thumbprint(pub)
	if err != nil {
		return nil, err
	}
	for name, v := range map[string]any{jwk.KeyIDKey: kid, jwk.AlgorithmKey: jwa.PS384(), jwk.KeyUsageKey: "sig"} {
		if err := pub.Set(name, v); err != nil {
			return nil, err
		}
	}
	signer, err := newCRTSigner(rk)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	return &Key{Kid: kid, Source: source, Bits: rk.N.BitLen(), priv: rk, signer: signer, pub: pub}, nil
}

// GenerateKey makes a new RSA key of bits bits and returns it as a PKCS #8 PEM block with the
// Sign-From header when signFrom is set, and its kid.
func GenerateKey(bits int, signFrom time.Time) ([]byte, string, error) {
	if bits < MinKeyBits {
		return nil, "", fmt.Errorf("a key needs at least %d bits", MinKeyBits)
	}
	rk, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(rk)
	if err != nil {
		return nil, "", err
	}
	blk := &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	if !signFrom.IsZero() {
		blk.Headers = map[string]string{SignFromHeader: signFrom.UTC().Format(time.RFC3339)}
	}
	k, err := newKey(rk, "the new key")
	if err != nil {
		return nil, "", err
	}
	return pem.EncodeToMemory(blk), k.Kid, nil
}

// KeySet is the operator's keys in the order they sign. Every key is published at jwks_uri;
// at any time the one with the latest SignFrom not in the future signs.
type KeySet struct {
	keys []*Key // by SignFrom, oldest first
}

// NewKeySet checks keys (at least one, no kid twice, no two with the same SignFrom) and orders
// them by SignFrom.
func NewKeySet(keys []*Key) (*KeySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("no operator key was given; make one with `poppydesk operator keygen` and pass it with --key or POPPYDESK_OPERATOR_KEYS")
	}
	if len(keys) > identity.MaxOperatorKeys {
		return nil, fmt.Errorf("%d keys were given; devices sign through an operator that publishes at most %d (a rotation needs two or three): remove the keys that may be removed", len(keys), identity.MaxOperatorKeys)
	}
	ks := append([]*Key(nil), keys...)
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].SignFrom.Before(ks[j].SignFrom) })
	seen := map[string]string{}
	for i, k := range ks {
		if src, dup := seen[k.Kid]; dup {
			return nil, fmt.Errorf("the key in %s is the same key as in %s", k.Source, src)
		}
		seen[k.Kid] = k.Source
		if i > 0 && ks[i-1].SignFrom.Equal(k.SignFrom) {
			return nil, fmt.Errorf("the keys in %s and %s both start signing at %s; give each key its own %s", ks[i-1].Source, k.Source, when(k.SignFrom), SignFromHeader)
		}
	}
	return &KeySet{keys: ks}, nil
}

func when(t time.Time) string {
	if t.IsZero() {
		return "the start"
	}
	return t.Format(time.RFC3339)
}

// Keys returns the keys, oldest first.
func (s *KeySet) Keys() []*Key { return append([]*Key(nil), s.keys...) }

// Current is the key that signs at now (nil when every key's time is still to come).
func (s *KeySet) Current(now time.Time) *Key {
	var cur *Key
	for _, k := range s.keys {
		if !k.SignFrom.After(now) {
			cur = k
		}
	}
	return cur
}

// errKeyNotSigning is a key that does not sign at this time.
type errKeyNotSigning struct{ why string }

func (e *errKeyNotSigning) Error() string { return e.why }

// forSigning returns key kid if it may sign at now: the current key, or the one before it
// within Grace of the switch.
func (s *KeySet) forSigning(kid string, now time.Time) (*Key, error) {
	for i, k := range s.keys {
		if k.Kid != kid {
			continue
		}
		switch {
		case k.SignFrom.After(now):
			return nil, &errKeyNotSigning{"this key is published but signs only from " + when(k.SignFrom)}
		case i == len(s.keys)-1 || s.keys[i+1].SignFrom.After(now):
			return k, nil
		case now.Before(s.keys[i+1].SignFrom.Add(Grace)) && (i+2 == len(s.keys) || s.keys[i+2].SignFrom.After(now)):
			return k, nil
		}
		return nil, &errKeyNotSigning{"this key no longer signs; the current key is named in signing_kid"}
	}
	return nil, &errKeyNotSigning{"no key of this operator has this kid"}
}

// RemoveAfter is when k may leave the JWKS: once everything it signed has expired (delegations
// live at most 24 h, client assertions a minute) and Companies' caches of the key set have
// caught up. Zero while k is the last key.
func (s *KeySet) RemoveAfter(k *Key) time.Time {
	for i, x := range s.keys {
		if x == k && i+1 < len(s.keys) {
			return s.keys[i+1].SignFrom.Add(Grace + identity.MaxDelegationLifetime + identity.AssertionLifetime + CacheMaxAge)
		}
	}
	return time.Time{}
}

// Schedule is the signing schedule devices read.
func (s *KeySet) Schedule() []identity.OperatorKey {
	out := make([]identity.OperatorKey, 0, len(s.keys))
	for _, k := range s.keys {
		var from int64
		if !k.SignFrom.IsZero() {
			from = k.SignFrom.Unix()
		}
		out = append(out, identity.OperatorKey{Kid: k.Kid, SignFrom: from})
	}
	return out
}

// PublicSet is the JWKS: every key's public part, newest first (spec 4.1: public keys only).
func (s *KeySet) PublicSet() (jwk.Set, error) {
	set := jwk.NewSet()
	for i := len(s.keys) - 1; i >= 0; i-- {
		if err := set.AddKey(s.keys[i].pub); err != nil {
			return nil, err
		}
	}
	return set, nil
}
