package operator_test

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudflare/circl/blindsign/blindrsa"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
)

// Ways a dishonest operator answers.
const (
	honest          = iota
	tamperSignature // flips a bit of every blind signature
	otherKeySigns   // signs with a key it does not publish, under the published key's kid
	deviceOnlyKeys  // tells devices to use a key set (and key) Companies are not shown
	keyPerDevice    // publishes a key set with a key for every device
)

// dishonest wraps a real operator's handler and lies in one of the ways above; in honest mode
// it passes everything through.
type dishonest struct {
	inner http.Handler
	mode  atomic.Int32
	base  string
	extra *rsa.PrivateKey // the key it does not show Companies
	extraPub,
	manyKeys []byte // its public JWKS, and a JWKS of 20 keys
	extraKid string
}

func newDishonest(t *testing.T, inst *instance) *dishonest {
	t.Helper()
	keys, err := operator.ParseKeys(testKey(t, time.Time{}), "extra.pem")
	if err != nil {
		t.Fatal(err)
	}
	d := &dishonest{inner: inst.srv.Handler(), base: inst.url, extra: keys[0].PrivateKeyForBenchmark(), extraKid: keys[0].Kid}
	ks := keySet(t, testKey(t, time.Time{}))
	set, _ := ks.PublicSet()
	d.extraPub = jwksOf(t, keys[0].Kid, &d.extra.PublicKey)
	for i := range 20 {
		priv := d.extra
		if i > 0 {
			priv = ks.Keys()[0].PrivateKeyForBenchmark() // the key material does not matter, the count does
		}
		k, _ := jwk.Import(&priv.PublicKey)
		k.Set(jwk.KeyIDKey, fmt.Sprintf("device-key-%d", i))
		set.AddKey(k)
	}
	d.manyKeys, _ = json.Marshal(set)
	inst.http.Config.Handler = d
	return d
}

func jwksOf(t *testing.T, kid string, pub *rsa.PublicKey) []byte {
	t.Helper()
	k, err := jwk.Import(pub)
	if err != nil {
		t.Fatal(err)
	}
	k.Set(jwk.KeyIDKey, kid)
	k.Set(jwk.AlgorithmKey, "PS384")
	set := jwk.NewSet()
	set.AddKey(k)
	b, _ := json.Marshal(set)
	return b
}

func (d *dishonest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode := d.mode.Load()
	if mode == honest {
		d.inner.ServeHTTP(w, r)
		return
	}
	switch {
	case r.URL.Path == "/device-keys.json" && mode == deviceOnlyKeys:
		w.Header().Set("Content-Type", "application/json")
		w.Write(d.extraPub)
		return
	case r.URL.Path == "/jwks.json" && mode == keyPerDevice:
		w.Header().Set("Content-Type", "application/json")
		w.Write(d.manyKeys)
		return
	case r.URL.Path == identity.OperatorConfigPath && mode == deviceOnlyKeys:
		rec := httptest.NewRecorder()
		d.inner.ServeHTTP(rec, r)
		var c identity.OperatorConfig
		json.Unmarshal(rec.Body.Bytes(), &c)
		c.JWKSURI, c.SigningKid, c.Keys = d.base+"/device-keys.json", d.extraKid, []identity.OperatorKey{{Kid: d.extraKid}}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c)
		return
	case r.URL.Path == "/v1/sign" && (mode == tamperSignature || mode == otherKeySigns || mode == deviceOnlyKeys):
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		d.inner.ServeHTTP(rec, r)
		var out identity.SignResponse
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(out.BlindSignature)
		if mode == tamperSignature {
			sig[len(sig)/2] ^= 0x10
		} else {
			var req identity.SignRequest
			json.Unmarshal(body, &req)
			blinded, _ := base64.RawURLEncoding.DecodeString(req.BlindedMessage)
			sig, _ = blindrsa.NewSigner(d.extra).BlindSign(blinded)
		}
		out.BlindSignature = base64.RawURLEncoding.EncodeToString(sig)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
		return
	}
	d.inner.ServeHTTP(w, r)
}

// TestDishonestOperator plays an operator that lies to its devices, and checks that a device
// refuses each lie in words and hands out no JWT: a tampered blind signature, a signature by a
// key it does not publish, a signing key Companies are not shown (at enrollment and later), and
// a key set with a key for every device. Between the lies, the same device still signs when the
// operator is honest again.
func TestDishonestOperator(t *testing.T) {
	ctx := context.Background()
	inst := startOperator(t, opts{}, "")
	op := newDishonest(t, inst)
	d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, time.Now()), nil)
	sign := func() (string, error) { return d.agent.ClientAssertion(ctx, "https://auth.shop.example") }
	if _, err := sign(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		mode  int32
		words []string
	}{
		{"tampered blind signature", tamperSignature, []string{"does not unblind into a valid signature by its key"}},
		{"signed by a key it does not publish", otherKeySigns, []string{"does not unblind into a valid signature by its key"}},
		{"a key set with a key per device", keyPerDevice, []string{"holds 21 keys", "at most 8", "recognise your signatures"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op.mode.Store(tc.mode)
			// A new device (no cached key set) meets the lie at once.
			fresh, err := identity.NewRemoteOperator(identity.RemoteConfig{Device: d.bundle, HTTPClient: inst.client})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := identity.New(identity.Config{ClientID: d.bundle.ClientID, JWKSURI: d.bundle.JWKSURI}, fresh, nil)
			tok, err := a.ClientAssertion(ctx, "https://auth.shop.example")
			if err == nil {
				t.Fatalf("the device accepted the lie and made %.40s…", tok)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal %q does not say %q", err, w)
				}
			}
			op.mode.Store(honest)
			if _, err := sign(); err != nil {
				t.Fatalf("honest again: %v", err)
			}
		})
	}

	// A signing key Companies are not shown: the configuration names another key set (and a key
	// in it) than the client metadata document Companies read.
	t.Run("a key Companies are not shown", func(t *testing.T) {
		op.mode.Store(deviceOnlyKeys)
		defer op.mode.Store(honest)
		_, err := identity.Enroll(ctx, inst.client, inst.url, enrollToken(t, inst.store, time.Now()), nil)
		for _, w := range []string{"/device-keys.json", "shows Companies the key set at " + inst.url + "/jwks.json", "recognise your signatures", "another operator"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Fatalf("enrolling with an operator that shows devices other keys: %v; want words with %q", err, w)
			}
		}
		// An enrolled device whose operator now names a key only it is shown.
		fresh, _ := identity.NewRemoteOperator(identity.RemoteConfig{Device: d.bundle, HTTPClient: inst.client})
		bundle := *d.bundle
		bundle.JWKSURI = inst.url + "/device-keys.json"
		lied, _ := identity.NewRemoteOperator(identity.RemoteConfig{Device: &bundle, HTTPClient: inst.client})
		for name, o := range map[string]*identity.RemoteOperator{"enrolled honestly": fresh, "enrolled with the device-only key set": lied} {
			if _, err := o.Sign(ctx, op.extraKid, jwa.PS384(), []byte("eyJhbGciOiJQUzM4NCJ9.eyJqdGkiOiJ4In0")); err == nil || !strings.Contains(err.Error(), "recognise your signatures") {
				t.Errorf("%s: signing with a key Companies are not shown: %v", name, err)
			}
		}
	})
}
