package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Item names in the KV. Company items escape their parts so no identifier can collide with another.
const (
	rootItem   = "root"
	deviceItem = "operator-device"
)

func companyItem(company, account string) string {
	return "company/" + url.PathEscape(company) + "/" + url.PathEscape(account)
}

// ItemWords says in words what the keyring item named name holds ("the sign-in of acct_1 at
// https://auth.shop.example"), for the label a keyring manager (Seahorse, KeePassXC) shows beside
// it; a name this package does not write is returned as it is.
func ItemWords(name string) string {
	switch name {
	case rootItem:
		return "the private key of your own identity"
	case deviceItem:
		return "this device's enrollment with your operator"
	}
	if company, account, ok := parseCompanyItem(name); ok {
		if account == "" {
			return "the keys and IDs Poppydesk uses at " + company
		}
		return "the sign-in of " + account + " at " + company
	}
	return name
}

func parseCompanyItem(name string) (company, account string, ok bool) {
	rest, found := strings.CutPrefix(name, "company/")
	if !found {
		return "", "", false
	}
	c, a, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	c, err1 := url.PathUnescape(c)
	a, err2 := url.PathUnescape(a)
	return c, a, err1 == nil && err2 == nil
}

// NewSecrets returns the typed [Secrets] over kv. Updates of one item are serialized in this
// process; each write is a single KV Set, so an interrupted rotation leaves the old or the new
// bundle, never neither.
func NewSecrets(kv KV) Secrets { return &typed{kv: kv} }

type typed struct {
	kv    KV
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// decoded are the Company bundles as last decoded, by item, with the stored bytes they were
	// decoded from: a signed request reads its account's bundle (token, DPoP key) and decodes it
	// again only when the item changed. At most maxDecoded (all dropped when it is reached).
	decoded map[string]decodedBundle
}

// maxDecoded bounds typed.decoded.
const maxDecoded = 64

type decodedBundle struct {
	raw string
	b   CompanyBundle
}

// clone is a copy of b that shares no slice with it, so a caller may change it freely.
func (b *CompanyBundle) clone() *CompanyBundle {
	c := *b
	c.Delegated = slices.Clone(b.Delegated)
	c.DPoPKey = slices.Clone(b.DPoPKey)
	c.Tokens = slices.Clone(b.Tokens)
	for i := range c.Tokens {
		c.Tokens[i].Scopes = slices.Clone(c.Tokens[i].Scopes)
	}
	for i := range c.Delegated {
		c.Delegated[i].PrivateJWK = slices.Clone(c.Delegated[i].PrivateJWK)
	}
	return &c
}

func (t *typed) lock(name string) func() {
	t.mu.Lock()
	if t.locks == nil {
		t.locks = map[string]*sync.Mutex{}
	}
	l, ok := t.locks[name]
	if !ok {
		l = &sync.Mutex{}
		t.locks[name] = l
	}
	t.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (t *typed) LoadRoot(ctx context.Context) (*RootBundle, error) {
	raw, err := t.kv.Get(ctx, rootItem)
	if err != nil {
		return nil, err
	}
	var b RootBundle
	if err := decode(raw, &b, &b.Version); err != nil {
		return nil, fmt.Errorf("root key item: %w", err)
	}
	return &b, nil
}

func (t *typed) SaveRoot(ctx context.Context, b *RootBundle) error {
	defer t.lock(rootItem)()
	b.Version = BundleVersion
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return t.kv.Set(ctx, rootItem, raw)
}

func (t *typed) LoadCompany(ctx context.Context, company, account string) (*CompanyBundle, error) {
	name := companyItem(company, account)
	raw, err := t.kv.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	d, ok := t.decoded[name]
	t.mu.Unlock()
	if ok && d.raw == string(raw) {
		return d.b.clone(), nil
	}
	var b CompanyBundle
	if err := decode(raw, &b, &b.Version); err != nil {
		return nil, fmt.Errorf("secrets of %s: %w", company, err)
	}
	t.mu.Lock()
	if t.decoded == nil || len(t.decoded) >= maxDecoded {
		t.decoded = map[string]decodedBundle{}
	}
	t.decoded[name] = decodedBundle{raw: string(raw), b: *b.clone()}
	t.mu.Unlock()
	return &b, nil
}

func (t *typed) UpdateCompany(ctx context.Context, company, account string, fn func(*CompanyBundle) error) (*CompanyBundle, error) {
	name := companyItem(company, account)
	defer t.lock(name)()
	b := &CompanyBundle{Version: BundleVersion}
	raw, err := t.kv.Get(ctx, name)
	switch {
	case err == nil:
		if err := decode(raw, b, &b.Version); err != nil {
			return nil, fmt.Errorf("secrets of %s: %w", company, err)
		}
	case errors.Is(err, ErrNotFound):
	default:
		return nil, err
	}
	if err := fn(b); err != nil {
		return nil, err
	}
	b.Version = BundleVersion
	out, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	if err := t.kv.Set(ctx, name, out); err != nil {
		return nil, err
	}
	var cp CompanyBundle
	return &cp, json.Unmarshal(out, &cp)
}

func (t *typed) DeleteCompany(ctx context.Context, company, account string) error {
	name := companyItem(company, account)
	defer t.lock(name)()
	err := t.kv.Delete(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (t *typed) Companies(ctx context.Context) ([][2]string, error) {
	names, err := t.kv.Names(ctx)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, n := range names {
		if c, a, ok := parseCompanyItem(n); ok {
			out = append(out, [2]string{c, a})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out, nil
}

func (t *typed) LoadDevice(ctx context.Context) (*DeviceBundle, error) {
	raw, err := t.kv.Get(ctx, deviceItem)
	if err != nil {
		return nil, err
	}
	var b DeviceBundle
	if err := decode(raw, &b, &b.Version); err != nil {
		return nil, fmt.Errorf("operator enrollment item: %w", err)
	}
	return &b, nil
}

func (t *typed) SaveDevice(ctx context.Context, b *DeviceBundle) error {
	defer t.lock(deviceItem)()
	b.Version = BundleVersion
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return t.kv.Set(ctx, deviceItem, raw)
}

func (t *typed) DeleteDevice(ctx context.Context) error {
	defer t.lock(deviceItem)()
	err := t.kv.Delete(ctx, deviceItem)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (t *typed) Reset(ctx context.Context) error { return t.kv.DeleteAll(ctx) }

// decode reads a versioned JSON value; a newer format than this build knows is refused with a
// clear error instead of being misread.
func decode(raw []byte, into any, version *int) error {
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("stored value is not valid JSON (%v); delete the item or reset Poppydesk", err)
	}
	if *version > BundleVersion {
		return fmt.Errorf("stored by a newer Poppydesk (format %d, this build reads up to %d); update Poppydesk", *version, BundleVersion)
	}
	return nil
}

// NewMemoryKV returns an in-memory [KV] for unit tests of other packages.
func NewMemoryKV() KV { return &memKV{items: map[string][]byte{}} }

type memKV struct {
	mu    sync.Mutex
	items map[string][]byte
}

func (m *memKV) Get(ctx context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[name]
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

func (m *memKV) Set(ctx context.Context, name string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[name] = append([]byte(nil), value...)
	return nil
}

func (m *memKV) Delete(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[name]; !ok {
		return ErrNotFound
	}
	delete(m.items, name)
	return nil
}

func (m *memKV) Names(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.items))
	for k := range m.items {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

func (m *memKV) DeleteAll(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items = map[string][]byte{}
	return nil
}
