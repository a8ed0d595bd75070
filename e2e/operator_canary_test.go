package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/cli"
)

// filesUnder reads every file below dir.
func filesUnder(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// filePlaces reads every file below dir: each file is a place, and all of them together one
// more, whose controls are the SQLite header and the operator's URL (the recorded operator).
func filePlaces(t *testing.T, dir, operatorURL string) (map[string][]byte, []place) {
	t.Helper()
	files := filesUnder(t, dir)
	var all []byte
	var places []place
	for name, data := range files {
		places = append(places, place{name: "the file " + name, data: data})
		all = append(all, data...)
	}
	return files, append(places, place{name: "every file under Poppydesk's folders", data: all, controls: []string{operatorURL, string(sqliteHeader)}})
}

// enrollmentSecrets are the secrets of an enrollment: the device's private key (its d) as the
// keyring holds it, and the enrollment token, which nothing keeps.
func enrollmentSecrets(t *testing.T, secrets store.Secrets, token string) (*store.DeviceBundle, []secret) {
	t.Helper()
	b, err := secrets.LoadDevice(context.Background())
	if err != nil {
		t.Fatalf("the enrollment is not in the keyring: %v", err)
	}
	var k struct{ D string }
	if err := json.Unmarshal(b.PrivateJWK, &k); err != nil || len(k.D) < 40 {
		t.Fatalf("the keyring's device key has no private part: %s", b.PrivateJWK)
	}
	// The rest of the private JWK is its public key, which the operator holds by design.
	return b, []secret{{"the device's private key d", k.D}, {"the enrollment token", token}}
}

// scanPlaces looks for every form of every secret in each place, and for each place's controls.
func scanPlaces(t *testing.T, when string, secrets []secret, places []place) {
	t.Helper()
	var needles []needle
	for _, s := range secrets {
		needles = append(needles, forms(s)...)
	}
	for _, p := range places {
		for _, n := range needles {
			if bytes.Contains(p.data, []byte(n.value)) {
				t.Errorf("%s: %s holds a secret: %s (%s)", when, p.name, n.what, n.form)
			}
		}
		for _, c := range p.controls {
			if !bytes.Contains(p.data, []byte(c)) {
				t.Errorf("%s: control value %q not found in %s: the scan would not see a leak there", when, c, p.name)
			}
		}
	}
}

// TestCanaryOperatorEnrollment (spec 10.2, 10.7): a Poppydesk enrolls with an operator through
// Settings → Identity (the window's Settings service over the Host), and another through
// `poppydesk operator enroll`, each with the REAL keyring. Afterwards the device's private key
// and the enrollment token are looked for, in every encoding the canary knows, in every file
// each Poppydesk wrote (state database with its WAL, logs, everything under its folders), in
// what the command printed, and in every row of the operator's database: only the keyring may
// hold the key, and nothing the token. Controls: the operator's URL and the device ID are found
// where Poppydesk writes them.
func TestCanaryOperatorEnrollment(t *testing.T) {
	ctx := context.Background()
	clk := &refcompany.Clock{}
	op := apptest.StartOperator(t, apptest.OperatorOptions{Clock: clk})

	t.Run("Settings", func(t *testing.T) {
		kr := canaryKeyring(t)
		secrets := store.NewSecrets(kr)
		dir := t.TempDir()
		logFile := filepath.Join(dir, "poppydesk-test.log")
		lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		f := apptest.Start(t, apptest.Options{Clock: clk, Dir: dir, Secrets: secrets, Edit: func(c *app.Config) {
			op.Trust(c)
			c.Logger = app.NewLogger(lf, slog.LevelDebug)
		}})
		token := op.Token(t)
		if _, err := f.Fronts().Settings.EnrollOperator(op.URL, token); err != nil {
			t.Fatalf("enrolling in Settings: %v", err)
		}
		if st := f.Host.CheckOperator(ctx); !st.Reachable {
			t.Fatalf("the operator check after enrolling: %+v", st)
		}
		b, found := enrollmentSecrets(t, secrets, token)
		files, places := filePlaces(t, dir, op.URL)
		places = append(places,
			place{name: "the Host's log", data: files["poppydesk-test.log"], controls: []string{`"msg":"enrolled with an operator for the next start"`, op.URL}},
			operatorRows(t, op, b.DeviceID))
		scanPlaces(t, "after enrolling in Settings", found, places)
	})

	t.Run("CLI", func(t *testing.T) {
		kr := canaryKeyring(t)
		secrets := store.NewSecrets(kr)
		dir := t.TempDir()
		caFile := filepath.Join(t.TempDir(), "operator-ca.pem")
		if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: op.CA.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		vars := map[string]string{"XDG_DATA_HOME": filepath.Join(dir, "data"), "XDG_CONFIG_HOME": filepath.Join(dir, "config"),
			"XDG_STATE_HOME": filepath.Join(dir, "state"), "XDG_RUNTIME_DIR": filepath.Join(dir, "run")}
		var stdout, stderr bytes.Buffer
		token := op.Token(t)
		code := cli.Run(ctx, []string{"operator", "enroll", op.URL, "--token", token, "--dev-ca", caFile, "--dev-allow-loopback"},
			cli.Env{Version: "test", Getenv: func(k string) string { return vars[k] }, Home: dir, Secrets: secrets, Stdout: &stdout, Stderr: &stderr})
		if code != 0 {
			t.Fatalf("poppydesk operator enroll: %d\n%s%s", code, stdout.String(), stderr.String())
		}
		b, found := enrollmentSecrets(t, secrets, token)
		_, places := filePlaces(t, dir, op.URL)
		places = append(places,
			place{name: "what the command printed", data: append(stdout.Bytes(), stderr.Bytes()...), controls: []string{b.DeviceID, op.URL}},
			operatorRows(t, op, b.DeviceID))
		scanPlaces(t, "after `poppydesk operator enroll`", found, places)
	})
}

// operatorRows is every row of the operator's database as a place; the device's ID is its
// control.
func operatorRows(t *testing.T, op *apptest.Operator, deviceID string) place {
	t.Helper()
	rows, err := op.Store.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return place{name: "the operator's database rows", data: []byte(strings.Join(rows, "\n")), controls: []string{deviceID}}
}
