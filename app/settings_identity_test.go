package app_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/vault"
)

// testSecrets is the real Secret Service under a throwaway service name (run the tests through
// scripts/with-keyring.sh). Without a D-Bus session it is the same typed store over memory,
// which the Host also accepts (Config.Secrets), unless POPPYDESK_REQUIRE_KEYRING=1.
func testSecrets(t *testing.T) store.Secrets {
	t.Helper()
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but there is no D-Bus session: run through scripts/with-keyring.sh")
		}
		t.Log("no D-Bus session: the enrollment is kept in memory; run through scripts/with-keyring.sh for the Secret Service")
		return store.NewSecrets(store.NewMemoryKV())
	}
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	kr := vault.NewKeyring(vault.KeyringOptions{Service: "poppydesk-test-" + hex.EncodeToString(buf)})
	if _, err := kr.Get(context.Background(), "probe"); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the Secret Service does not answer: %v", err)
	}
	t.Cleanup(func() { _ = kr.DeleteAll(context.Background()) })
	return store.NewSecrets(kr)
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestSettingsIdentityEnrollsWithAnOperator drives Settings → Identity through the window's
// Settings service with a real operator (agentcore/operator over SQLite on loopback TLS): every
// wrong enrollment (not HTTPS, nothing listening, not an operator, no token, a wrong token, a
// used token) is refused in words that say what to do, and records nothing; the right token
// enrolls this device for the next start, and the check shows the operator's client_name and
// logo as a data: URL; after a restart Poppydesk signs as the operator; "use my own identity"
// deletes the enrollment and the next start signs with the self-operated identity again.
func TestSettingsIdentityEnrollsWithAnOperator(t *testing.T) {
	ctx := context.Background()
	clk := &refcompany.Clock{}
	op := apptest.StartOperator(t, apptest.OperatorOptions{ClientName: "Acme Agents", Clock: clk})
	secrets := testSecrets(t)
	f := apptest.Start(t, apptest.Options{Clock: clk, Secrets: secrets, Edit: op.Trust})
	own := f.Host.ClientID()
	s := f.Fronts().Settings

	nothingRecorded := func(what string) {
		t.Helper()
		if v, err := f.Host.State().GetSetting(ctx, app.SettingOperator); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the operator %q was recorded (%v)", what, v, err)
		}
		if b, err := secrets.LoadDevice(ctx); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: an enrollment is in the secret store: %+v (%v)", what, b, err)
		}
		id, err := s.Identity()
		if err != nil || id.Mode != app.IdentitySelf || id.Next != app.IdentitySelf || id.Restart || id.Operator != "" || id.ClientID != own {
			t.Errorf("%s: Identity = %+v, %v; want the own identity %s, no restart", what, id, err, own)
		}
	}
	nothingRecorded("at start")
	if st, _ := s.CheckOperator(); st.Reachable || !strings.Contains(st.Error, "not enrolled with an operator") {
		t.Errorf("CheckOperator without an enrollment = %+v", st)
	}

	wrong := []struct {
		name, url, token string
		words            []string
	}{
		{"no URL", "  ", "", []string{"enter the operator's URL"}},
		{"not HTTPS", "http://" + apptest.OperatorHost + ":1", "", []string{"must be an HTTPS URL"}},
		{"nothing listening", fmt.Sprintf("https://%s:%d", apptest.OperatorHost, closedPort(t)), op.Token(t),
			[]string{"could not reach the operator", "Check the URL and this computer's network", "ask its administrator"}},
		{"not an operator", f.Company.Origin(), op.Token(t), []string{"answered, but not as a Poppydesk operator", "HTTP 404", "check the URL"}},
		{"no token", op.URL, "", []string{"only with an enrollment token from its administrator", "enter the token"}},
		{"wrong token", op.URL, "ppd_enroll_not-a-token", []string{"refused the enrollment token", "ask the operator's administrator for a new one"}},
	}
	for _, tc := range wrong {
		info, err := s.EnrollOperator(tc.url, tc.token)
		if err == nil {
			t.Errorf("%s: enrolled: %+v", tc.name, info)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		for _, w := range tc.words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error %q does not say %q", tc.name, err, w)
			}
		}
		nothingRecorded(tc.name)
	}
	if n := op.Server.Stats().Enrolled; n != 0 {
		t.Fatalf("the operator enrolled %d devices for wrong enrollments", n)
	}

	// The right token: enrolled for the next start.
	tok := op.Token(t)
	info, err := s.EnrollOperator(op.URL+"/", tok)
	if err != nil {
		t.Fatalf("enrolling: %v", err)
	}
	if info.Mode != app.IdentitySelf || info.Next != app.IdentityOperator || info.NextOperator != op.URL || info.Operator != op.URL ||
		!info.Restart || !strings.HasPrefix(info.DeviceID, "dev_") || info.ClientID != own {
		t.Fatalf("after enrolling, Identity = %+v; want the operator %s from the next start", info, op.URL)
	}
	if v, err := f.Host.State().GetSetting(ctx, app.SettingOperator); err != nil || v != op.URL {
		t.Fatalf("the recorded operator = %q, %v", v, err)
	}
	if _, err := op.Store.DeviceKey(ctx, info.DeviceID); err != nil {
		t.Fatalf("the operator does not know the device %s: %v", info.DeviceID, err)
	}
	wantLogo := "data:image/png;base64," + base64.StdEncoding.EncodeToString(identity.DefaultLogoPNG())
	check := func(inUse bool) {
		t.Helper()
		st, err := s.CheckOperator()
		if err != nil || !st.Reachable || st.Error != "" || st.InUse != inUse {
			t.Fatalf("CheckOperator = %+v, %v", st, err)
		}
		if st.ClientName != "Acme Agents" || st.ClientID != op.URL+"/agent.json" || st.LogoURI != op.URL+"/logo.png" || st.Logo != wantLogo || st.LogoProblem != "" {
			t.Errorf("CheckOperator shows %q %s, logo %s (%d characters, %q); want the operator's client_name, client_id and logo as a data: URL",
				st.ClientName, st.ClientID, st.LogoURI, len(st.Logo), st.LogoProblem)
		}
		if st.SigningKid != op.Kid || st.Enrollment != identity.EnrollmentToken || st.PerHour != 200 || st.PerDay != 2000 {
			t.Errorf("CheckOperator: kid %s, enrollment %s, quota %d/%d", st.SigningKid, st.Enrollment, st.PerHour, st.PerDay)
		}
	}
	check(false)

	// A used token is refused, and the enrollment made stays as it is.
	if _, err := s.EnrollOperator(op.URL, tok); err == nil || !strings.Contains(err.Error(), "refused the enrollment token") {
		t.Errorf("enrolling again with the used token: %v", err)
	}
	if again, _ := s.Identity(); again.DeviceID != info.DeviceID || again.Next != app.IdentityOperator {
		t.Errorf("a refused enrollment changed the enrollment: %+v", again)
	}

	// The next start signs as the operator.
	f.Restart(t)
	s = f.Fronts().Settings
	if p := f.Host.Problem(); p != nil {
		t.Fatalf("after the restart: %v", p)
	}
	id, _ := s.Identity()
	if id.Mode != app.IdentityOperator || id.ClientID != op.URL+"/agent.json" || id.ClientName != "Acme Agents" || id.Restart || id.DeviceID != info.DeviceID {
		t.Fatalf("after the restart, Identity = %+v", id)
	}
	check(true)

	// Use my own identity: from the next start, and the enrollment is deleted.
	id, err = s.UseOwnIdentity()
	if err != nil || id.Mode != app.IdentityOperator || id.Next != app.IdentitySelf || id.OwnClientID != own || !id.Restart {
		t.Fatalf("UseOwnIdentity = %+v, %v", id, err)
	}
	if _, err := secrets.LoadDevice(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the enrollment is still in the secret store: %v", err)
	}
	f.Restart(t)
	s = f.Fronts().Settings
	nothingRecorded("after using the own identity and a restart")
}

// TestSettingsIdentityInTheDemo: the demo's identity is its own; it offers no enrollment.
func TestSettingsIdentityInTheDemo(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Demo: true})
	s := f.Fronts().Settings
	id, err := s.Identity()
	if err != nil || id.Mode != app.IdentityDemo || id.Next != app.IdentityDemo || id.Restart || id.ClientID == "" {
		t.Fatalf("Identity in the demo = %+v, %v", id, err)
	}
	for name, err := range map[string]error{
		"EnrollOperator": func() error { _, err := s.EnrollOperator("https://operator.example", "t"); return err }(),
		"UseOwnIdentity": func() error { _, err := s.UseOwnIdentity(); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "the demo signs with its own identity") {
			t.Errorf("%s in the demo: %v", name, err)
		}
	}
	if st, _ := s.CheckOperator(); !strings.Contains(st.Error, "the demo signs with its own identity") {
		t.Errorf("CheckOperator in the demo = %+v", st)
	}
}
