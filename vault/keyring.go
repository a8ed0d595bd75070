package vault

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zalando/go-keyring"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// DefaultService is the Secret Service "service" attribute of every item Poppydesk stores.
const DefaultService = "Poppydesk"

// DefaultKeyringTimeout bounds every keyring call (a locked or absent keyring must not hang the app).
const DefaultKeyringTimeout = 3 * time.Second

// MaxItemSize is the largest value Poppydesk keeps under one name. Bundles are a few KiB; the
// Secret Service has no hard limit but slows down with large values, and on Windows and macOS a
// value above the OS keyring's own item limit is kept in parts (keyring_parts.go).
const MaxItemSize = 64 << 10

// indexItem is the keyring item (user attribute) that lists the names of the other items, because
// go-keyring cannot enumerate a service's items.
const indexItem = "_poppydesk_index"

// encodedPrefix marks a value that was base64-encoded because it was not plain UTF-8 text.
const encodedPrefix = "poppydesk-b64:"

// ErrKeyringUnavailable is matched (errors.Is) by every error that means the OS keyring could not be
// used: no Secret Service on the session bus, no session bus, a locked collection or Keychain, or
// a timeout.
var ErrKeyringUnavailable = errors.New("OS keyring unavailable")

// ErrKeyringLocked is matched, besides ErrKeyringUnavailable, by an error of a keyring whose
// collection is locked: the Secret Service answers but will not unlock it for Poppydesk.
var ErrKeyringLocked = errors.New("OS keyring locked")

// Backend is the raw keyring: the functions of github.com/zalando/go-keyring. Get and Delete report
// an absent item with keyring.ErrNotFound, and only with it. Tests inject a
// Backend to count calls or to simulate a keyring that never answers.
type Backend interface {
	Get(service, user string) (string, error)
	Set(service, user, password string) error
	Delete(service, user string) error
	DeleteAll(service string) error
}

// SystemBackend returns the OS keyring through go-keyring: the Secret Service over D-Bus on Linux
// and the BSDs, the Credential Manager (CredWrite/CredRead) on Windows, the login Keychain through
// /usr/bin/security on macOS.
func SystemBackend() Backend { return systemBackend{} }

type systemBackend struct{}

func (systemBackend) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (systemBackend) Set(service, user, password string) error {
	return setLabelled(service, user, ItemLabel(service, user), password)
}

// ItemLabel is the label the keyring item named name carries in the OS keyring, what a keyring
// manager shows: "Poppydesk: the sign-in of acct_1 at https://auth.shop.example", where
// go-keyring would write "Password for 'company/…' on 'Poppydesk'".
func ItemLabel(service, name string) string {
	if name == indexItem {
		return service + ": the list of its keyring items"
	}
	return service + ": " + store.ItemWords(name)
}
func (systemBackend) Delete(service, user string) error { return keyring.Delete(service, user) }
func (systemBackend) DeleteAll(service string) error    { return keyring.DeleteAll(service) }

// KeyringOptions configure [NewKeyring]. The zero value means the defaults.
type KeyringOptions struct {
	Service string        // default DefaultService
	Timeout time.Duration // per call; default DefaultKeyringTimeout
	Backend Backend       // default SystemBackend()
	Logger  *slog.Logger  // default slog.Default(); values are never logged
	// Platform is the GOOS whose keyring rules apply: item size limits (values above them are
	// kept in parts) and the advice in errors. Default runtime.GOOS; tests set another to run
	// one platform's rules against this machine's keyring.
	Platform string
}

// Keyring is a store of secret items in the OS keyring, one keyring item per name. It satisfies
// the engine's store.KV interface structurally (agentcore/store), which builds the typed, versioned
// JSON bundles on top.
//
// Every call is bounded by the configured timeout and by ctx. Reads are cached in memory after the
// first keyring round trip (also "absent"), so the hot path reads no keyring once warm. Calls for
// one item reach the keyring in order, one at a time; distinct items proceed in parallel. It is
// safe for concurrent use. It assumes it is the only writer of its service's items (one Poppydesk
// per desktop session); [Keyring.DropCache] forgets the cache if that ever changes.
type Keyring struct {
	service  string
	platform string
	timeout  time.Duration
	backend  Backend
	log      *slog.Logger

	all sync.RWMutex // item operations hold it shared; DeleteAll holds it exclusively

	mu    sync.Mutex // guards cache and locks
	cache map[string]cached
	locks map[string]*sync.Mutex

	indexMu sync.Mutex // serializes read-modify-write of the index item
}

type cached struct {
	value   []byte
	present bool
	layout  layout
}

