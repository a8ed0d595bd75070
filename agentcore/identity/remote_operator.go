package identity

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudflare/circl/blindsign/blindrsa"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// MinOperatorKeyBits is the smallest RSA key a device accepts from an operator.
const MinOperatorKeyBits = 2048

// MaxOperatorKeys is the most keys a device accepts in an operator's published key set: enough
// for a rotation with room to spare, too few for a key per device (an operator that signed each
// device's requests with a key of its own would know whose signature a Company holds).
const MaxOperatorKeys = 8

const (
	configTTL      = time.Minute     // how long the operator's configuration is reused
	keysTTL        = 5 * time.Minute // how long the operator's JWKS is reused
	keysRefetchMin = 10 * time.Second
	maxAnswer      = 64 << 10
)

// OperatorUnreachableError says the operator could not be asked for a signature.
type OperatorUnreachableError struct {
	Operator string
	Err      error
}

func (e *OperatorUnreachableError) Error() string {
	return fmt.Sprintf("the operator %s, which signs for this Poppydesk, cannot be reached (%v). Sign-in, refresh, "+
		"sign-out and new delegations need it; Sessions keep working with their current delegations until those "+
		"expire. Check the network, or ask the operator's administrator whether the service is down", e.Operator, e.Err)
}

func (e *OperatorUnreachableError) Unwrap() error { return e.Err }

// OperatorQuotaError says this device has used its signature quota at the operator.
type OperatorQuotaError struct {
	Operator string
	// RetryAfter is how long to wait; At is when that wait ends.
	RetryAfter time.Duration
	At         time.Time
	// Description is the operator's own words.
	Description string
}

func (e *OperatorQuotaError) Error() string {
	return fmt.Sprintf("the operator %s signs no more for this device for now: %s. Poppydesk may ask again after %s (in %s)",
		e.Operator, strings.TrimSuffix(e.Description, "."), e.At.UTC().Format("15:04:05 UTC"), e.RetryAfter.Round(time.Second))
}

// EnrollLimitError says the operator enrolls no more devices from where this one asks, for now:
// its limits per address, per network or in all, which keep one client from using up open
// enrollment for everyone.
type EnrollLimitError struct {
	*OperatorQuotaError
}

func (e *EnrollLimitError) Error() string {
	return fmt.Sprintf("the operator %s is not enrolling more devices from here for now (%s). Nothing was changed on this computer; "+
		"enroll again later, from another network, or with an enrollment token from the operator's administrator",
		e.Operator, strings.TrimSuffix(e.Description, "."))
}

func (e *EnrollLimitError) Unwrap() error { return e.OperatorQuotaError }

// OperatorRefusedError is any other refusal by the operator, in its words.
type OperatorRefusedError struct {
	Operator    string
	Status      int
	Code        string
	Description string
}

func (e *OperatorRefusedError) Error() string {
	what := "the operator " + e.Operator + " refused"
	switch e.Code {
	case OperatorErrDevice:
		return what + " this device (" + e.Description + "); enroll it again with `poppydesk operator enroll`"
	case OperatorErrToken:
		return what + " the enrollment (" + e.Description + "); ask its administrator for a new enrollment token"
	case OperatorErrKeyNotSigning:
		return what + " the signature: its signing key changed while it was asked for (" + e.Description + "); the next attempt uses the new key"
	}
	return fmt.Sprintf("%s with HTTP %d %s: %s", what, e.Status, e.Code, e.Description)
}

// RemoteConfig configures a [RemoteOperator].
type RemoteConfig struct {
	// Device is this device's enrollment (from the keyring).
	Device *store.DeviceBundle
	// HTTPClient reaches the operator (nil: a client with a 15 s timeout). It must not follow
	// redirects with the device proof; the engine's no-redirect client is the right one.
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger (nil: discarded). It never receives a JWT, a signing input or a signature.
	Logger *slog.Logger
}

// RemoteOperator is the device side of an operator that signs blindly (spec 10.7, RFC 9474
// RSABSSA-SHA384-PSS-Deterministic). The [Agent] writes every client assertion and delegation
// here on the device, jti included; Sign blinds its signing input with the operator's public
// key from jwks_uri, sends only the blinded message with a device proof, unblinds the answer and
// verifies the result as a JWS PS384 signature with the published key before returning it.
// Refresh and access tokens never leave the device. When the operator cannot be reached, Sign
// fails with an [*OperatorUnreachableError]; nothing falls back to another identity.
type RemoteOperator struct {
	dev    store.DeviceBundle
	base   string
	key    *ecdsa.PrivateKey
	client *http.Client
	now    func() time.Time
	log    *slog.Logger

	mu       sync.Mutex
	conf     *OperatorConfig
	confAt   time.Time     // local time of the fetch
	offset   time.Duration // operator clock minus local clock at the fetch
	keys     jwk.Set
	keysAt   time.Time
	keysTry  time.Time
	lastFail error
}

