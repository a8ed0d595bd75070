package operator_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/circl/blindsign/blindrsa"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestRFC9474Vector runs the RSABSSA-SHA384-PSS-Deterministic test vector of RFC 9474
// Appendix A.3 (empty prefix, 48-byte salt, 4096-bit key; testdata holds the RFC's values)
// through circl's public API, the one devices use, and the operator's CRT signer: with the
// vector's salt and blinding factor as the random input, Blind gives the RFC's blinded_msg,
// circl's BlindSign and the operator's its blind_sig, Finalize its sig, and that signature verifies as RSASSA-PSS SHA-384 with a 48-byte
// salt, which is JWS PS384.
func TestRFC9474Vector(t *testing.T) {
	raw, err := os.ReadFile("testdata/rfc9474-a3-pss-deterministic.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	hexOf := func(name string) []byte {
		b, err := hex.DecodeString(strings.TrimPrefix(v[name], "0x"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return b
	}
	num := func(name string) *big.Int { return new(big.Int).SetBytes(hexOf(name)) }
	if v["name"] != "RSABSSA-SHA384-PSS-Deterministic" || len(hexOf("msg_prefix")) != 0 || len(hexOf("salt")) != 48 {
		t.Fatalf("testdata is not the PSS-Deterministic vector: %s", v["name"])
	}
	key := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: num("n"), E: int(num("e").Int64())}, D: num("d"), Primes: []*big.Int{num("p"), num("q")}}
	key.Precompute()
	if err := key.Validate(); err != nil || key.N.BitLen() != 4096 {
		t.Fatalf("the vector's key: %v (%d bits)", err, key.N.BitLen())
	}
	// The blinding factor r is the inverse of the vector's inv; crypto/rand.Int reads it back
	// from its big-endian bytes.
	r := new(big.Int).ModInverse(num("inv"), key.N)
	rb := make([]byte, (key.N.BitLen()+7)/8)
	r.FillBytes(rb)
	random := io.MultiReader(bytes.NewReader(hexOf("salt")), bytes.NewReader(rb))

	client, err := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, &key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := client.Prepare(random, hexOf("msg"))
	if err != nil || !bytes.Equal(msg, hexOf("input_msg")) {
		t.Fatalf("Prepare added a prefix: %x, %v", msg, err)
	}
	blinded, state, err := client.Blind(random, msg)
	if err != nil {
		t.Fatal(err)
	}
	blindSig, err := blindrsa.NewSigner(key).BlindSign(blinded)
	if err != nil {
		t.Fatal(err)
	}
	// The operator's own signer (CRT) gives the same blind_sig.
	if crt, err := operator.CRTBlindSign(key, blinded); err != nil || !bytes.Equal(crt, blindSig) {
		t.Fatalf("the operator's CRT signer differs from the RFC's blind_sig (%v):\n got %x\nwant %x", err, crt, blindSig)
	}
	sig, err := client.Finalize(state, blindSig)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name string
		got  []byte
	}{{"blinded_msg", blinded}, {"blind_sig", blindSig}, {"sig", sig}} {
		if !bytes.Equal(step.got, hexOf(step.name)) {
			t.Fatalf("%s differs from RFC 9474 A.3:\n got %x\nwant %x", step.name, step.got, hexOf(step.name))
		}
	}
	h := crypto.SHA384.New()
	h.Write(msg)
	if err := rsa.VerifyPSS(&key.PublicKey, crypto.SHA384, h.Sum(nil), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}); err != nil {
		t.Fatalf("the vector's signature does not verify as PS384: %v", err)
	}
}

