package vault

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zalando/go-keyring"
)

// goKeyringQuote is go-keyring's internal/shellescape.Quote, written out from its source so the
// tests build the exact line go-keyring's macOS Set writes to `security -i`.
func goKeyringQuote(s string) string {
	if s == "" {
		return "''"
	}
	if regexp.MustCompile(`[^\w@%+=:,./-]`).MatchString(s) {
		return "'" + strings.ReplaceAll(s, "'", "'\"'\"'") + "'"
	}
	return s
}

// goKeyringDarwinLine is the line keyring_darwin.go's Set builds; it refuses one longer than 4096.
func goKeyringDarwinLine(service, user, password string) string {
	password = "go-keyring-base64:" + base64.StdEncoding.EncodeToString([]byte(password))
	return fmt.Sprintf("add-generic-password -U -s %s -a %s -w %s\n", goKeyringQuote(service), goKeyringQuote(user), goKeyringQuote(password))
}

// limitedBackend is memBackend with go-keyring's size checks for one platform, so that a value
// the real library would refuse is refused here too.
type limitedBackend struct {
	*memBackend
	platform string
	failSet  int // if > 0, the failSet-th Set from now fails (a crash or a refusal mid-write)
	failDel  bool
	failGet  error
}

func (b *limitedBackend) Get(service, user string) (string, error) {
	if b.failGet != nil {
		return "", b.failGet
	}
	return b.memBackend.Get(service, user)
}

var errInjected = errors.New("injected keyring failure")

func (b *limitedBackend) Set(service, user, password string) error {
	switch {
	case b.platform == "windows" && (len(password) > 2560 || len(service) >= 512):
		return keyring.ErrSetDataTooBig
	case b.platform == "darwin" && len(goKeyringDarwinLine(service, user, password)) > 4096:
		return keyring.ErrSetDataTooBig
	}
	if b.failSet > 0 {
		b.failSet--
		if b.failSet == 0 {
			return errInjected
		}
	}
	return b.memBackend.Set(service, user, password)
}

func (b *limitedBackend) Delete(service, user string) error {
	if b.failDel {
		return errInjected
	}
	return b.memBackend.Delete(service, user)
}

// stored returns the backend's item names of service, sorted, without the index.
func (b *limitedBackend) stored(service string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for k := range b.memBackend.items {
		if k[0] == service && k[1] != indexItem {
			out = append(out, k[1])
		}
	}
	slices.Sort(out)
	return out
}

func TestItemLimitFitsGoKeyringsChecks(t *testing.T) {
	tests := []struct {
		platform, service, user string
		want                    int
	}{
		{"windows", "Poppydesk", "root", 2560},
		{"windows", "Poppydesk", strings.Repeat("n", 1024), 2560},
		// 4096 - 36 (the line's fixed words) - 9 - 4 - 18 ("go-keyring-base64:") = 4029
		// characters of base64 room: 1007 groups of 4, 3021 bytes.
		{"darwin", "Poppydesk", "root", 3021},
		{"darwin", "Poppydesk", "company/https%3A%2F%2Fshop.example/", 2997},
		// A name with a quote is quoted: 'it'"'"'s' is 11 characters for 4.
		{"darwin", "Poppydesk", "it's", 3015},
		{"linux", "Poppydesk", "root", maxEncodedSize},
		{"freebsd", "Poppydesk", "root", maxEncodedSize},
	}
	for _, tc := range tests {
		t.Run(tc.platform+"/"+tc.user[:min(len(tc.user), 12)], func(t *testing.T) {
			got, err := itemLimit(tc.platform, tc.service, tc.user)
			if err != nil || got != tc.want {
				t.Fatalf("itemLimit = %d, %v; want %d", got, err, tc.want)
			}
			if tc.platform != "darwin" {
				return
			}
			if n := len(goKeyringDarwinLine(tc.service, tc.user, strings.Repeat("x", got))); n > 4096 {
				t.Fatalf("a value of the limit makes go-keyring's line %d bytes, over 4096", n)
			}
			if n := len(goKeyringDarwinLine(tc.service, tc.user, strings.Repeat("x", got+1))); n <= 4096 {
				t.Fatalf("a value one byte over the limit makes a line of %d bytes, which go-keyring takes: the limit is too low", n)
			}
		})
	}
	if _, err := itemLimit("windows", strings.Repeat("s", 512), "root"); err == nil || !strings.Contains(err.Error(), "POPPYDESK_KEYRING_SERVICE") {
		t.Fatalf("a 512-byte service on Windows = %v, want an error that says what to change", err)
	}
	if _, err := itemLimit("darwin", strings.Repeat("'", 1000), "root"); err == nil {
		t.Fatal("a service that leaves no room on macOS was accepted")
	}
}