// NewKeyring returns a Keyring. It does not contact the keyring; the first call does.
func NewKeyring(opts KeyringOptions) *Keyring {
	k := &Keyring{
		service:  opts.Service,
		platform: opts.Platform,
		timeout:  opts.Timeout,
		backend:  opts.Backend,
		log:      opts.Logger,
		cache:    map[string]cached{},
		locks:    map[string]*sync.Mutex{},
	}
	if k.platform == "" {
		k.platform = runtime.GOOS
	}
	if k.service == "" {
		k.service = DefaultService
	}
	if k.timeout <= 0 {
		k.timeout = DefaultKeyringTimeout
	}
	if k.backend == nil {
		k.backend = SystemBackend()
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	return k
}

// Service returns the Secret Service "service" attribute of the items.
func (k *Keyring) Service() string { return k.service }

// Get returns the value of item name, or an error matching fs.ErrNotExist if it does not exist.
func (k *Keyring) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return k.get(ctx, name)
}

func (k *Keyring) get(ctx context.Context, name string) ([]byte, error) {
	k.mu.Lock()
	c, ok := k.cache[name]
	k.mu.Unlock()
	if ok {
		if !c.present {
			return nil, notFound(name)
		}
		return slices.Clone(c.value), nil
	}
	var out []byte
	err := k.call(ctx, "read", name, func() (func(), error) {
		s, l, err := k.readItem(name)
		if isNotFound(err) {
			return func() { k.cache[name] = cached{} }, errAbsent
		}
		if err != nil {
			return nil, err
		}
		v, err := decodeValue(s)
		if err != nil {
			return nil, &badValueError{fmt.Errorf("keyring item %q of service %q: %w", name, k.service, err)}
		}
		out = v
		return func() { k.cache[name] = cached{value: slices.Clone(v), present: true, layout: l} }, nil
	})
	if err == errAbsent {
		return nil, notFound(name)
	}
	return out, err
}

// Set stores value under name, replacing any previous value atomically: one keyring call
// replaces the item, or, for a value above the platform's item limit, its manifest of parts
// (keyring_parts.go). A value above MaxItemSize is an error matching ErrValueTooBig.
func (k *Keyring) Set(ctx context.Context, name string, value []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if len(value) > MaxItemSize {
		return errTooBig(name, len(value))
	}
	added, err := k.indexAdd(ctx, name)
	if err != nil {
		return err
	}
	err = k.set(ctx, name, value)
	if err != nil && added && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		// The item was not written: take the name back out of the index (best effort).
		if rerr := k.indexRemove(ctx, name); rerr != nil {
			k.log.Warn("keyring: could not remove a name from the index after a failed write", "item", name, "err", rerr)
		}
	}
	return err
}

func (k *Keyring) set(ctx context.Context, name string, value []byte) error {
	enc := encodeValue(value)
	v := slices.Clone(value)
	return k.call(ctx, "write", name, func() (func(), error) {
		old, err := k.currentLayout(name)
		if err != nil {
			return nil, err
		}
		l, err := k.writeItem(name, enc, old)
		if err != nil {
			return nil, err
		}
		return func() { k.cache[name] = cached{value: v, present: true, layout: l} }, nil
	})
}

// Delete removes item name; it returns an error matching fs.ErrNotExist if there was none.
func (k *Keyring) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := k.call(ctx, "delete", name, func() (func(), error) {
		err := k.backend.Delete(k.service, name)
		if err != nil && !isNotFound(err) {
			return nil, err
		}
		if k.canSplit() {
			// The manifest is gone, so its parts (and any a crash left) go too.
			k.dropParts(name, 'a', 0)
			k.dropParts(name, 'b', 0)
		}
		if isNotFound(err) {
			return func() { k.cache[name] = cached{} }, errAbsent
		}
		return func() { k.cache[name] = cached{} }, nil
	})
	if err != nil && err != errAbsent {
		return err
	}
	if rerr := k.indexRemove(ctx, name); rerr != nil {
		return rerr
	}
	if err == errAbsent {
		return notFound(name)
	}
	return nil
}

// Names lists the items this Keyring stored (from the index item), sorted.
func (k *Keyring) Names(ctx context.Context) ([]string, error) {
	k.indexMu.Lock()
	defer k.indexMu.Unlock()
	return k.readIndex(ctx)
}

// DeleteAll removes every item of the service, including any the index does not know about and
// every part ("reset Poppydesk").
func (k *Keyring) DeleteAll(ctx context.Context) error {
	k.indexMu.Lock()
	defer k.indexMu.Unlock()
	return k.run(ctx, "delete all items", "", func(commit func(func())) error {
		k.all.Lock()
		defer k.all.Unlock()
		if err := k.backend.DeleteAll(k.service); err != nil && !isNotFound(err) {
			return err
		}
		commit(func() {
			clear(k.cache)
			k.cache[indexItem] = cached{}
		})
		return nil
	})
}

