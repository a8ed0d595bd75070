package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
)

// memBackend is an in-memory Backend that counts calls. The real Secret Service is exercised in
// vault/keyringtest; this double lets these tests count calls exactly and simulate a keyring that
// never answers, which a real daemon cannot be made to do reliably.
type memBackend struct {
	mu    sync.Mutex
	items map[[2]string]string
	calls atomic.Int64
	block chan struct{} // if non-nil, every call waits for it to be closed
}

func newMemBackend() *memBackend { return &memBackend{items: map[[2]string]string{}} }

func (m *memBackend) wait() {
	m.calls.Add(1)
	m.mu.Lock()
	b := m.block
	m.mu.Unlock()
	if b != nil {
		<-b
	}
}

func (m *memBackend) Get(service, user string) (string, error) {
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[[2]string{service, user}]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (m *memBackend) Set(service, user, password string) error {
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[[2]string{service, user}] = password
	return nil
}

func (m *memBackend) Delete(service, user string) error {
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[[2]string{service, user}]; !ok {
		return keyring.ErrNotFound
	}
	delete(m.items, [2]string{service, user})
	return nil
}

func (m *memBackend) DeleteAll(service string) error {
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.items {
		if k[0] == service {
			delete(m.items, k)
		}
	}
	return nil
}

func (m *memBackend) raw(service, user string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[[2]string{service, user}]
	return v, ok
}

func TestKeyringValuesRoundTrip(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		value      []byte
		storedAsIs bool
	}{
		{"versioned JSON", []byte(`{"v":1,"user_id":"u-1"}`), true},
		{"empty", []byte{}, true},
		{"unicode text", []byte("clé ✓"), true},
		{"invalid UTF-8", []byte{0xff, 0xfe, 0x00, 0x01}, false},
		{"NUL byte", []byte("a\x00b"), false},
		{"starts with the encoding prefix", []byte(encodedPrefix + "abc"), false},
		{"starts with the parts prefix", []byte(partsPrefix + "1:a:2:" + checksum("x")), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			be := newMemBackend()
			k := NewKeyring(KeyringOptions{Backend: be})
			if err := k.Set(ctx, "item", tc.value); err != nil {
				t.Fatalf("Set: %v", err)
			}
			raw, _ := be.raw(DefaultService, "item")
			if (raw == string(tc.value)) != tc.storedAsIs {
				t.Errorf("stored %q; stored as is = %v, want %v", raw, raw == string(tc.value), tc.storedAsIs)
			}
			k.DropCache()
			got, err := k.Get(ctx, "item")
			if err != nil || string(got) != string(tc.value) {
				t.Fatalf("Get = %q, %v; want %q", got, err, tc.value)
			}
		})
	}
}