// NewRemoteOperator returns the device side of the operator cfg.Device is enrolled with.
func NewRemoteOperator(cfg RemoteConfig) (*RemoteOperator, error) {
	d := cfg.Device
	if d == nil || d.DeviceID == "" || d.Operator == "" || d.SignEndpoint == "" || d.JWKSURI == "" || d.ClientID == "" {
		return nil, errors.New("this device's operator enrollment is incomplete; enroll again with `poppydesk operator enroll`")
	}
	k, err := jwk.ParseKey(d.PrivateJWK)
	if err != nil {
		return nil, fmt.Errorf("this device's key in the keyring is unusable (%v); enroll again with `poppydesk operator enroll`", err)
	}
	var priv ecdsa.PrivateKey
	if err := jwk.Export(k, &priv); err != nil || priv.Curve != elliptic.P256() {
		return nil, errors.New("this device's key in the keyring is not a P-256 private key; enroll again with `poppydesk operator enroll`")
	}
	o := &RemoteOperator{dev: *d, base: d.Operator, key: &priv, client: cfg.HTTPClient, now: cfg.Now, log: cfg.Logger}
	if o.client == nil {
		o.client = &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Device returns the enrollment this operator uses.
func (o *RemoteOperator) Device() store.DeviceBundle { return o.dev }

// Config returns the operator's configuration, fetched again when older than a minute.
func (o *RemoteOperator) Config(ctx context.Context) (OperatorConfig, error) {
	c, _, err := o.config(ctx, false)
	if err != nil {
		return OperatorConfig{}, err
	}
	return *c, nil
}

func (o *RemoteOperator) config(ctx context.Context, fresh bool) (*OperatorConfig, time.Duration, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if o.conf != nil && !fresh && now.Sub(o.confAt) < configTTL {
		return o.conf, o.offset, nil
	}
	c, err := FetchOperatorConfig(ctx, o.client, o.base)
	if err != nil {
		if o.conf != nil && now.Sub(o.confAt) < time.Hour {
			// The schedule already known still names the right key; Sign reports the outage.
			o.lastFail = err
			return o.conf, o.offset, nil
		}
		return nil, 0, err
	}
	if c.ClientID != o.dev.ClientID || c.JWKSURI != o.dev.JWKSURI || c.SignEndpoint != o.dev.SignEndpoint {
		return nil, 0, fmt.Errorf("the operator %s now publishes another identity (client_id %s) than this device enrolled with (%s); enroll again with `poppydesk operator enroll`", o.base, c.ClientID, o.dev.ClientID)
	}
	o.conf, o.confAt, o.offset, o.lastFail = c, now, time.Unix(c.Now, 0).Sub(now), nil
	return c, o.offset, nil
}

// SigningKey implements [Operator]: the key the operator's schedule names for now, and PS384.
func (o *RemoteOperator) SigningKey(ctx context.Context) (string, jwa.SignatureAlgorithm, error) {
	c, offset, err := o.config(ctx, false)
	if err != nil {
		return "", jwa.EmptySignatureAlgorithm(), err
	}
	opNow := o.now().Add(offset).Unix()
	kid, from := c.SigningKid, int64(-1)
	for _, k := range c.Keys {
		if k.SignFrom <= opNow && k.SignFrom > from {
			kid, from = k.Kid, k.SignFrom
		}
	}
	if kid == "" {
		return "", jwa.EmptySignatureAlgorithm(), fmt.Errorf("the operator %s names no signing key; ask its administrator", o.base)
	}
	return kid, jwa.PS384(), nil
}

// PublicKeys implements [Operator]: the operator's JWKS, as Companies fetch it from jwks_uri.
func (o *RemoteOperator) PublicKeys(ctx context.Context) (jwk.Set, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.fetchKeysLocked(ctx, false); err != nil {
		return nil, err
	}
	return o.keys, nil
}

func (o *RemoteOperator) fetchKeysLocked(ctx context.Context, force bool) error {
	now := o.now()
	if o.keys != nil && !force && now.Sub(o.keysAt) < keysTTL {
		return nil
	}
	if o.keys != nil && now.Sub(o.keysTry) < keysRefetchMin {
		return nil
	}
	o.keysTry = now
	set, err := CompanyKeySet(ctx, o.client, o.dev.ClientID, o.dev.JWKSURI)
	var ue *OperatorUnreachableError
	switch {
	case errors.As(err, &ue) && o.keys != nil:
		return nil
	case errors.As(err, &ue):
		ue.Operator = o.base
		return ue
	case err != nil:
		return err
	}
	o.keys, o.keysAt = set, now
	return nil
}

// CompanyKeySet reads the key set Companies see for clientID (spec 4.1): the client metadata
// document at clientID, then its jwks_uri, as a Company fetches them, and checks that the
// jwks_uri is want (the one this device enrolled with) and that the set holds no more than
// MaxOperatorKeys keys. A device signs only with a key this returns, so it never signs with a key
// Companies are not shown.
func CompanyKeySet(ctx context.Context, client *http.Client, clientID, want string) (jwk.Set, error) {
	meta, err := FetchClientMetadata(ctx, client, clientID)
	if err != nil {
		return nil, &OperatorUnreachableError{Operator: clientID, Err: fmt.Errorf("its client metadata document: %w", err)}
	}
	if meta.JWKSURI != want {
		return nil, fmt.Errorf("the operator tells this device its keys are at %s, but shows Companies the key set at %s (its client metadata document %s). "+
			"Keys only this device is shown could let the operator recognise your signatures, so Poppydesk does not use them; tell the operator's administrator, or use another operator", want, meta.JWKSURI, clientID)
	}
	body, err := get(ctx, client, meta.JWKSURI)
	if err != nil {
		return nil, &OperatorUnreachableError{Operator: clientID, Err: err}
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("the operator's key set at %s is not a JWKS: %v", meta.JWKSURI, err)
	}
	if set.Len() > MaxOperatorKeys {
		return nil, fmt.Errorf("the operator's key set at %s holds %d keys; Poppydesk signs through an operator with at most %d, "+
			"since with a key per device the operator could recognise your signatures. Tell the operator's administrator, or use another operator", meta.JWKSURI, set.Len(), MaxOperatorKeys)
	}
	return set, nil
}

// FetchClientMetadata reads the client metadata document at clientID (spec 4.1), as Companies
// do, and checks that it names itself.
func FetchClientMetadata(ctx context.Context, client *http.Client, clientID string) (*Metadata, error) {
	raw, err := get(ctx, client, clientID)
	if err != nil {
		return nil, err
	}
	var m Metadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("it is not JSON: %v", err)
	}
	if m.ClientID != clientID {
		return nil, fmt.Errorf("it names the client_id %q, not its own URL (spec 4.1)", m.ClientID)
	}
	return &m, nil
}

// publicKey is the operator's RSA key kid from jwks_uri, refetched once when it is not there.
func (o *RemoteOperator) publicKey(ctx context.Context, kid string) (*rsa.PublicKey, jwk.Key, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.fetchKeysLocked(ctx, false); err != nil {
		return nil, nil, err
	}
	k, ok := o.keys.LookupKeyID(kid)
	if !ok {
		if err := o.fetchKeysLocked(ctx, true); err != nil {
			return nil, nil, err
		}
		if k, ok = o.keys.LookupKeyID(kid); !ok {
			return nil, nil, fmt.Errorf("the operator %s asks this device to sign with the key %q, which is not in the key set it shows Companies (%s). "+
				"A key only this device is shown could let the operator recognise your signatures, so Poppydesk does not sign with it (spec 4.1, 10.7); "+
				"tell the operator's administrator, or use another operator", o.base, kid, o.dev.JWKSURI)
		}
	}
	if a, ok := k.Algorithm(); ok && a.String() != jwa.PS384().String() {
		return nil, nil, fmt.Errorf("the operator's key %q is for %s, not PS384", kid, a)
	}
	var pub rsa.PublicKey
	if err := jwk.Export(k, &pub); err != nil {
		return nil, nil, fmt.Errorf("the operator's key %q is not an RSA public key", kid)
	}
	if pub.N.BitLen() < MinOperatorKeyBits {
		return nil, nil, fmt.Errorf("the operator's key %q has %d bits; blind signatures need at least %d", kid, pub.N.BitLen(), MinOperatorKeyBits)
	}
	return &pub, k, nil
}

// Sign implements [Operator] with a blind signature (RFC 9474 §4, RSABSSA-SHA384-PSS-
// Deterministic): the operator sees the device and the blinded message, nothing else.
func (o *RemoteOperator) Sign(ctx context.Context, kid string, alg jwa.SignatureAlgorithm, signingInput []byte) ([]byte, error) {
	if alg != jwa.PS384() {
		return nil, fmt.Errorf("an operator signs blindly only with PS384, not %s (spec 10.7)", alg)
	}
	pub, pk, err := o.publicKey(ctx, kid)
	if err != nil {
		return nil, err
	}
	client, err := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, pub)
	if err != nil {
		return nil, err
	}
	// The deterministic variant adds no prefix: the message is the JWS signing input, whose
	// jti (written on this device) is the value the operator cannot guess (RFC 9474 §7.3).
	msg, err := client.Prepare(rand.Reader, signingInput)
	if err != nil {
		return nil, err
	}
	blinded, state, err := client.Blind(rand.Reader, msg)
	if err != nil {
		return nil, fmt.Errorf("blinding the signing input: %w", err)
	}
	body, err := json.Marshal(SignRequest{Kid: kid, BlindedMessage: base64.RawURLEncoding.EncodeToString(blinded)})
	if err != nil {
		return nil, err
	}
	var out SignResponse
	if err := o.post(ctx, o.dev.SignEndpoint, o.dev.DeviceID, body, &out); err != nil {
		var re *OperatorRefusedError
		if errors.As(err, &re) && re.Code == OperatorErrKeyNotSigning {
			o.mu.Lock()
			o.conf = nil
			o.mu.Unlock()
		}
		return nil, err
	}
	bsig, err := base64.RawURLEncoding.DecodeString(out.BlindSignature)
	if err != nil || out.Kid != kid {
		return nil, fmt.Errorf("the operator %s answered with a malformed blind signature", o.base)
	}
	sig, err := client.Finalize(state, bsig)
	if err != nil {
		return nil, fmt.Errorf("the operator %s answered with a blind signature that does not unblind into a valid signature by its key %q: %w", o.base, kid, err)
	}
	// What Companies do: verify the JWS as PS384 with the key published at jwks_uri.
	compact := append(append(append([]byte(nil), signingInput...), '.'), base64.RawURLEncoding.EncodeToString(sig)...)
	if _, err := jws.Verify(compact, jws.WithKey(jwa.PS384(), pk)); err != nil {
		return nil, fmt.Errorf("the unblinded signature does not verify as PS384 with the operator's published key %q: %w", kid, err)
	}
	return sig, nil
}

