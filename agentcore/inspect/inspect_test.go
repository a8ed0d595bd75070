package inspect_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// TestDecodeSignedRequest signs a request as the engine does (a real Session JWT with its
// delegation, a client assertion in a form body) and checks what Decode keeps: the claims a
// developer needs, the User ID hidden, no signature and no compact JWT anywhere.
func TestDecodeSignedRequest(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Unix(1790900000, 0) }
	secrets := store.NewSecrets(store.NewMemoryKV())
	agent, err := identity.New(identity.Config{ClientID: "https://agent.localhost:8444/agent.json"}, identity.NewLocalOperator(secrets, now), now)
	if err != nil {
		t.Fatal(err)
	}
	m, err := session.NewManager(session.Config{Secrets: secrets, Delegator: agent, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.Open(ctx, "https://auth.shop.localhost:8443", session.Options{Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://shop.localhost:8443/api/orders?x=1", nil)
	const token = "tok_SECRET_value_1234567890"
	if err := sess.SignRequest(ctx, req, token); err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	assertion, err := agent.ClientAssertion(ctx, "https://auth.shop.localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	tokReq, _ := http.NewRequest(http.MethodPost, "https://auth.shop.localhost:8443/token", nil)
	tokReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt_SECRET"}, "client_assertion": {assertion}}.Encode()

	cctx := inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	d := inspect.Decode(cctx, req, nil, http.Header{"Deprecation": {"@1790000000"}}, nil).(*inspect.Details)
	d2 := inspect.Decode(ctx, tokReq, []byte(body), http.Header{"Content-Type": {"application/json"}},
		[]byte(`{"access_token":"`+assertion+`","token_type":"Bearer"}`)).(*inspect.Details)

	if d.Cause == nil || d.Cause.Name != "call_api_operation" {
		t.Errorf("cause = %+v", d.Cause)
	}
	if d.SID != sess.SID {
		t.Errorf("sid = %q, want %q", d.SID, sess.SID)
	}
	byWhere := map[string]inspect.Token{}
	for _, tk := range append(d.Tokens, d2.Tokens...) {
		byWhere[strings.Fields(tk.Where)[0]+" "+strings.Fields(tk.Where)[1]] = tk
	}
	sj := byWhere["Session JWT"]
	for _, c := range []string{"iss", "aud", "sid", "htm", "htu", "iat", "jti", "ath"} {
		if _, ok := sj.Claims[c]; !ok {
			t.Errorf("Session JWT claim %s missing: %v", c, sj.Claims)
		}
	}
	if sj.Claims["sub"] != inspect.Hidden {
		t.Errorf("sub = %v, want hidden", sj.Claims["sub"])
	}
	if dl := byWhere["delegation (poppy_dlg)"]; dl.Header["typ"] != "poppy-delegation+jwt" || dl.Claims["cnf"] == nil {
		t.Errorf("delegation = %+v", dl)
	}
	if ca := byWhere["client assertion"]; ca.Claims["aud"] != "https://auth.shop.localhost:8443" {
		t.Errorf("client assertion = %+v", ca)
	}
	if at := byWhere["access token"]; !strings.Contains(at.Note, "opaque") {
		t.Errorf("access token = %+v", at)
	}
	if len(d.Findings) != 1 || d.Findings[0].Rule != inspect.RuleVersionDeprecation || d.Findings[0].Section != "spec 3.4" {
		t.Errorf("findings = %+v", d.Findings)
	}
	all := string(d.Marshal()) + string(d2.Marshal())
	for _, secret := range []string{token, "rt_SECRET", sess.UserID(), req.Header.Get("Poppy-Session"), assertion, strings.Split(assertion, ".")[2]} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret is in the details: %.20s…", secret)
		}
	}
	// Control: the details do hold what was decoded.
	if !strings.Contains(all, sess.SID) {
		t.Error("control: the sid is not in the details")
	}
	var back inspect.Details
	if err := json.Unmarshal(d.Marshal(), &back); err != nil || len(back.Tokens) != len(d.Tokens) {
		t.Errorf("round trip: %v", err)
	}
}

func TestUndeclaredOperation(t *testing.T) {
	tests := []struct {
		name, ext string
		want      int
	}{
		{"declared", `"operations";v="2"`, 0},
		{"undeclared", ``, 1},
		{"other version", `"operations";v="1"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "https://shop.localhost/api/x", nil)
			req.Header.Set("Poppy-Session", "x")
			if tt.ext != "" {
				req.Header.Set("Poppy-Extensions", tt.ext)
			}
			got := inspect.ExchangeFindings(req, http.Header{}, []byte(`{"error":"approval_required","operation":{"id":"op"}}`))
			if len(got) != tt.want {
				t.Fatalf("findings = %+v", got)
			}
			if tt.want == 1 && got[0].Section != "Operations 2" {
				t.Errorf("section = %s", got[0].Section)
			}
		})
	}
}

func TestRulesCatalog(t *testing.T) {
	for _, r := range inspect.Rules() {
		if r.Section == "" || r.Expected == "" || r.Fix == "" || r.Title == "" {
			t.Errorf("rule %s is incomplete: %+v", r.ID, r)
		}
		switch r.Level {
		case inspect.MUST, inspect.SHOULD, inspect.NOTE:
		default:
			t.Errorf("rule %s has level %q", r.ID, r.Level)
		}
	}
}