func TestKeyringWarmReadMakesNoBackendCalls(t *testing.T) {
	ctx := context.Background()
	be := newMemBackend()
	k := NewKeyring(KeyringOptions{Backend: be})
	if err := k.Set(ctx, "company/a/", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Get(ctx, "absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get(absent) = %v, want fs.ErrNotExist", err)
	}
	before := be.calls.Load()
	for range 100 {
		if _, err := k.Get(ctx, "company/a/"); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Get(ctx, "absent"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if _, err := k.Names(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := be.calls.Load() - before; n != 0 {
		t.Fatalf("warm reads made %d backend calls, want 0", n)
	}
	// A returned value is a copy: changing it does not change the cache.
	v, _ := k.Get(ctx, "company/a/")
	v[0] = 'X'
	if v2, _ := k.Get(ctx, "company/a/"); string(v2) != `{"v":1}` {
		t.Fatalf("cache was changed through a returned slice: %q", v2)
	}
}

func TestKeyringNamesDeleteAndDeleteAll(t *testing.T) {
	ctx := context.Background()
	be := newMemBackend()
	k := NewKeyring(KeyringOptions{Backend: be, Service: "PoppydeskTest"})
	for _, n := range []string{"root", "company/b/", "company/a/x"} {
		if err := k.Set(ctx, n, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh Keyring (empty cache) reads the same index from the backend.
	k2 := NewKeyring(KeyringOptions{Backend: be, Service: "PoppydeskTest"})
	names, err := k2.Names(ctx)
	if err != nil || strings.Join(names, ",") != "company/a/x,company/b/,root" {
		t.Fatalf("Names = %v, %v", names, err)
	}
	if err := k2.Delete(ctx, "company/b/"); err != nil {
		t.Fatal(err)
	}
	if err := k2.Delete(ctx, "company/b/"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Delete = %v, want fs.ErrNotExist", err)
	}
	if names, _ := k2.Names(ctx); strings.Join(names, ",") != "company/a/x,root" {
		t.Fatalf("Names after Delete = %v", names)
	}
	if err := k2.DeleteAll(ctx); err != nil {
		t.Fatal(err)
	}
	if names, _ := k2.Names(ctx); len(names) != 0 {
		t.Fatalf("Names after DeleteAll = %v", names)
	}
	if _, err := k2.Get(ctx, "root"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get after DeleteAll = %v", err)
	}
	be.mu.Lock()
	left := len(be.items)
	be.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d items left in the backend after DeleteAll", left)
	}
}

// TestKeyringConcurrentWritersKeepTheIndex: two writers per item at once; the index lists every
// item once and the cache holds what the keyring holds (the cache is updated in the order of the
// keyring's writes). The race it guards is narrow, so the burst runs in many rounds.
func TestKeyringConcurrentWritersKeepTheIndex(t *testing.T) {
	ctx := context.Background()
	for round := range 50 {
		be := newMemBackend()
		k := NewKeyring(KeyringOptions{Backend: be})
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Go(func() {
				name := fmt.Sprintf("company/c%02d/", i%20) // two writers per item
				errs <- k.Set(ctx, name, fmt.Appendf(nil, `{"n":%d}`, i))
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		k2 := NewKeyring(KeyringOptions{Backend: be})
		names, err := k2.Names(ctx)
		if err != nil || len(names) != 20 {
			t.Fatalf("round %d: Names = %d names, %v; want 20", round, len(names), err)
		}
		for _, n := range names {
			cachedV, _ := k.Get(ctx, n)
			raw, _ := be.raw(DefaultService, n)
			if string(cachedV) != raw {
				t.Fatalf("round %d: item %s: cache %q, keyring %q", round, n, cachedV, raw)
			}
		}
	}
}

func TestKeyringTimeoutDoesNotHangOrPoisonTheCache(t *testing.T) {
	ctx := context.Background()
	be := newMemBackend()
	k := NewKeyring(KeyringOptions{Backend: be, Platform: "linux", Timeout: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err := k.Set(ctx, "item", []byte("old")); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	be.mu.Lock()
	be.block = release
	be.mu.Unlock()

	err := k.Set(ctx, "item", []byte("new"))
	if !errors.Is(err, ErrKeyringUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set on a hung keyring = %v, want ErrKeyringUnavailable and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "gnome-keyring") {
		t.Fatalf("timeout error does not say what happened and what to do: %v", err)
	}
	// The item's state is unknown, so the cache must not answer "old" any more: the read goes to
	// the keyring (and times out, because it is still hung).
	if _, err := k.Get(ctx, "item"); !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("Get after an abandoned write = %v, want a keyring error (not the stale cached value)", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := k.Get(cctx, "other"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a canceled context = %v, want context.Canceled", err)
	}

	be.mu.Lock()
	be.block = nil
	be.mu.Unlock()
	close(release)
	// The abandoned write lands later; reads see it because they go to the keyring.
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := k.Get(ctx, "item")
		if err == nil && string(v) == "new" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the keyring answered again, Get = %q, %v; want \"new\"", v, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKeyringWithoutSecretServiceSaysWhatToDo(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		t.Skipf("go-keyring on %s uses no D-Bus; a missing Secret Service is a Linux and BSD state", runtime.GOOS)
	}
	// A real go-keyring call against a session bus that does not exist.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/poppydesk-test-bus")
	k := NewKeyring(KeyringOptions{Service: "PoppydeskNoBus", Timeout: 5 * time.Second})
	_, err := k.Get(context.Background(), "root")
	if !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("Get without a Secret Service = %v, want ErrKeyringUnavailable", err)
	}
	for _, want := range []string{"Secret Service", "gnome-keyring", "KeePassXC", "no plain-text fallback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// The bus socket's ENOENT must not read as "no such item": the engine would then create a
	// new User ID for the Company.
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get without a Secret Service matches fs.ErrNotExist: %v", err)
	}
	if err := k.Set(context.Background(), "root", []byte("{}")); !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("Set without a Secret Service = %v, want ErrKeyringUnavailable", err)
	}
	if names, err := k.Names(context.Background()); !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("Names without a Secret Service = %v, %v; want ErrKeyringUnavailable", names, err)
	}
}

func TestKeyringRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	k := NewKeyring(KeyringOptions{Backend: newMemBackend()})
	tests := []struct {
		name  string
		item  string
		value []byte
	}{
		{"empty name", "", []byte("x")},
		{"reserved index name", indexItem, []byte("x")},
		{"invalid UTF-8 name", "\xff", []byte("x")},
		{"too big", "big", make([]byte, MaxItemSize+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := k.Set(ctx, tc.item, tc.value); err == nil {
				t.Fatal("Set succeeded, want an error")
			}
		})
	}
}

func BenchmarkKeyringWarmRead(b *testing.B) {
	ctx := context.Background()
	k := NewKeyring(KeyringOptions{Backend: newMemBackend()})
	if err := k.Set(ctx, "company/a/", []byte(`{"v":1,"user_id":"u"}`)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Get(ctx, "company/a/"); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzKeyringValueEncoding checks that any value survives the keyring encoding and that UTF-8
// text without NUL is stored as is (so `secret-tool lookup` shows the JSON).
func FuzzKeyringValueEncoding(f *testing.F) {
	for _, s := range []string{`{"v":1}`, "", "\xff\x00", encodedPrefix, encodedPrefix + "!!", "a\x00", partsPrefix + "1:a:1:x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		enc := encodeValue(v)
		got, err := decodeValue(enc)
		if err != nil || string(got) != string(v) {
			t.Fatalf("decode(encode(%q)) = %q, %v", v, got, err)
		}
		if !strings.HasPrefix(enc, encodedPrefix) && enc != string(v) {
			t.Fatalf("encode(%q) = %q: changed without the marker prefix", v, enc)
		}
		if strings.HasPrefix(enc, partsPrefix) {
			t.Fatalf("encode(%q) = %q: reads as a manifest of parts", v, enc)
		}
		// Decoding what a keyring hands back never panics.
		decodeValue(string(v))
	})
}