// post sends body with a device proof and decodes the JSON answer into out.
func (o *RemoteOperator) post(ctx context.Context, endpoint, deviceID string, body []byte, out any) error {
	return postJSON(ctx, o.client, o.base, o.key, deviceID, endpoint, body, out, o.now)
}

func postJSON(ctx context.Context, client *http.Client, base string, key *ecdsa.PrivateKey, deviceID, endpoint string, body []byte, out any, now func() time.Time) error {
	proof, err := SignDeviceProof(key, deviceID, http.MethodPost, endpoint, body, now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", DeviceProofScheme+" "+proof)
	resp, err := client.Do(req)
	if err != nil {
		return &OperatorUnreachableError{Operator: base, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return &OperatorUnreachableError{Operator: base, Err: err}
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("the operator %s answered with something that is not its JSON: %v", base, err)
		}
		return nil
	}
	var oe OperatorError
	_ = json.Unmarshal(raw, &oe)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := time.Duration(oe.RetryAfter) * time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			wait = time.Duration(s) * time.Second
		}
		return &OperatorQuotaError{Operator: base, RetryAfter: wait, At: now().Add(wait), Description: oe.Description}
	case resp.StatusCode >= 500 || oe.Code == "":
		return &OperatorUnreachableError{Operator: base, Err: fmt.Errorf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(oe.Description))}
	}
	return &OperatorRefusedError{Operator: base, Status: resp.StatusCode, Code: oe.Code, Description: oe.Description}
}

