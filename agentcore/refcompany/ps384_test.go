package refcompany_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// rsaOperator signs with one RSA key, as the keys of an operator that signs blindly do: the
// unblinded signature is an ordinary PS384 signature (spec 10.7).
type rsaOperator struct {
	priv *rsa.PrivateKey
	kid  string
	pub  jwk.Key
}

func newRSAOperator(t *testing.T) *rsaOperator {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := jwk.Import(&priv.PublicKey)
	kid, _ := identity.Thumbprint(pub)
	pub.Set(jwk.KeyIDKey, kid)
	// No alg member (it is optional in a JWK): the Company must still allow only ES256 and PS384.
	return &rsaOperator{priv: priv, kid: kid, pub: pub}
}

func (o *rsaOperator) SigningKey(context.Context) (string, jwa.SignatureAlgorithm, error) {
	return o.kid, jwa.PS384(), nil
}
func (o *rsaOperator) Sign(_ context.Context, _ string, alg jwa.SignatureAlgorithm, in []byte) ([]byte, error) {
	return jwsbb.Sign(o.priv, alg.String(), in, rand.Reader)
}
func (o *rsaOperator) PublicKeys(context.Context) (jwk.Set, error) {
	set := jwk.NewSet()
	return set, set.AddKey(o.pub)
}

// TestPS384ClientAssertionsAndDelegations: the reference Company accepts client assertions and
// delegations signed with PS384 (spec 4.1 and 5.2: Companies SHOULD), alongside ES256, and
// refuses a client assertion signed with any other algorithm, such as RS256 by the same key.
func TestPS384ClientAssertionsAndDelegations(t *testing.T) {
	ctx := context.Background()
	s, c := start(t, refcompany.Options{})
	op := newRSAOperator(t)
	agent, err := identity.New(identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json")}, op, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.AddHost(refcompany.AgentHost, agent.Handler(nil))

	token := func(assertion string) (int, string) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"not-a-refresh-token"},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}}
		resp, err := c.PostForm(s.Issuer()+"/oauth/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &e)
		return resp.StatusCode, e.Error
	}
	ps, err := agent.ClientAssertion(ctx, s.Issuer())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": agent.ClientID(), "sub": agent.ClientID(), "aud": s.Issuer(),
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": identity.NewID(16)})
	privJWK, _ := jwk.Import(op.priv)
	privJWK.Set(jwk.KeyIDKey, op.kid)
	rs, err := jws.Sign(claims, jws.WithKey(jwa.RS256(), privJWK))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, assertion, want string
	}{
		// invalid_grant: the client authenticated, and only the bogus refresh token was refused.
		{"PS384", ps, "invalid_grant"},
		{"RS256", string(rs), "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, code := token(tc.assertion); code != tc.want {
				t.Fatalf("token endpoint error = %q, want %q", code, tc.want)
			}
		})
	}

	// A Session JWT whose delegation is PS384 (sessioncheck, spec 5.2).
	m, err := session.NewManager(session.Config{Secrets: store.NewSecrets(store.NewMemoryKV()), Delegator: agent})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.Open(ctx, s.Issuer(), session.Options{Version: refcompany.ProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL(refcompany.ShopHost, "/api/products"), nil)
	if err := sess.SignRequest(ctx, req, ""); err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Poppy-Version", refcompany.ProtocolVersion)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Stormline") {
		t.Fatalf("a signed-out request with a PS384 delegation: %d %s", resp.StatusCode, body)
	}
	if alg := delegationAlg(t, req.Header.Get("Poppy-Session")); alg != "PS384" {
		t.Fatalf("the delegation's alg = %s, want PS384", alg)
	}
}

func delegationAlg(t *testing.T, sessionJWT string) string {
	t.Helper()
	msg, err := jws.Parse([]byte(sessionJWT))
	if err != nil {
		t.Fatal(err)
	}
	var dlg string
	if err := msg.Signatures()[0].ProtectedHeaders().Get("poppy_dlg", &dlg); err != nil {
		t.Fatal(err)
	}
	d, err := jws.Parse([]byte(dlg))
	if err != nil {
		t.Fatal(err)
	}
	alg, _ := d.Signatures()[0].ProtectedHeaders().Algorithm()
	return alg.String()
}