// TestKeyFiles: keys are read from PEM with their Sign-From header; a short or non-RSA key, a
// duplicate, or two keys starting together are refused with words that say what to fix.
func TestKeyFiles(t *testing.T) {
	at := time.Date(2026, 5, 2, 12, 0, 0, 0, time.UTC)
	k1, k2 := testKey(t, time.Time{}), testKey(t, at)
	keys, err := operator.ParseKeys(append(append([]byte{}, k1...), k2...), "both.pem")
	if err != nil || len(keys) != 2 || !keys[0].SignFrom.IsZero() || !keys[1].SignFrom.Equal(at) || keys[0].Bits != 2048 {
		t.Fatalf("ParseKeys = %+v, %v", keys, err)
	}
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	bad := []struct {
		name string
		pem  []byte
		want string
	}{
		{"empty", []byte("nothing here"), "holds no RSA private key"},
		{"1024 bits", pemOf(t, small), "at least 2048"},
		{"EC key", pemOf(t, ec), "not an RSA key"},
		{"bad header", bytes.Replace(k2, []byte("Sign-From: "+at.Format(time.RFC3339)), []byte("Sign-From: tomorrow"), 1), "RFC 3339"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := operator.ParseKeys(tc.pem, "k.pem"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := operator.NewKeySet(append(keys, keys[0])); err == nil || !strings.Contains(err.Error(), "same key") {
		t.Fatalf("duplicate key: %v", err)
	}
	k3, _ := operator.ParseKeys(testKey(t, at), "k3.pem")
	if _, err := operator.NewKeySet(append(keys, k3...)); err == nil || !strings.Contains(err.Error(), "both start signing") {
		t.Fatalf("same Sign-From: %v", err)
	}
	ks, err := operator.NewKeySet(keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		now  time.Time
		want string
	}{{at.Add(-time.Second), keys[0].Kid}, {at, keys[1].Kid}} {
		if got := ks.Current(c.now); got.Kid != c.want {
			t.Fatalf("Current(%v) = %s, want %s", c.now, got.Kid, c.want)
		}
	}
	if ra := ks.RemoveAfter(ks.Keys()[0]); !ra.Equal(at.Add(operator.Grace + 24*time.Hour + time.Minute + operator.CacheMaxAge)) {
		t.Fatalf("RemoveAfter = %v", ra)
	}
	set, _ := ks.PublicSet()
	if set.Len() != 2 {
		t.Fatalf("JWKS has %d keys", set.Len())
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if priv, _ := jwk.IsPrivateKey(k); priv {
			t.Fatal("the JWKS holds a private key")
		}
		if a, _ := k.Algorithm(); a.String() != "PS384" {
			t.Fatalf("alg = %v", a)
		}
	}
}

func pemOf(t *testing.T, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TestPublishedIdentity: the client metadata document (spec 4.1), the JWKS and the logo, as
// Companies fetch them.
func TestPublishedIdentity(t *testing.T) {
	inst := startOperator(t, opts{}, "")
	get := func(p string) (*http.Response, []byte) {
		resp, err := inst.client.Get(inst.url + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := get("/agent.json")
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}
	want := map[string]any{"client_id": inst.url + "/agent.json", "client_name": "Test Operator", "logo_uri": inst.url + "/logo.png",
		"jwks_uri": inst.url + "/jwks.json", "token_endpoint_auth_method": "private_key_jwt"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if ru, _ := m["redirect_uris"].([]any); len(ru) != 1 || ru[0] != identity.LoopbackRedirectURI {
		t.Errorf("redirect_uris = %v, want the loopback redirect URI %s (RFC 8252 §7.3)", m["redirect_uris"], identity.LoopbackRedirectURI)
	}
	resp, body = get("/jwks.json")
	set, err := jwk.Parse(body)
	if err != nil || set.Len() != 1 || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=300") {
		t.Fatalf("jwks: %v %s", err, body)
	}
	if bytes.Contains(body, []byte(`"d"`)) || bytes.Contains(body, []byte(`"p"`)) {
		t.Fatal("the JWKS carries private members")
	}
	if resp, body = get("/logo.png"); resp.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(body, []byte("\x89PNG")) {
		t.Fatalf("logo: %s", resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if resp, body = get(p); resp.StatusCode != 200 {
			t.Fatalf("%s = %d %s", p, resp.StatusCode, body)
		}
	}
	inst.srv.Drain()
	if resp, _ = get("/readyz"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining = %d", resp.StatusCode)
	}
}

// TestReadyzNeedsDatabaseAndKey: /readyz fails while the database is closed or no key signs yet.
func TestReadyzNeedsDatabaseAndKey(t *testing.T) {
	future := keySet(t, testKey(t, time.Now().Add(time.Hour)))
	for _, tc := range []struct {
		name  string
		keys  *operator.KeySet
		close bool
		want  string
	}{
		{"database closed", nil, true, "the database does not answer"},
		{"no key signs yet", future, false, "no key signs yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := startOperator(t, opts{keys: tc.keys}, "")
			if tc.close {
				inst.store.Close()
			}
			resp, err := inst.client.Get(inst.url + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || !strings.Contains(string(b), tc.want) {
				t.Fatalf("/readyz = %d %q, want 503 with %q", resp.StatusCode, b, tc.want)
			}
		})
	}
}

// TestEnrollment: with tokens, a device enrolls only with a token the administrator issued, once;
// with open enrollment, any device enrolls.
func TestEnrollment(t *testing.T) {
	ctx := context.Background()
	inst := startOperator(t, opts{}, "")
	tok := enrollToken(t, inst.store, time.Now())
	expired := "ppd_enroll_" + identity.NewID(32)
	if err := inst.store.AddEnrollToken(ctx, expired, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour), 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, want string
	}{
		{"no token", "", "pass it with --token"},
		{"unknown token", "ppd_enroll_nope", "unknown, used up or expired"},
		{"expired token", expired, "unknown, used up or expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := identity.Enroll(ctx, inst.client, inst.url, tc.token, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Enroll = %v, want %q", err, tc.want)
			}
		})
	}
	d := enrollDevice(t, inst, nil, tok, nil)
	if !strings.HasPrefix(d.bundle.DeviceID, "dev_") || d.bundle.ClientID != inst.url+"/agent.json" {
		t.Fatalf("bundle = %+v", d.bundle)
	}
	if _, err := identity.Enroll(ctx, inst.client, inst.url, tok, nil); err == nil || !strings.Contains(err.Error(), "used up") {
		t.Fatalf("a used token enrolled again: %v", err)
	}
	open := startOperator(t, opts{enrollment: identity.EnrollmentOpen}, "")
	enrollDevice(t, open, nil, "", nil)
}

// TestBlindSignedAssertionsAndDelegations: an Agent over the device's RemoteOperator writes
// client assertions and delegations that verify as PS384 with the operator's published JWKS,
// with the claims written on the device (its jti included).
func TestBlindSignedAssertionsAndDelegations(t *testing.T) {
	ctx := context.Background()
	inst := startOperator(t, opts{}, "")
	d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, time.Now()), nil)
	resp, err := inst.client.Get(inst.url + "/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.ParseReader(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	as, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example")
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	dlg, _, err := d.agent.Delegate(ctx, &priv.PublicKey, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"assertion": as, "delegation": dlg} {
		msg, err := jws.Parse([]byte(tok))
		if err != nil {
			t.Fatal(err)
		}
		alg, _ := msg.Signatures()[0].ProtectedHeaders().Algorithm()
		if alg != jwa.PS384() {
			t.Fatalf("%s alg = %s, want PS384", name, alg)
		}
		if _, err := jws.Verify([]byte(tok), jws.WithKeySet(set, jws.WithRequireKid(true))); err != nil {
			t.Fatalf("the %s does not verify with the published JWKS: %v", name, err)
		}
		var c map[string]any
		json.Unmarshal(msg.Payload(), &c)
		if c["iss"] != inst.url+"/agent.json" || len(c["jti"].(string)) < 22 {
			t.Fatalf("%s claims = %v", name, c)
		}
	}
	if got := inst.srv.Stats().Signatures; got != 2 {
		t.Fatalf("signatures = %d, want 2", got)
	}
	// The deterministic variant: the operator's signature over the same message is the same
	// whatever the blinding, so only the device's jti keeps two assertions apart.
	as2, _ := d.agent.ClientAssertion(ctx, "https://auth.shop.example")
	if as2 == as {
		t.Fatal("two assertions are identical; the jti must differ")
	}
}