func get(ctx context.Context, client *http.Client, target string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d", target, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
}

// OperatorBase checks an operator's base URL (HTTPS, no query or fragment) and returns it
// without a trailing slash.
func OperatorBase(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("the operator's URL %q must be an HTTPS URL such as https://operator.example (spec 3 \"HTTPS\")", raw)
	}
	if strings.ToLower(u.Host) != u.Host {
		return "", fmt.Errorf("the operator's URL %q: write the host in lowercase", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// FetchOperatorConfig reads the operator's configuration at base + OperatorConfigPath and
// checks it: the client_id and jwks_uri of a valid identity (spec 4.1), HTTPS endpoints on the
// operator's host, the blind signature variant this device speaks.
func FetchOperatorConfig(ctx context.Context, client *http.Client, base string) (*OperatorConfig, error) {
	body, err := get(ctx, client, base+OperatorConfigPath)
	if err != nil {
		return nil, &OperatorUnreachableError{Operator: base, Err: err}
	}
	var c OperatorConfig
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("the operator's configuration at %s is not JSON: %v", base+OperatorConfigPath, err)
	}
	if _, err := New(Config{ClientID: c.ClientID, ClientName: c.ClientName, JWKSURI: c.JWKSURI}, configOnly{}, nil); err != nil {
		return nil, fmt.Errorf("the operator %s publishes an unusable identity: %w", base, err)
	}
	bu, _ := url.Parse(base)
	for name, e := range map[string]string{"enroll_endpoint": c.EnrollEndpoint, "sign_endpoint": c.SignEndpoint} {
		u, err := url.Parse(e)
		if err != nil || u.Scheme != "https" || !strings.EqualFold(u.Host, bu.Host) {
			return nil, fmt.Errorf("the operator's %s %q must be an HTTPS URL on %s", name, e, bu.Host)
		}
	}
	if c.Variant != BlindVariant || c.Alg != "PS384" {
		return nil, fmt.Errorf("the operator %s signs with %s/%s; this Poppydesk needs %s/PS384 (spec 10.7)", base, c.Variant, c.Alg, BlindVariant)
	}
	return &c, nil
}

// configOnly is an Operator that signs nothing: it lets New validate a published identity.
type configOnly struct{}

func (configOnly) SigningKey(context.Context) (string, jwa.SignatureAlgorithm, error) {
	return "", jwa.EmptySignatureAlgorithm(), errors.New("no signing key")
}
func (configOnly) Sign(context.Context, string, jwa.SignatureAlgorithm, []byte) ([]byte, error) {
	return nil, errors.New("no signing key")
}
func (configOnly) PublicKeys(context.Context) (jwk.Set, error) { return jwk.NewSet(), nil }

// Enroll enrolls this device with the operator at base: it reads the operator's configuration,
// makes a new P-256 device key, and registers its public key (with the administrator's token
// unless enrollment is open). The returned bundle holds the private key: keep it in the keyring
// (store.Secrets.SaveDevice).
func Enroll(ctx context.Context, client *http.Client, base, token string, now func() time.Time) (*store.DeviceBundle, error) {
	if now == nil {
		now = time.Now
	}
	base, err := OperatorBase(base)
	if err != nil {
		return nil, err
	}
	c, err := FetchOperatorConfig(ctx, client, base)
	if err != nil {
		return nil, err
	}
	if c.Enrollment == EnrollmentToken && token == "" {
		return nil, fmt.Errorf("the operator %s enrolls devices with a token from its administrator; pass it with --token", base)
	}
	if _, err := CompanyKeySet(ctx, client, c.ClientID, c.JWKSURI); err != nil {
		var ue *OperatorUnreachableError
		if errors.As(err, &ue) {
			ue.Operator = base
		}
		return nil, err
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, thumb, err := PublicJWK(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	req := EnrollRequest{Token: token, DeviceKey: pub}
	if p := c.EnrollPoW; p != nil && p.Bits > 0 {
		if p.Alg != PoWAlg {
			return nil, fmt.Errorf("the operator %s asks for a proof of work (%s) this Poppydesk does not know; update Poppydesk, or ask the operator's administrator for an enrollment token", base, p.Alg)
		}
		if req.PoW, err = SolveEnrollPoW(ctx, c.EnrollEndpoint, thumb, p.Bits); err != nil {
			return nil, err
		}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out EnrollResponse
	if err := postJSON(ctx, client, base, priv, "", c.EnrollEndpoint, body, &out, now); err != nil {
		var qe *OperatorQuotaError
		if errors.As(err, &qe) {
			return nil, &EnrollLimitError{OperatorQuotaError: qe}
		}
		return nil, err
	}
	if out.DeviceID == "" {
		return nil, fmt.Errorf("the operator %s enrolled the device without naming it", base)
	}
	pk, err := jwk.Import(priv)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(pk)
	if err != nil {
		return nil, err
	}
	return &store.DeviceBundle{Operator: base, DeviceID: out.DeviceID, PrivateJWK: raw, ClientID: c.ClientID, ClientName: c.ClientName,
		JWKSURI: c.JWKSURI, SignEndpoint: c.SignEndpoint, Enrolled: now().UTC()}, nil
}