// DropCache forgets every cached value; the next read of each item asks the keyring again.
func (k *Keyring) DropCache() {
	k.mu.Lock()
	clear(k.cache)
	k.mu.Unlock()
}

// readIndex returns the sorted names in the index item. Callers hold indexMu.
func (k *Keyring) readIndex(ctx context.Context) ([]string, error) {
	raw, err := k.get(ctx, indexItem)
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrKeyringUnavailable) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var idx struct {
		V     int      `json:"v"`
		Names []string `json:"names"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("keyring index item %q of service %q is not valid JSON (%v); reset Poppydesk to rebuild it", indexItem, k.service, err)
	}
	slices.Sort(idx.Names)
	return slices.Compact(idx.Names), nil
}

func (k *Keyring) writeIndex(ctx context.Context, names []string) error {
	raw, err := json.Marshal(struct {
		V     int      `json:"v"`
		Names []string `json:"names"`
	}{1, names})
	if err != nil {
		return err
	}
	return k.set(ctx, indexItem, raw)
}

// indexAdd records name in the index before the item is written, so a crash between the two
// writes leaves a listed name without an item (harmless: reading it says "absent") and never an
// item that Names cannot see.
func (k *Keyring) indexAdd(ctx context.Context, name string) (added bool, err error) {
	k.indexMu.Lock()
	defer k.indexMu.Unlock()
	names, err := k.readIndex(ctx)
	if err != nil {
		return false, err
	}
	i, found := slices.BinarySearch(names, name)
	if found {
		return false, nil
	}
	return true, k.writeIndex(ctx, slices.Insert(names, i, name))
}

func (k *Keyring) indexRemove(ctx context.Context, name string) error {
	k.indexMu.Lock()
	defer k.indexMu.Unlock()
	names, err := k.readIndex(ctx)
	if err != nil {
		return err
	}
	i, found := slices.BinarySearch(names, name)
	if !found {
		return nil
	}
	return k.writeIndex(ctx, slices.Delete(names, i, i+1))
}

func (k *Keyring) itemLock(name string) *sync.Mutex {
	k.mu.Lock()
	defer k.mu.Unlock()
	l, ok := k.locks[name]
	if !ok {
		l = &sync.Mutex{}
		k.locks[name] = l
	}
	return l
}

// call runs op for one item while holding that item's lock (so calls for the item reach the
// keyring in order) and the shared side of k.all. The cache update op returns is applied before
// the lock is released, so the cache keeps the order of the keyring's writes too.
func (k *Keyring) call(ctx context.Context, verb, name string, op func() (func(), error)) error {
	return k.run(ctx, verb, name, func(commit func(func())) error {
		k.all.RLock()
		defer k.all.RUnlock()
		l := k.itemLock(name)
		l.Lock()
		defer l.Unlock()
		update, err := op()
		if update != nil {
			commit(update)
		}
		return err
	})
}

// run executes op on its own goroutine and waits at most k.timeout (and ctx). op applies its cache
// update through commit, which applies it only if the caller is still waiting, so an abandoned
// call never leaves a value in the cache; on timeout the item's cache entry is dropped because its
// state is unknown.
// An abandoned call finishes in the background and still holds its item's lock until then, so
// later calls for the item queue behind it and cannot be reordered.
func (k *Keyring) run(ctx context.Context, verb, name string, op func(commit func(update func())) error) error {
	var (
		mu        sync.Mutex
		abandoned bool
	)
	commit := func(update func()) {
		mu.Lock()
		defer mu.Unlock()
		if !abandoned {
			k.mu.Lock()
			update()
			k.mu.Unlock()
		}
	}
	done := make(chan error, 1)
	go func() {
		err := op(commit)
		mu.Lock()
		defer mu.Unlock()
		done <- err
	}()
	timer := time.NewTimer(k.timeout)
	defer timer.Stop()
	var why error
	select {
	case err := <-done:
		return k.wrap(verb, name, err)
	case <-timer.C:
		why = fmt.Errorf("%w: the %s did not answer the %s of item %q within %v (it may be locked and waiting for a password prompt, or not running). %s: %w",
			ErrKeyringUnavailable, keyringName(k.platform), verb, name, k.timeout, KeyringHelp(k.platform)+", then retry", context.DeadlineExceeded)
	case <-ctx.Done():
		why = fmt.Errorf("keyring %s of item %q: %w", verb, name, ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-done: // finished while we decided to give up: keep its result
		return k.wrap(verb, name, err)
	default:
	}
	abandoned = true
	k.mu.Lock()
	if name == "" {
		clear(k.cache)
	} else {
		delete(k.cache, name)
	}
	k.mu.Unlock()
	k.log.Warn("keyring call abandoned", "op", verb, "item", name, "service", k.service, "err", why)
	return why
}

func (k *Keyring) wrap(verb, name string, err error) error {
	if err == nil || err == errAbsent {
		return err
	}
	if errors.Is(err, keyring.ErrSetDataTooBig) {
		return fmt.Errorf("keyring %s of item %q: the %s refused the value as too big, and the previous value is unchanged: %w (%w)", verb, name, keyringName(k.platform), err, ErrValueTooBig)
	}
	var bad *badValueError
	if errors.As(err, &bad) {
		return err
	}
	return &KeyringError{Op: verb, Item: name, Service: k.service, Keyring: keyringName(k.platform), Help: KeyringHelp(k.platform), Err: err, Locked: isLocked(err)}
}

// isLocked reports the Secret Service's refusal to unlock a collection. go-keyring reports it
// only in words ("failed to unlock correct collection"), so the words are what is matched.
func isLocked(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unlock") || strings.Contains(s, "is locked")
}

// KeyringError reports a failed keyring call. It matches ErrKeyringUnavailable.
type KeyringError struct {
	Op, Item, Service string
	// Keyring names the OS keyring ("Secret Service", "Windows Credential Manager", "macOS
	// Keychain"); Help says how to make it usable (KeyringHelp).
	Keyring, Help string
	Err           error
	// Locked is set when the Secret Service answered but its collection is locked.
	Locked bool
}

func (e *KeyringError) Error() string {
	item := ""
	if e.Item != "" {
		item = fmt.Sprintf(" of item %q", e.Item)
	}
	return fmt.Sprintf("%v: %s%s (%s, service %q) failed: %v. %s, then retry", ErrKeyringUnavailable, e.Op, item, e.Keyring, e.Service, e.Err, e.Help)
}

// Unwrap returns ErrKeyringUnavailable only. The backend's error stays in Err but is not
// unwrapped: a missing bus socket is ENOENT, which would otherwise match fs.ErrNotExist and be
// read as "no such item" by callers (who would then create a new identity).
func (e *KeyringError) Unwrap() error { return ErrKeyringUnavailable }

// Is matches ErrKeyringLocked when the collection is locked.
func (e *KeyringError) Is(target error) bool { return e.Locked && target == ErrKeyringLocked }

// errAbsent is what an operation returns for "no such item" (keyring.ErrNotFound); callers turn
// it into an error matching fs.ErrNotExist. It is distinct so no other error is taken for it.
var errAbsent = errors.New("keyring item absent")

// badValueError is a stored value this build cannot decode (not a keyring failure).
type badValueError struct{ err error }

func (e *badValueError) Error() string { return e.err.Error() }
func (e *badValueError) Unwrap() error { return e.err }

func notFound(name string) error {
	return fmt.Errorf("keyring item %q: %w", name, fs.ErrNotExist)
}

// isNotFound reports the backend's "no such item". Only keyring.ErrNotFound counts: a failed
// connection to a missing bus socket is ENOENT, which matches fs.ErrNotExist, and must never be
// mistaken for an absent item (the engine would create a new User ID).
func isNotFound(err error) bool {
	return errors.Is(err, keyring.ErrNotFound)
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("keyring item name is empty")
	case strings.HasPrefix(name, reservedPrefix):
		return fmt.Errorf("keyring item name %q is reserved: names starting with %q are the vault's own items (its index and parts)", name, reservedPrefix)
	case !utf8.ValidString(name) || len(name) > 1024:
		return fmt.Errorf("keyring item name is not valid UTF-8 of at most 1024 bytes")
	}
	return nil
}

// encodeValue keeps UTF-8 text (the versioned JSON bundles) as is, so `secret-tool lookup` shows
// it, and base64-encodes anything else behind encodedPrefix: Secret Service providers treat the
// value as text ("text/plain; charset=utf8" in go-keyring), and some may not keep arbitrary bytes.
//
// A value that starts with either marker prefix (encodedPrefix, or partsPrefix of a manifest) is
// encoded too, so a stored string starting with one of them is always what the vault wrote.
func encodeValue(v []byte) string {
	s := string(v)
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && !strings.HasPrefix(s, encodedPrefix) && !strings.HasPrefix(s, partsPrefix) {
		return s
	}
	return encodedPrefix + base64.StdEncoding.EncodeToString(v)
}

func decodeValue(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, encodedPrefix)
	if !ok {
		return []byte(s), nil
	}
	v, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("stored value is not valid base64 after %q (%v); delete the item or reset Poppydesk", encodedPrefix, err)
	}
	return v, nil
}