// TestDeviceProofsChecked: requests without a valid proof of an enrolled device are refused,
// and a proof is good for one request only.
func TestDeviceProofsChecked(t *testing.T) {
	inst := startOperator(t, opts{}, "")
	d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, time.Now()), nil)
	k, _ := jwk.ParseKey(d.bundle.PrivateJWK)
	var priv ecdsa.PrivateKey
	if err := jwk.Export(k, &priv); err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	kid, _, _ := d.op.SigningKey(context.Background())
	two := make([]byte, 256)
	two[255] = 2 // a value a device's blinding can produce
	body, _ := json.Marshal(identity.SignRequest{Kid: kid, BlindedMessage: base64.RawURLEncoding.EncodeToString(two)})
	signURL := inst.url + "/v1/sign"
	proof := func(key *ecdsa.PrivateKey, id, url string, b []byte, at time.Time) string {
		p, err := identity.SignDeviceProof(key, id, "POST", url, b, at)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	replayed := proof(&priv, d.bundle.DeviceID, signURL, body, time.Now())
	send := func(p string) (int, identity.OperatorError) {
		req, _ := http.NewRequest("POST", signURL, bytes.NewReader(body))
		if p != "" {
			req.Header.Set("Authorization", identity.DeviceProofScheme+" "+p)
		}
		resp, err := inst.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var oe identity.OperatorError
		json.NewDecoder(resp.Body).Decode(&oe)
		return resp.StatusCode, oe
	}
	if code, _ := send(replayed); code != 200 && code != 400 {
		t.Fatalf("the first use of a proof: %d", code)
	}
	for _, tc := range []struct {
		name, proof, want string
	}{
		{"no proof", "", "no device proof"},
		{"replayed", replayed, "already used"},
		{"another key", proof(other, d.bundle.DeviceID, signURL, body, time.Now()), "does not verify"},
		{"unknown device", proof(&priv, "dev_unknown", signURL, body, time.Now()), "not enrolled"},
		{"other URL", proof(&priv, d.bundle.DeviceID, inst.url+"/v1/devices", body, time.Now()), "is for"},
		{"other body", proof(&priv, d.bundle.DeviceID, signURL, []byte("{}"), time.Now()), "body"},
		{"old", proof(&priv, d.bundle.DeviceID, signURL, body, time.Now().Add(-2*time.Minute)), "clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, oe := send(tc.proof)
			if code != http.StatusUnauthorized || oe.Code != identity.OperatorErrDevice || !strings.Contains(oe.Description, tc.want) {
				t.Fatalf("= %d %+v, want 401 invalid_device with %q", code, oe, tc.want)
			}
		})
	}
	if err := inst.store.Revoke(context.Background(), d.bundle.DeviceID, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err := d.agent.ClientAssertion(context.Background(), "https://auth.shop.example")
	var re *identity.OperatorRefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "enroll it again") {
		t.Fatalf("a revoked device: %v", err)
	}
}

