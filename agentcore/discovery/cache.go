package discovery

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CacheEntry is one cached discovery document. It holds standard types only, so the vault can
// store it without importing this package.
type CacheEntry struct {
	FinalURL string    // the URL the body came from, after redirects
	Body     []byte    // the document
	ETag     string    // validator for If-None-Match ("" if none)
	Expires  time.Time // fresh until then (RFC 9111 §4.2); zero or past means revalidate
}

// Cache stores discovery documents keyed by the URL requested (RFC 9111, private cache).
type Cache interface {
	Get(ctx context.Context, url string) (entry CacheEntry, ok bool, err error)
	Put(ctx context.Context, url string, entry CacheEntry) error
	Delete(ctx context.Context, url string) error
}

// MemoryCache is an in-memory Cache, safe for concurrent use.
type MemoryCache struct {
	mu sync.Mutex
	m  map[string]CacheEntry
}

// NewMemoryCache returns an empty MemoryCache.
func NewMemoryCache() *MemoryCache { return &MemoryCache{m: map[string]CacheEntry{}} }

// Get implements Cache.
func (c *MemoryCache) Get(_ context.Context, url string) (CacheEntry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[url]
	if ok {
		e.Body = append([]byte(nil), e.Body...)
	}
	return e, ok, nil
}

// Put implements Cache.
func (c *MemoryCache) Put(_ context.Context, url string, e CacheEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.Body = append([]byte(nil), e.Body...)
	c.m[url] = e
	return nil
}

// Delete implements Cache.
func (c *MemoryCache) Delete(_ context.Context, url string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, url)
	return nil
}

// Freshness reads a response's caching directives as the discovery cache does (RFC 9111
// §5.2.2, §4.2.1), for other documents the engine keeps by the same rules (OpenAPI
// descriptions): store reports whether the response may be stored, expires when it stops being
// fresh.
func Freshness(h http.Header, now time.Time) (store bool, expires time.Time) {
	return freshness(h, now)
}

// freshness reads the response's caching directives (RFC 9111 §5.2.2, §4.2.1): store reports
// whether the response may be stored; expires is when it stops being fresh (now, for no-cache or
// when the response gives no explicit lifetime, so it is revalidated on next use).
func freshness(h http.Header, now time.Time) (store bool, expires time.Time) {
	store, expires = true, now
	maxAge := -1
	noCache := false
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store":
				return false, now
			case "no-cache":
				noCache = true
			case "max-age":
				if n, err := strconv.Atoi(strings.Trim(val, `"`)); err == nil && n >= 0 && maxAge < 0 {
					maxAge = n
				}
			}
		}
	}
	if noCache {
		return true, now
	}
	if maxAge >= 0 {
		age := 0
		if a, err := strconv.Atoi(h.Get("Age")); err == nil && a > 0 {
			age = a
		}
		return true, now.Add(time.Duration(maxAge-age) * time.Second)
	}
	if e := h.Get("Expires"); e != "" {
		if t, err := http.ParseTime(e); err == nil {
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				return true, now.Add(t.Sub(d)) // RFC 9111 §4.2.1: Expires - Date
			}
			return true, t
		}
		return true, now // an invalid Expires means already expired (RFC 9111 §5.3)
	}
	return true, now
}

// KnownStore remembers the issuer found for each Company domain, so discovery never falls back to
// "no issuer" for a Company whose issuer it knows (spec 3.2).
type KnownStore interface {
	// KnownIssuer returns the issuer last found for domain (organization.domain, lowercased).
	KnownIssuer(ctx context.Context, domain string) (issuer string, known bool, err error)
	// SetIssuer records the issuer found for domain; "" records that a successful discovery
	// established the domain has no issuer.
	SetIssuer(ctx context.Context, domain, issuer string) error
}

// MemoryKnown is an in-memory KnownStore.
type MemoryKnown struct {
	mu sync.Mutex
	m  map[string]string
}

// NewMemoryKnown returns an empty MemoryKnown.
func NewMemoryKnown() *MemoryKnown { return &MemoryKnown{m: map[string]string{}} }

// KnownIssuer implements KnownStore.
func (k *MemoryKnown) KnownIssuer(_ context.Context, domain string) (string, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	is, ok := k.m[strings.ToLower(domain)]
	return is, ok && is != "", nil
}

// SetIssuer implements KnownStore.
func (k *MemoryKnown) SetIssuer(_ context.Context, domain, issuer string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[strings.ToLower(domain)] = issuer
	return nil
}