func TestKeyringPartsRoundTrip(t *testing.T) {
	ctx := context.Background()
	json := func(n int) []byte { // versioned JSON of about n bytes, as the bundles are
		var b bytes.Buffer
		b.WriteString(`{"v":1,"tokens":[`)
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, `{"resource":"https://api%d.example","access_token":"%064x"},`, i, i)
		}
		b.WriteString(`{}]}`)
		return b.Bytes()
	}
	binary := make([]byte, 30000)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	// Multi-byte runes across every possible cut: each piece must stay valid UTF-8.
	unicode := []byte(strings.Repeat("é✓😀", 1500))
	values := []struct {
		name  string
		value []byte
	}{
		{"small JSON", json(100)},
		{"JSON just over the Windows limit", json(2600)},
		{"20 KiB JSON", json(20 << 10)},
		{"30 KB binary", binary},
		{"multi-byte text", unicode},
		{"the largest value", bytes.Repeat([]byte{0xff}, MaxItemSize)},
	}
	for _, platform := range []string{"windows", "darwin", "linux"} {
		for _, tc := range values {
			t.Run(platform+"/"+tc.name, func(t *testing.T) {
				be := &limitedBackend{memBackend: newMemBackend(), platform: platform}
				k := NewKeyring(KeyringOptions{Backend: be, Platform: platform})
				const name = "company/https%3A%2F%2Fshop.example/acct"
				if err := k.Set(ctx, name, tc.value); err != nil {
					t.Fatalf("Set: %v", err)
				}
				fresh := NewKeyring(KeyringOptions{Backend: be, Platform: platform})
				got, err := fresh.Get(ctx, name)
				if err != nil || !bytes.Equal(got, tc.value) {
					t.Fatalf("Get from a fresh Keyring = %d bytes, %v; want the %d bytes stored", len(got), err, len(tc.value))
				}
				limit, _ := itemLimit(platform, DefaultService, name)
				wantParts := len(encodeValue(tc.value)) > limit
				stored := be.stored(DefaultService)
				if hasParts := len(stored) > 1; hasParts != wantParts {
					t.Fatalf("stored as %v; in parts = %v, want %v", stored, hasParts, wantParts)
				}
				for _, item := range stored {
					if raw, _ := be.raw(DefaultService, item); !utf8.ValidString(raw) || len(raw) > itemLimitOf(platform, item) {
						t.Fatalf("item %q holds %d bytes (valid UTF-8: %v); every item must be text within its limit of %d", item, len(raw), utf8.ValidString(raw), itemLimitOf(platform, item))
					}
				}
				if names, err := fresh.Names(ctx); err != nil || len(names) != 1 || names[0] != name {
					t.Fatalf("Names = %v, %v; want only %q (parts are not listed)", names, err, name)
				}
				// Replacing it with a small value leaves no part behind; so does deleting it.
				if err := fresh.Set(ctx, name, []byte(`{"v":1}`)); err != nil {
					t.Fatal(err)
				}
				if s := be.stored(DefaultService); len(s) != 1 {
					t.Fatalf("after a small write the keyring holds %v, want only the item", s)
				}
				if err := fresh.Set(ctx, name, tc.value); err != nil {
					t.Fatal(err)
				}
				if err := NewKeyring(KeyringOptions{Backend: be, Platform: platform}).Delete(ctx, name); err != nil {
					t.Fatal(err)
				}
				if s := be.stored(DefaultService); len(s) != 0 {
					t.Fatalf("after Delete the keyring holds %v", s)
				}
			})
		}
	}
}

