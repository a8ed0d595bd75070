package operator_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
)

// rawSign sends body to the sign endpoint with a fresh device proof of d made at now, as a
// device that writes its own requests would.
func rawSign(t *testing.T, inst *instance, d *device, body []byte, now time.Time) (int, http.Header, identity.OperatorError) {
	t.Helper()
	k, err := jwk.ParseKey(d.bundle.PrivateJWK)
	if err != nil {
		t.Fatal(err)
	}
	var priv ecdsa.PrivateKey
	if err := jwk.Export(k, &priv); err != nil {
		t.Fatal(err)
	}
	return postWithProof(t, inst, &priv, d.bundle.DeviceID, "/v1/sign", body, now)
}

// TestStrictInputBeforeQuota: a device whose quota is one signature an hour sends every kind of
// malformed sign request — blinded values outside RFC 9474 BlindSign's range (n, 2^bits−1),
// the trivial 0, 1 and n−1, the wrong length, not base64url, not JSON, a key the operator does
// not have. Each is refused in words, none is signed, none is counted: the hour's one signature
// is still there afterwards, and used once.
func TestStrictInputBeforeQuota(t *testing.T) {
	ctx := context.Background()
	keys := keySet(t, testKey(t, time.Time{}))
	inst := startOperator(t, opts{keys: keys, perHour: 1, perDay: 1}, "")
	d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, time.Now()), nil)
	kid := keys.Keys()[0].Kid
	n := keys.Keys()[0].PrivateKeyForBenchmark().N
	size := (n.BitLen() + 7) / 8
	val := func(x *big.Int) string { return base64.RawURLEncoding.EncodeToString(x.FillBytes(make([]byte, size))) }
	one := big.NewInt(1)
	all := new(big.Int).Sub(new(big.Int).Lsh(one, uint(size*8)), one)
	req := func(kid, msg string) []byte {
		b, _ := json.Marshal(identity.SignRequest{Kid: kid, BlindedMessage: msg})
		return b
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		want   string
	}{
		{"n", req(kid, val(n)), 400, "not below the key's modulus"},
		{"all ones", req(kid, val(all)), 400, "not below the key's modulus"},
		{"zero", req(kid, val(big.NewInt(0))), 400, "0, 1 or n−1"},
		{"one", req(kid, val(one)), 400, "0, 1 or n−1"},
		{"n-1", req(kid, val(new(big.Int).Sub(n, one))), 400, "0, 1 or n−1"},
		{"short", req(kid, base64.RawURLEncoding.EncodeToString(make([]byte, size-1))), 400, "must be 256 bytes"},
		{"not base64url", req(kid, strings.Repeat("*", 10)), 400, "not base64url"},
		{"not JSON", []byte("kid=x"), 400, "the body must be"},
		{"unknown key", req("no-such-kid", val(big.NewInt(2))), 409, "no key of this operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, oe := rawSign(t, inst, d, tc.body, time.Now())
			if status != tc.status || !strings.Contains(oe.Description, tc.want) {
				t.Fatalf("= %d %+v, want %d with %q", status, oe, tc.status, tc.want)
			}
		})
	}
	if got := inst.srv.Stats().Signatures; got != 0 {
		t.Fatalf("%d malformed requests were signed", got)
	}
	lim := []operator.Limit{{Window: "hour", Max: 1}, {Window: "day", Max: 1}}
	if used, err := inst.store.Usage(ctx, d.bundle.DeviceID, lim, time.Now()); err != nil || used["hour"] != 0 || used["day"] != 0 {
		t.Fatalf("after malformed requests the quota used is %v (%v); want nothing counted", used, err)
	}
	if _, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example"); err != nil {
		t.Fatalf("the hour's one signature after the malformed requests: %v", err)
	}
	if used, _ := inst.store.Usage(ctx, d.bundle.DeviceID, lim, time.Now()); used["hour"] != 1 {
		t.Fatalf("the good signature counted %v", used)
	}
}
