package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// The device–operator protocol of an operator that signs blindly (spec 10.7, RFC 9474). The
// operator publishes one identity (client_id, jwks_uri: spec 4.1) for all its Users. A device
// enrolls with a P-256 key of its own, then asks for blind signatures: it writes the client
// assertion or delegation itself (its jti included), blinds the JWS signing input with the
// operator's RSA public key (RSABSSA-SHA384-PSS-Deterministic), sends only the blinded message,
// and unblinds the answer into an ordinary PS384 signature. Every request of an enrolled device
// carries a device proof: a short-lived ES256 JWT over the method, the URL and the SHA-256 of
// the body, signed with the device key. The operator keeps only the device's public key.

// OperatorConfigPath is where an operator publishes its [OperatorConfig], below its base URL.
const OperatorConfigPath = "/.well-known/poppydesk-operator"

// BlindVariant is the RFC 9474 variant every operator uses: its signatures are PS384 (spec 10.7).
const BlindVariant = "RSABSSA-SHA384-PSS-Deterministic"

// DeviceProofType is the typ of a device proof; DeviceProofScheme its Authorization scheme.
const (
	DeviceProofType   = "poppydesk-device+jwt"
	DeviceProofScheme = "Poppydesk-Device"
)

// DeviceProofWindow is how far a device proof's iat may be from the operator's clock.
const DeviceProofWindow = 60 * time.Second

// Enrollment modes of an operator.
const (
	EnrollmentToken = "token" // an enrollment token issued by the operator's administrator
	EnrollmentOpen  = "open"  // any device may enroll
)

// Error codes of the operator's JSON error answers.
const (
	OperatorErrQuota         = "quota_exceeded"  // HTTP 429, with Retry-After
	OperatorErrKeyNotSigning = "key_not_signing" // HTTP 409: ask again with the current key
	OperatorErrDevice        = "invalid_device"  // HTTP 401: unknown or revoked device, bad proof
	OperatorErrToken         = "invalid_token"   // HTTP 401: bad, used or expired enrollment token
	OperatorErrRequest       = "invalid_request" // HTTP 400
	OperatorErrUnavailable   = "temporarily_unavailable"
)

// OperatorConfig is what an operator tells devices about itself.
type OperatorConfig struct {
	ClientID       string        `json:"client_id"`
	ClientName     string        `json:"client_name"`
	JWKSURI        string        `json:"jwks_uri"`
	EnrollEndpoint string        `json:"enroll_endpoint"`
	SignEndpoint   string        `json:"sign_endpoint"`
	Enrollment     string        `json:"enrollment"` // EnrollmentToken or EnrollmentOpen
	Variant        string        `json:"variant"`    // BlindVariant
	Alg            string        `json:"alg"`        // PS384
	SigningKid     string        `json:"signing_kid"`
	Keys           []OperatorKey `json:"keys"`
	Quota          OperatorQuota `json:"quota"`
	// EnrollPoW is the proof of work an enrollment needs (nil: none).
	EnrollPoW *OperatorPoW `json:"enroll_pow,omitempty"`
	// Now is the operator's clock (Unix seconds) when it answered.
	Now int64 `json:"now"`
}

// OperatorKey is one published key and when it signs: from SignFrom until the next key's
// SignFrom (Unix seconds).
type OperatorKey struct {
	Kid      string `json:"kid"`
	SignFrom int64  `json:"sign_from"`
}

// OperatorQuota is how many signatures a device may get.
type OperatorQuota struct {
	PerHour int `json:"per_hour"`
	PerDay  int `json:"per_day"`
}

// EnrollRequest enrolls a device: its public key, and the administrator's token unless the
// operator's enrollment is open. The request's device proof is signed by that key.
type EnrollRequest struct {
	Token     string          `json:"token,omitempty"`
	DeviceKey json.RawMessage `json:"device_key"`
	// PoW is the proof of work's nonce when the operator asks for one (OperatorConfig.EnrollPoW).
	PoW string `json:"pow,omitempty"`
}

// EnrollResponse names the new device.
type EnrollResponse struct {
	DeviceID string `json:"device_id"`
}

// SignRequest asks for a blind signature with key Kid over BlindedMessage (base64url).
type SignRequest struct {
	Kid            string `json:"kid"`
	BlindedMessage string `json:"blinded_msg"`
}

// SignResponse is the blind signature (base64url).
type SignResponse struct {
	Kid            string `json:"kid"`
	BlindSignature string `json:"blind_sig"`
}

// OperatorError is the operator's error answer.
type OperatorError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	// RetryAfter is the wait in seconds (quota_exceeded), also sent as Retry-After.
	RetryAfter int `json:"retry_after,omitempty"`
	// SigningKid is the key that signs now (key_not_signing).
	SigningKid string `json:"signing_kid,omitempty"`
}

// DeviceProofClaims are the claims of a device proof.
type DeviceProofClaims struct {
	Htm string `json:"htm"`
	Htu string `json:"htu"`
	Iat int64  `json:"iat"`
	Jti string `json:"jti"`
	// Bh is the base64url SHA-256 of the request body.
	Bh string `json:"bh"`
}

