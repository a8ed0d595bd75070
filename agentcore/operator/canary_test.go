package operator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// canary is a value that must not reach the operator, with what it is.
type canary struct{ what, value string }

// forms are the encodings a value could be stored or logged in.
func forms(v string) []string {
	out := []string{v}
	if len(v) >= 8 {
		out = append(out, base64.RawURLEncoding.EncodeToString([]byte(v)), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	return out
}

// TestCanaryOperatorLearnsNoCompany: devices of two Users work with three Companies: client
// assertions for each issuer, delegations for delegated keys, Session JWTs with their User IDs,
// all blind-signed by one operator. Then the operator's whole database (the SQLite file and its
// write-ahead log, byte for byte, and every row) and its logs are scanned for every Company
// identifier, issuer, User ID, jti, assertion, delegation, Session JWT and signing input. None
// may appear. Controls prove the scan sees what the operator did write: the device IDs are
// found in the database and its rows, and the routes in the logs.
func TestCanaryOperatorLearnsNoCompany(t *testing.T) {
	ctx := context.Background()
	logs := &syncBuffer{}
	inst := startOperator(t, opts{logs: logs}, "")
	companies := []string{"https://auth.shop-canary.example", "https://auth.bank-canary.example", "https://clinic-canary.example"}
	var canaries []canary
	add := func(what string, vals ...string) {
		for _, v := range vals {
			canaries = append(canaries, canary{what, v})
		}
	}
	var deviceIDs []string
	for range 2 {
		d := enrollDevice(t, inst, nil, enrollToken(t, inst.store, time.Now()), nil)
		deviceIDs = append(deviceIDs, d.bundle.DeviceID)
		secrets := store.NewSecrets(store.NewMemoryKV())
		m, err := session.NewManager(session.Config{Secrets: secrets, Delegator: d.agent})
		if err != nil {
			t.Fatal(err)
		}
		for _, co := range companies {
			add("Company identifier / issuer", co, strings.TrimPrefix(co, "https://"))
			for range 2 {
				as, err := d.agent.ClientAssertion(ctx, co)
				if err != nil {
					t.Fatal(err)
				}
				add("client assertion", as)
				addJWT(t, add, "client assertion", as)
			}
			s, err := m.Open(ctx, co, session.Options{Version: "0.4"})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, co+"/api/orders", nil)
			if err := s.SignRequest(ctx, req, ""); err != nil {
				t.Fatal(err)
			}
			sj := req.Header.Get("Poppy-Session")
			add("Session JWT", sj)
			add("User ID", s.UserID())
			addJWT(t, add, "Session JWT", sj)
			b, err := secrets.LoadCompany(ctx, co, "")
			if err != nil || len(b.Delegated) == 0 {
				t.Fatalf("no delegation was made for %s: %v", co, err)
			}
			for _, dk := range b.Delegated {
				add("delegation", dk.Delegation)
				addJWT(t, add, "delegation", dk.Delegation)
			}
		}
	}
	if got := inst.srv.Stats().Signatures; got < int64(len(companies)*2*3) {
		t.Fatalf("only %d blind signatures were made", got)
	}

	// Everything the operator keeps: the database file with its WAL, every row, the logs.
	var raw []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(inst.dbPath + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	rows, err := inst.store.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	haystacks := map[string][]byte{"database file": raw, "database rows": []byte(strings.Join(rows, "\n")), "logs": []byte(logs.String())}

	// Controls: the scan sees what was written.
	for _, id := range deviceIDs {
		for _, h := range []string{"database file", "database rows"} {
			if !bytes.Contains(haystacks[h], []byte(id)) {
				t.Fatalf("control: the device ID %s is not found in the %s; the scan does not see what the operator wrote", id, h)
			}
		}
	}
	if !bytes.Contains(haystacks["logs"], []byte(`"route":"sign"`)) || !bytes.Contains(haystacks["logs"], []byte(`"route":"enroll"`)) {
		t.Fatalf("control: the logs hold no sign and enroll lines:\n%s", logs.String())
	}
	checked := 0
	for _, c := range canaries {
		for _, f := range forms(c.value) {
			for name, h := range haystacks {
				if bytes.Contains(h, []byte(f)) {
					t.Errorf("the %s holds a %s (%.40q)", name, c.what, f)
				}
			}
			checked++
		}
	}
	// The logs name no device either (spec 10.7: the operator logs neither the device nor the
	// blinded message).
	for _, id := range deviceIDs {
		if strings.Contains(logs.String(), id) {
			t.Errorf("the logs name the device %s", id)
		}
	}
	t.Logf("canary: %d values in %d forms checked against %d bytes of database, %d rows and %d bytes of logs; controls found %d device IDs",
		len(canaries), checked, len(raw), len(rows), len(logs.String()), len(deviceIDs))
}

// addJWT adds a JWT's jti, signing input and decoded claims' identifying values.
func addJWT(t *testing.T, add func(string, ...string), what, compact string) {
	t.Helper()
	parts := strings.Split(compact, ".")
	if len(parts) != 3 {
		t.Fatalf("%s is not a compact JWS", what)
	}
	add(what+" signing input", parts[0]+"."+parts[1])
	add(what+" payload", parts[1])
	add(what+" signature", parts[2])
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"jti", "aud", "sub", "sid"} {
		if v, ok := c[k].(string); ok {
			add(what+" "+k, v)
		}
	}
	// The delegated key in a delegation's cnf.jwk links it to the Session JWTs it signs.
	if cnf, ok := c["cnf"].(map[string]any); ok {
		if jk, ok := cnf["jwk"].(map[string]any); ok {
			add(what+" delegated key", jk["x"].(string))
		}
	}
}