// TestKeyringPartsWriteIsAtomic fails a multi-part write at every one of its keyring writes, as a
// crash or a refusing keyring would, and checks that a fresh reader then sees the old value whole,
// and that the next write leaves exactly one value's items.
func TestKeyringPartsWriteIsAtomic(t *testing.T) {
	ctx := context.Background()
	const name = "company/c/"
	olds := map[string][]byte{"old value in one item": []byte(`{"v":1,"old":true}`), "old value in parts": bytes.Repeat([]byte("o"), 6000)}
	newValue := bytes.Repeat([]byte("n"), 9000) // 4 parts of 2560 bytes on Windows, then the manifest
	for oldName, old := range olds {
		for fail := 1; fail <= 5; fail++ {
			t.Run(fmt.Sprintf("%s/write %d fails", oldName, fail), func(t *testing.T) {
				be := &limitedBackend{memBackend: newMemBackend(), platform: "windows"}
				k := NewKeyring(KeyringOptions{Backend: be, Platform: "windows", Logger: slog.New(slog.DiscardHandler)})
				if err := k.Set(ctx, name, old); err != nil {
					t.Fatal(err)
				}
				be.failSet = fail
				if err := k.Set(ctx, name, newValue); !errors.Is(err, ErrKeyringUnavailable) {
					t.Fatalf("the failing write = %v, want the keyring's failure", err)
				}
				got, err := NewKeyring(KeyringOptions{Backend: be, Platform: "windows"}).Get(ctx, name)
				if err != nil || !bytes.Equal(got, old) {
					t.Fatalf("after a write failed at its keyring write %d, a fresh reader gets %d bytes, %v; want the old %d bytes", fail, len(got), err, len(old))
				}
				if err := k.Set(ctx, name, newValue); err != nil {
					t.Fatal(err)
				}
				if got, err := NewKeyring(KeyringOptions{Backend: be, Platform: "windows"}).Get(ctx, name); err != nil || !bytes.Equal(got, newValue) {
					t.Fatalf("the next write: a fresh reader gets %d bytes, %v", len(got), err)
				}
				if s := be.stored(DefaultService); len(s) != 5 {
					t.Fatalf("after the next write the keyring holds %d items (%v), want the manifest and 4 parts", len(s), s)
				}
			})
		}
	}
	t.Run("Delete removes the parts a failed write left", func(t *testing.T) {
		be := &limitedBackend{memBackend: newMemBackend(), platform: "windows"}
		k := NewKeyring(KeyringOptions{Backend: be, Platform: "windows", Logger: slog.New(slog.DiscardHandler)})
		if err := k.Set(ctx, name, olds["old value in parts"]); err != nil { // parts in slot a
			t.Fatal(err)
		}
		be.failSet = 4 // three parts of the new value land in slot b, then the write fails
		if err := k.Set(ctx, name, newValue); err == nil {
			t.Fatal("the failing write succeeded")
		}
		if err := NewKeyring(KeyringOptions{Backend: be, Platform: "windows"}).Delete(ctx, name); err != nil {
			t.Fatal(err)
		}
		if s := be.stored(DefaultService); len(s) != 0 {
			t.Fatalf("after Delete the keyring holds %v", s)
		}
	})
	t.Run("a smaller write after a failed bigger one leaves no part behind", func(t *testing.T) {
		be := &limitedBackend{memBackend: newMemBackend(), platform: "windows"}
		k := NewKeyring(KeyringOptions{Backend: be, Platform: "windows", Logger: slog.New(slog.DiscardHandler)})
		if err := k.Set(ctx, name, olds["old value in one item"]); err != nil {
			t.Fatal(err)
		}
		be.failSet = 7 // six parts of a 15,000-byte value land in slot a, then the write fails
		if err := k.Set(ctx, name, bytes.Repeat([]byte("b"), 15000)); err == nil {
			t.Fatal("the failing write succeeded")
		}
		if err := k.Set(ctx, name, newValue); err != nil { // four parts, in slot a again
			t.Fatal(err)
		}
		if s := be.stored(DefaultService); len(s) != 5 {
			t.Fatalf("the keyring holds %d items (%v), want the manifest and 4 parts", len(s), s)
		}
	})
	t.Run("deleting the old parts fails", func(t *testing.T) {
		be := &limitedBackend{memBackend: newMemBackend(), platform: "windows"}
		k := NewKeyring(KeyringOptions{Backend: be, Platform: "windows", Logger: slog.New(slog.DiscardHandler)})
		if err := k.Set(ctx, name, olds["old value in parts"]); err != nil {
			t.Fatal(err)
		}
		be.failDel = true
		if err := k.Set(ctx, name, newValue); err != nil {
			t.Fatalf("a write whose clean-up fails = %v; the value is written, so it succeeds", err)
		}
		if got, err := NewKeyring(KeyringOptions{Backend: be, Platform: "windows"}).Get(ctx, name); err != nil || !bytes.Equal(got, newValue) {
			t.Fatalf("a fresh reader gets %d bytes, %v; want the new value", len(got), err)
		}
		be.failDel = false
		if err := k.Set(ctx, name, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if err := k.Set(ctx, name, newValue); err != nil {
			t.Fatal(err)
		}
		if s := be.stored(DefaultService); len(s) != 5 {
			t.Fatalf("the parts left by the failed clean-up are still there: %v", s)
		}
	})
}

func TestKeyringPartsChangedOutsideAreReportedInWords(t *testing.T) {
	ctx := context.Background()
	const name = "company/c/"
	value := bytes.Repeat([]byte("v"), 6000)
	tests := []struct {
		name   string
		change func(be *limitedBackend)
		want   string
	}{
		{"a part is missing", func(be *limitedBackend) { be.memBackend.Delete(DefaultService, partName('a', 1, name)) }, "part 2 of 3"},
		{"a part is changed", func(be *limitedBackend) { be.memBackend.Set(DefaultService, partName('a', 0, name), "x") }, "do not add up"},
		{"the manifest is garbled", func(be *limitedBackend) { be.memBackend.Set(DefaultService, name, partsPrefix+"9:z") }, "not one this build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			be := &limitedBackend{memBackend: newMemBackend(), platform: "windows"}
			if err := NewKeyring(KeyringOptions{Backend: be, Platform: "windows"}).Set(ctx, name, value); err != nil {
				t.Fatal(err)
			}
			tc.change(be)
			_, err := NewKeyring(KeyringOptions{Backend: be, Platform: "windows"}).Get(ctx, name)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "poppydesk reset") {
				t.Fatalf("Get = %v; want an error saying %q and what to do", err, tc.want)
			}
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrKeyringUnavailable) {
				t.Fatalf("Get = %v: a damaged value must read neither as absent nor as an unavailable keyring", err)
			}
		})
	}
}

func TestKeyringTooBigIsAnErrorAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	for _, platform := range []string{"windows", "darwin", "linux"} {
		t.Run(platform, func(t *testing.T) {
			be := &limitedBackend{memBackend: newMemBackend(), platform: platform}
			k := NewKeyring(KeyringOptions{Backend: be, Platform: platform})
			if err := k.Set(ctx, "item", []byte(`{"v":1}`)); err != nil {
				t.Fatal(err)
			}
			err := k.Set(ctx, "item", make([]byte, MaxItemSize+1))
			if !errors.Is(err, ErrValueTooBig) || !strings.Contains(err.Error(), "not stored") {
				t.Fatalf("Set of %d bytes = %v; want ErrValueTooBig in words", MaxItemSize+1, err)
			}
			if got, err := NewKeyring(KeyringOptions{Backend: be, Platform: platform}).Get(ctx, "item"); err != nil || string(got) != `{"v":1}` {
				t.Fatalf("after the refused write the item reads %q, %v", got, err)
			}
		})
	}
	// The backend's own refusal (go-keyring's ErrSetDataTooBig) is reported in words too.
	be := &limitedBackend{memBackend: newMemBackend(), platform: "windows"}
	k := NewKeyring(KeyringOptions{Backend: be, Platform: "linux"}) // linux rules: one item
	err := k.Set(ctx, "item", make([]byte, 3000))
	if !errors.Is(err, ErrValueTooBig) || !strings.Contains(err.Error(), "refused the value as too big") {
		t.Fatalf("a value the keyring refuses = %v, want ErrValueTooBig in words", err)
	}
}

func itemLimitOf(platform, item string) int {
	n, _ := itemLimit(platform, DefaultService, item)
	return n
}

func TestKeyringErrorsNameEachPlatformsKeyring(t *testing.T) {
	tests := []struct {
		platform string
		want     []string
	}{
		{"windows", []string{"Windows Credential Manager", "user profile", "no plain-text fallback"}},
		{"darwin", []string{"macOS Keychain", "security unlock-keychain", "no plain-text fallback"}},
		{"linux", []string{"Secret Service", "gnome-keyring", "KeePassXC", "no plain-text fallback"}},
	}
	for _, tc := range tests {
		t.Run(tc.platform, func(t *testing.T) {
			be := &limitedBackend{memBackend: newMemBackend(), platform: tc.platform, failGet: errors.New("the call failed")}
			_, err := NewKeyring(KeyringOptions{Backend: be, Platform: tc.platform}).Get(context.Background(), "root")
			if !errors.Is(err, ErrKeyringUnavailable) {
				t.Fatalf("Get = %v, want ErrKeyringUnavailable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q does not say %q", err, w)
				}
			}
		})
	}
}