type deviceProofHeader struct {
	Typ string          `json:"typ"`
	Alg string          `json:"alg"`
	Kid string          `json:"kid,omitempty"`
	JWK json.RawMessage `json:"jwk,omitempty"`
}

// BodyHash is the bh claim of a device proof for body.
func BodyHash(body []byte) string {
	h := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// SignDeviceProof signs a device proof for a request (method, url without query, body) with
// the device key. It names the device by deviceID, or, when enrolling (deviceID ""), carries
// the public key itself in its jwk header.
func SignDeviceProof(priv *ecdsa.PrivateKey, deviceID, method, url string, body []byte, now time.Time) (string, error) {
	hdr := deviceProofHeader{Typ: DeviceProofType, Alg: "ES256", Kid: deviceID}
	if deviceID == "" {
		raw, _, err := PublicJWK(&priv.PublicKey)
		if err != nil {
			return "", err
		}
		hdr.JWK = raw
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(DeviceProofClaims{Htm: method, Htu: url, Iat: now.Unix(), Jti: NewID(16), Bh: BodyHash(body)})
	if err != nil {
		return "", err
	}
	input := jwsbb.SignBuffer(nil, h, c, base64.RawURLEncoding, true)
	sig, err := jwsbb.Sign(priv, "ES256", input, rand.Reader)
	if err != nil {
		return "", err
	}
	out := append(input, '.')
	return string(base64.RawURLEncoding.AppendEncode(out, sig)), nil
}

// DeviceProof is a device proof read by the operator, before its signature is checked.
type DeviceProof struct {
	raw    string
	Kid    string          // the device ID ("" when enrolling)
	JWK    json.RawMessage // the device's public key when enrolling
	Claims DeviceProofClaims
}

// ParseDeviceProof decodes a device proof without verifying it.
func ParseDeviceProof(raw string) (*DeviceProof, error) {
	if len(raw) > 4096 {
		return nil, errors.New("the device proof is too long")
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, errors.New("the device proof is not a compact JWS")
	}
	var hdr deviceProofHeader
	var c DeviceProofClaims
	for i, dst := range []any{&hdr, &c} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return nil, errors.New("the device proof is not base64url")
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return nil, errors.New("the device proof's header or claims are not a JSON object")
		}
	}
	if hdr.Typ != DeviceProofType || hdr.Alg != "ES256" {
		return nil, fmt.Errorf("the device proof must have typ %s and alg ES256", DeviceProofType)
	}
	return &DeviceProof{raw: raw, Kid: hdr.Kid, JWK: hdr.JWK, Claims: c}, nil
}

// Verify checks the proof's signature with the device's public key (a P-256 JWK) and its claims
// against the request: method, url, body, and iat within DeviceProofWindow of now.
func (p *DeviceProof) Verify(publicJWK []byte, method, url string, body []byte, now time.Time) error {
	pub, err := ParseDeviceKey(publicJWK)
	if err != nil {
		return err
	}
	input, sig, err := splitSigningInput(p.raw)
	if err != nil {
		return err
	}
	if err := jwsbb.Verify(pub, "ES256", input, sig); err != nil {
		return errors.New("the device proof's signature does not verify with the device's key")
	}
	c := p.Claims
	switch {
	case c.Htm != method:
		return fmt.Errorf("the device proof is for %s, not %s", c.Htm, method)
	case c.Htu != url:
		return fmt.Errorf("the device proof is for %s, not %s", c.Htu, url)
	case c.Bh != BodyHash(body):
		return errors.New("the device proof does not cover this request body")
	case len(c.Jti) < 16:
		return errors.New("the device proof needs an unguessable jti")
	}
	if d := now.Sub(time.Unix(c.Iat, 0)); d > DeviceProofWindow || d < -DeviceProofWindow {
		return fmt.Errorf("the device proof's iat is more than %v from the operator's clock; check the device's clock", DeviceProofWindow)
	}
	return nil
}

// ParseDeviceKey reads a device's public key: a P-256 JWK without private members.
func ParseDeviceKey(raw []byte) (*ecdsa.PublicKey, error) {
	k, err := jwk.ParseKey(raw)
	if err != nil {
		return nil, errors.New("the device key is not a JWK")
	}
	if priv, err := jwk.IsPrivateKey(k); err != nil || priv {
		return nil, errors.New("the device key must be a public key")
	}
	var pub ecdsa.PublicKey
	if err := jwk.Export(k, &pub); err != nil || pub.Curve != elliptic.P256() {
		return nil, errors.New("the device key must be a P-256 key")
	}
	return &pub, nil
}

func splitSigningInput(compact string) ([]byte, []byte, error) {
	i := strings.LastIndexByte(compact, '.')
	if i < 0 {
		return nil, nil, errors.New("not a compact JWS")
	}
	sig, err := base64.RawURLEncoding.DecodeString(compact[i+1:])
	if err != nil {
		return nil, nil, errors.New("the signature is not base64url")
	}
	return []byte(compact[:i]), sig, nil
}
