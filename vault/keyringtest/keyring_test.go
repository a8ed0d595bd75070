package keyringtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// The vault's Keyring is the engine's store.KV.
var _ store.KV = (*vault.Keyring)(nil)

// countingBackend wraps the real go-keyring backend and counts calls.
type countingBackend struct {
	vault.Backend
	calls atomic.Int64
}

func (c *countingBackend) Get(s, u string) (string, error) {
	c.calls.Add(1)
	return c.Backend.Get(s, u)
}
func (c *countingBackend) Set(s, u, p string) error { c.calls.Add(1); return c.Backend.Set(s, u, p) }
func (c *countingBackend) Delete(s, u string) error { c.calls.Add(1); return c.Backend.Delete(s, u) }
func (c *countingBackend) DeleteAll(s string) error { c.calls.Add(1); return c.Backend.DeleteAll(s) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// realKeyring returns a Keyring on the real Secret Service with a service name of its own, removed
// at the end of the test. It skips when no Secret Service is reachable, or fails if
// POPPYDESK_REQUIRE_KEYRING=1.
func realKeyring(tb testing.TB) (*vault.Keyring, *countingBackend) {
	tb.Helper()
	return realKeyringOn(tb, "")
}

// realKeyringOn is realKeyring with the keyring rules of platform (a GOOS; "" for this one).
func realKeyringOn(tb testing.TB, platform string) (*vault.Keyring, *countingBackend) {
	tb.Helper()
	be := &countingBackend{Backend: vault.SystemBackend()}
	k := vault.NewKeyring(vault.KeyringOptions{Service: "PoppydeskTest-" + randomHex(4), Backend: be, Platform: platform})
	_, err := k.Get(context.Background(), "probe")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		msg := fmt.Sprintf("no reachable Secret Service (%v); run the tests with `bash scripts/with-keyring.sh go test ./vault/...`", err)
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			tb.Fatalf("POPPYDESK_REQUIRE_KEYRING=1 but %s", msg)
		}
		tb.Skip(msg)
	}
	tb.Cleanup(func() {
		if err := k.DeleteAll(context.Background()); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	be.calls.Store(0)
	return k, be
}

func TestRealKeyringItems(t *testing.T) {
	ctx := context.Background()
	k, _ := realKeyring(t)
	tests := []struct {
		name  string
		value []byte
	}{
		{"root", []byte(`{"v":1,"keys":[{"kty":"EC"}]}`)},
		{"company/https%3A%2F%2Fshop.example/", []byte(`{"v":1,"user_id":"u-1"}`)},
		{"binary", []byte{0, 1, 2, 0xff, 0xfe}},
	}
	for _, tc := range tests {
		if err := k.Set(ctx, tc.name, tc.value); err != nil {
			t.Fatalf("Set(%s): %v", tc.name, err)
		}
	}
	// A second Keyring has no cache: it reads what the daemon holds.
	fresh := vault.NewKeyring(vault.KeyringOptions{Service: k.Service()})
	for _, tc := range tests {
		got, err := fresh.Get(ctx, tc.name)
		if err != nil || !bytes.Equal(got, tc.value) {
			t.Fatalf("Get(%s) from the daemon = %q, %v; want %q", tc.name, got, err, tc.value)
		}
	}
	// Cross-check with the keyring's own client: the JSON is stored as is.
	if v, ok := lookupOutside(t, k.Service(), "root"); !ok || v != string(tests[0].value) {
		t.Fatalf("looking up root outside go-keyring = %q, %v; want %q", v, ok, tests[0].value)
	}
	// Each item's label says what it holds; labels are set through the Secret Service only
	// (vault/keyring_label_linux.go): go-keyring gives the Credential Manager and the Keychain none.
	for name, want := range map[string]string{
		"root":                                k.Service() + ": the private key of your own identity",
		"company/https%3A%2F%2Fshop.example/": k.Service() + ": the keys and IDs Poppydesk uses at https://shop.example",
	} {
		if runtime.GOOS != "linux" {
			break
		}
		out, err := exec.Command("secret-tool", "search", "--all", "service", k.Service(), "username", name).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "label = "+want+"\n") {
			t.Errorf("secret-tool search %s: want the label %q:\n%s (%v)", name, want, out, err)
		}
	}
	names, err := fresh.Names(ctx)
	if err != nil || strings.Join(names, ",") != "binary,company/https%3A%2F%2Fshop.example/,root" {
		t.Fatalf("Names = %v, %v", names, err)
	}
	if err := fresh.Delete(ctx, "binary"); err != nil {
		t.Fatal(err)
	}
	if _, ok := lookupOutside(t, k.Service(), "binary"); ok {
		t.Fatal("a lookup outside go-keyring still finds a deleted item")
	}
	if _, err := vault.NewKeyring(vault.KeyringOptions{Service: k.Service()}).Get(ctx, "binary"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get after Delete = %v, want fs.ErrNotExist", err)
	}
}