// TestQuotaExceeded: over its hourly or daily quota, a device gets HTTP 429 with Retry-After and
// words saying when it may ask again, and nothing is signed; in the next window it signs again.
func TestQuotaExceeded(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(time.Date(2026, 5, 2, 10, 45, 0, 0, time.UTC))
	inst := startOperator(t, opts{clock: clk, perHour: 3, perDay: 5}, "")
	d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, clk.Now()), clk.Now)
	sign := func() error {
		_, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example")
		return err
	}
	for i := range 3 {
		if err := sign(); err != nil {
			t.Fatalf("signature %d: %v", i+1, err)
		}
	}
	err := sign()
	var qe *identity.OperatorQuotaError
	if !errors.As(err, &qe) || qe.RetryAfter != 15*time.Minute || !qe.At.Equal(clk.Now().Add(15*time.Minute)) {
		t.Fatalf("the 4th signature in an hour: %v", err)
	}
	for _, want := range []string{"3 per hour", "11:00:00 UTC", "in 15m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	// The raw answer: 429, Retry-After in seconds.
	kid, _, _ := d.op.SigningKey(ctx)
	two := make([]byte, 256)
	two[255] = 2 // a value a device's blinding can produce
	body, _ := json.Marshal(identity.SignRequest{Kid: kid, BlindedMessage: base64.RawURLEncoding.EncodeToString(two)})
	status, hdr, _ := rawSign(t, inst, d, body, clk.Now())
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "900" {
		t.Fatalf("over quota: %d Retry-After %q", status, hdr.Get("Retry-After"))
	}
	if got := inst.srv.Stats().Signatures; got != 3 {
		t.Fatalf("signatures made = %d, want 3", got)
	}
	clk.Advance(15 * time.Minute) // 11:00: a new hour, 2 left today
	for i := range 2 {
		if err := sign(); err != nil {
			t.Fatalf("signature %d of the new hour: %v", i+1, err)
		}
	}
	err = sign()
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "5 per day") || !strings.Contains(err.Error(), "00:00:00 UTC") {
		t.Fatalf("over the daily quota: %v", err)
	}
	clk.Advance(13 * time.Hour) // the next day
	if err := sign(); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

// TestUnreachableOperator: a device whose operator is down gets an error that says so and what
// still works; nothing is signed by another key.
func TestUnreachableOperator(t *testing.T) {
	inst := startOperator(t, opts{}, "")
	d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, time.Now()), nil)
	if _, err := d.agent.ClientAssertion(context.Background(), "https://auth.shop.example"); err != nil {
		t.Fatal(err)
	}
	inst.http.Close()
	_, err := d.agent.ClientAssertion(context.Background(), "https://auth.shop.example")
	var ue *identity.OperatorUnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot be reached") || !strings.Contains(err.Error(), "current delegations") {
		t.Fatalf("with the operator down: %v", err)
	}
}