func TestRealKeyringSecretsBundles(t *testing.T) {
	ctx := context.Background()
	k, _ := realKeyring(t)
	s := store.NewSecrets(k)
	if err := s.SaveRoot(ctx, &store.RootBundle{Keys: []json.RawMessage{json.RawMessage(`{"kty":"EC","d":"x"}`)}, Created: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	const company = "https://shop.example"
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, err := s.UpdateCompany(ctx, company, "", func(b *store.CompanyBundle) error {
				if b.UserID == "" {
					b.UserID = "user-" + randomHex(8)
				}
				b.Tokens = append(b.Tokens, store.Token{Resource: fmt.Sprintf("https://api%d.example", i), AccessToken: "at"})
				return nil
			})
			errs <- err
		})
	}
	if _, err := s.UpdateCompany(ctx, company, "work", func(b *store.CompanyBundle) error { b.UserID = "user-w"; return nil }); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Read back through a fresh Keyring (the daemon's copy), not the cache.
	s2 := store.NewSecrets(vault.NewKeyring(vault.KeyringOptions{Service: k.Service()}))
	b, err := s2.LoadCompany(ctx, company, "")
	if err != nil || len(b.Tokens) != 8 || !strings.HasPrefix(b.UserID, "user-") {
		t.Fatalf("after 8 concurrent updates the bundle is %+v, %v; want 8 tokens (no lost update)", b, err)
	}
	root, err := s2.LoadRoot(ctx)
	if err != nil || len(root.Keys) != 1 {
		t.Fatalf("LoadRoot = %+v, %v", root, err)
	}
	pairs, err := s2.Companies(ctx)
	if err != nil || len(pairs) != 2 || pairs[1] != [2]string{company, "work"} {
		t.Fatalf("Companies = %v, %v", pairs, err)
	}
	// Sign-out / forget Company deletes the item.
	if err := s2.DeleteCompany(ctx, company, "work"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.NewSecrets(vault.NewKeyring(vault.KeyringOptions{Service: k.Service()})).LoadCompany(ctx, company, "work"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadCompany after DeleteCompany = %v, want ErrNotFound", err)
	}
	// Reset Poppydesk deletes everything, the index included.
	if err := s2.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := lookupOutside(t, k.Service(), "root"); ok {
		t.Fatal("a lookup outside go-keyring still finds the root item after Reset")
	}
	pairs, err = store.NewSecrets(vault.NewKeyring(vault.KeyringOptions{Service: k.Service()})).Companies(ctx)
	if err != nil || len(pairs) != 0 {
		t.Fatalf("Companies after Reset = %v, %v", pairs, err)
	}
}

// TestRealKeyringValuesInParts stores a Company bundle larger than one Windows Credential
// Manager item (2,560 bytes) or one macOS Keychain line (about 3,000 bytes) in this machine's
// real keyring, under the rules of each platform, and reads it back through a fresh Keyring. It
// then looks at the items from outside go-keyring: under Windows's and macOS's rules the item
// holds a manifest and the parts hold the JSON; under this platform's own rules on Linux it is
// one item. Sign-out leaves no part behind. A platform's rules run only where this machine's
// keyring takes items of that platform's size (macOS's 3,000 bytes are too many for Windows).
func TestRealKeyringValuesInParts(t *testing.T) {
	ctx := context.Background()
	platforms := []string{runtime.GOOS}
	for _, p := range []string{"windows", "darwin"} {
		if p != runtime.GOOS && vault.ItemLimit(p, "Poppydesk", "root") <= vault.ItemLimit(runtime.GOOS, "Poppydesk", "root") {
			platforms = append(platforms, p)
		}
	}
	for _, platform := range platforms {
		t.Run(platform, func(t *testing.T) {
			k, _ := realKeyringOn(t, platform)
			s := store.NewSecrets(k)
			const company = "https://shop.example"
			want, err := s.UpdateCompany(ctx, company, "", func(b *store.CompanyBundle) error {
				b.UserID = "user-" + randomHex(8)
				for i := range 12 {
					b.Tokens = append(b.Tokens, store.Token{Resource: fmt.Sprintf("https://api%d.shop.example", i), AccessToken: randomHex(300), TokenType: "DPoP"})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			fresh := store.NewSecrets(vault.NewKeyring(vault.KeyringOptions{Service: k.Service(), Platform: platform}))
			got, err := fresh.LoadCompany(ctx, company, "")
			if err != nil || got.UserID != want.UserID || len(got.Tokens) != 12 || got.Tokens[11].AccessToken != want.Tokens[11].AccessToken {
				t.Fatalf("a fresh Keyring reads %+v, %v", got, err)
			}
			names, err := k.Names(ctx)
			if err != nil || len(names) != 1 {
				t.Fatalf("Names = %v, %v; want the one bundle", names, err)
			}
			raw, ok := lookupOutside(t, k.Service(), names[0])
			if !ok {
				t.Fatalf("no item %q in the keyring", names[0])
			}
			whole := raw
			if inParts := strings.HasPrefix(raw, "poppydesk-parts:"); inParts != (platform == "windows" || platform == "darwin") {
				t.Fatalf("item %q holds %.60q…; in parts = %v on %s", names[0], raw, inParts, platform)
			} else if inParts {
				whole = ""
				for i := 0; ; i++ {
					part, ok := lookupOutside(t, k.Service(), fmt.Sprintf("_poppydesk_part:a:%d:%s", i, names[0]))
					if !ok {
						break
					}
					whole += part
				}
			}
			var stored store.CompanyBundle
			if err := json.Unmarshal([]byte(whole), &stored); err != nil || stored.UserID != want.UserID {
				t.Fatalf("the items outside go-keyring do not hold the bundle's JSON (%d bytes): %v", len(whole), err)
			}
			if err := fresh.DeleteCompany(ctx, company, ""); err != nil {
				t.Fatal(err)
			}
			for _, item := range []string{names[0], "_poppydesk_part:a:0:" + names[0], "_poppydesk_part:b:0:" + names[0]} {
				if _, ok := lookupOutside(t, k.Service(), item); ok {
					t.Errorf("item %q is still in the keyring after sign-out", item)
				}
			}
		})
	}
}

func TestRealKeyringWarmReadMakesNoKeyringCalls(t *testing.T) {
	ctx := context.Background()
	k, be := realKeyring(t)
	s := store.NewSecrets(k)
	if _, err := s.UpdateCompany(ctx, "https://shop.example", "", func(b *store.CompanyBundle) error { b.UserID = "u"; return nil }); err != nil {
		t.Fatal(err)
	}
	k.DropCache()
	before := be.calls.Load()
	if _, err := s.LoadCompany(ctx, "https://shop.example", ""); err != nil {
		t.Fatal(err)
	}
	if cold := be.calls.Load() - before; cold != 1 {
		t.Fatalf("cold open of a Company made %d keyring calls, want 1", cold)
	}
	before = be.calls.Load()
	for range 100 {
		if _, err := s.LoadCompany(ctx, "https://shop.example", ""); err != nil {
			t.Fatal(err)
		}
	}
	if warm := be.calls.Load() - before; warm != 0 {
		t.Fatalf("100 warm reads made %d keyring calls, want 0", warm)
	}
}

// TestCanaryNoSecretReachesAFile writes secrets with a unique marker through every public path of
// the vault, and data the caller has redacted through every State method, then scans every file
// the vault wrote (the database, its WAL and shared memory), the logs, and the keyring's own
// (encrypted) file for the marker. A second, non-secret marker written to State proves the scan
// can see what State stores.
func TestCanaryNoSecretReachesAFile(t *testing.T) {
	ctx := context.Background()
	k, _ := realKeyring(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	k = vault.NewKeyring(vault.KeyringOptions{Service: k.Service(), Logger: logger})

	secret := "CANARY-" + randomHex(12)
	visible := "VISIBLE-" + randomHex(12)
	redacted := "[redacted]"

	// Secrets: every field of every bundle, and the raw KV.
	s := store.NewSecrets(k)
	if err := s.SaveRoot(ctx, &store.RootBundle{Keys: []json.RawMessage{json.RawMessage(`{"kty":"EC","d":"` + secret + `"}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateCompany(ctx, "https://shop.example", "acct", func(b *store.CompanyBundle) error {
		b.UserID, b.AgentID, b.AccountLabel = secret+"-uid", secret+"-aid", secret+"-label"
		b.DPoPKey = json.RawMessage(`{"d":"` + secret + `"}`)
		b.Delegated = []store.DelegatedKey{{PrivateJWK: json.RawMessage(`{"d":"` + secret + `"}`), Thumbprint: secret, Delegation: secret}}
		b.Tokens = []store.Token{{AccessToken: secret + "-at", RefreshToken: secret + "-rt", Scopes: []string{"orders"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(ctx, "raw", []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(ctx, "raw-binary", append([]byte{0xff}, secret...)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadCompany(ctx, "https://shop.example", "acct"); err != nil {
		t.Fatal(err)
	}

	// State: every writing method, with the caller's redaction applied (secret replaced).
	dir := t.TempDir()
	st, err := vault.OpenState(ctx, filepath.Join(dir, "state.db"), vault.StateOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	steps := []func() error{
		func() error { return st.SetSetting(ctx, "note", visible) },
		func() error {
			return st.PutCompany(ctx, store.Company{Identifier: "https://shop.example", Domain: "shop.example", Document: json.RawMessage(`{"name":"` + visible + `"}`), FetchedAt: now})
		},
		func() error {
			return st.PutCacheEntry(ctx, store.CacheEntry{URL: "https://shop.example/doc", Company: "https://shop.example", Body: []byte(visible), FetchedAt: now})
		},
		func() error {
			return st.AddSession(ctx, store.Session{SID: "sid-" + visible, Company: "https://shop.example", Account: "acct", Version: "0.4", Started: now})
		},
		func() error {
			return st.PutConversation(ctx, store.Conversation{Company: "https://shop.example", ID: "c1", Cursor: visible, State: "open", Updated: now})
		},
		func() error {
			return st.CreateApproval(ctx, store.Approval{ID: "ap1", Company: "https://shop.example", Interface: "api",
				Request: json.RawMessage(`{"headers":{"Authorization":"` + redacted + `"},"body":"` + visible + `"}`), State: "pending", Created: now},
				store.Revision{Revision: 1, Operation: json.RawMessage(`{"summary":"` + visible + `"}`), Received: now})
		},
		func() error {
			return st.TransitionApproval(ctx, "ap1", "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: now, Note: visible})
		},
		func() error {
			_, err := st.AddExchange(ctx, store.Exchange{At: now, Company: "https://shop.example", Direction: "outgoing", Method: "POST", URL: "https://shop.example/token",
				RequestHeaders:  http.Header{"Authorization": {"DPoP " + redacted}, "Poppy-Session": {redacted}},
				RequestBody:     []byte(`{"refresh_token":"` + redacted + `","note":"` + visible + `"}`),
				ResponseHeaders: http.Header{"Content-Type": {"application/json"}},
				ResponseBody:    []byte(`{"access_token":"` + redacted + `"}`), Status: 200})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("state step %d: %v", i, err)
		}
	}

	needles := map[string][]byte{
		"secret":        []byte(secret),
		"secret base64": []byte(base64.StdEncoding.EncodeToString([]byte(secret))[:16]),
	}
	scan := func(when string) (visibleFound bool) {
		files := []string{}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		if x := os.Getenv("XDG_DATA_HOME"); x != "" {
			filepath.WalkDir(filepath.Join(x, "keyrings"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, p)
				}
				return nil
			})
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for what, n := range needles {
				if bytes.Contains(b, n) {
					t.Errorf("%s: the %s marker is in %s", when, what, f)
				}
			}
			if bytes.Contains(b, []byte(visible)) {
				visibleFound = true
			}
		}
		t.Logf("%s: scanned %d files", when, len(files))
		return visibleFound
	}
	if !scan("while open") {
		t.Fatal("the non-secret control marker was not found in the state files: the scan cannot see what State stores")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !scan("after close") {
		t.Fatal("the non-secret control marker was not found after close")
	}
	if bytes.Contains(logs.Bytes(), []byte(secret)) {
		t.Errorf("the secret marker is in the logs: %s", logs.String())
	}
}

func benchKeyring(b *testing.B) (*vault.Keyring, *countingBackend, store.Secrets) {
	k, be := realKeyring(b)
	s := store.NewSecrets(k)
	if _, err := s.UpdateCompany(context.Background(), "https://shop.example", "", func(cb *store.CompanyBundle) error {
		cb.UserID = "user-" + randomHex(8)
		cb.Tokens = []store.Token{{AccessToken: randomHex(32), RefreshToken: randomHex(32), Scopes: []string{"orders", "profile"}}}
		cb.DPoPKey = json.RawMessage(`{"kty":"EC","crv":"P-256","d":"` + randomHex(32) + `"}`)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return k, be, s
}

// BenchmarkRealKeyringColdOpen opens a Company's bundle with an empty cache: one Secret Service read.
func BenchmarkRealKeyringColdOpen(b *testing.B) {
	ctx := context.Background()
	k, be, s := benchKeyring(b)
	be.calls.Store(0)
	for b.Loop() {
		k.DropCache()
		if _, err := s.LoadCompany(ctx, "https://shop.example", ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(be.calls.Load())/float64(b.N), "keyring-calls/op")
}

// BenchmarkRealKeyringWarmRead is the hot path: the bundle is cached, no keyring call.
func BenchmarkRealKeyringWarmRead(b *testing.B) {
	ctx := context.Background()
	_, be, s := benchKeyring(b)
	if _, err := s.LoadCompany(ctx, "https://shop.example", ""); err != nil {
		b.Fatal(err)
	}
	be.calls.Store(0)
	for b.Loop() {
		if _, err := s.LoadCompany(ctx, "https://shop.example", ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(be.calls.Load())/float64(b.N), "keyring-calls/op")
}

// BenchmarkRealKeyringWrite updates a cached bundle: one Secret Service write.
func BenchmarkRealKeyringWrite(b *testing.B) {
	ctx := context.Background()
	_, be, s := benchKeyring(b)
	be.calls.Store(0)
	i := 0
	for b.Loop() {
		i++
		if _, err := s.UpdateCompany(ctx, "https://shop.example", "", func(cb *store.CompanyBundle) error {
			cb.Tokens[0].AccessToken = fmt.Sprint(i)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(be.calls.Load())/float64(b.N), "keyring-calls/op")
}
