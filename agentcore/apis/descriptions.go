package apis

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Defaults of DescriptionsConfig.
const (
	DefaultDescriptionEntries = 8
	DefaultDescriptionBytes   = 128 << 20
)

// DescriptionsConfig configures [Descriptions].
type DescriptionsConfig struct {
	// Transport fetches the descriptions (its NoRedirectClient: no Session header, no
	// redirects). Required.
	Transport *transport.Transport
	// Cache keeps each document with its validators by URL (RFC 9111, a private cache): the
	// engine passes the cache its discovery uses, over the state database, so a description is
	// fetched again only when it is stale and has changed. Nil: discovery.NewMemoryCache().
	Cache discovery.Cache
	// MaxEntries and MaxBytes bound the parsed descriptions kept in memory: at most MaxEntries
	// documents (default DefaultDescriptionEntries) and MaxBytes bytes of documents (default
	// DefaultDescriptionBytes, counting each document's size); the least recently used is
	// dropped first (it stays in Cache, and is parsed again when next used).
	MaxEntries int
	MaxBytes   int
	// Now is the clock (nil: time.Now). Logger (nil: slog.Default()).
	Now    func() time.Time
	Logger *slog.Logger
}

// Descriptions is the one owner of the OpenAPI descriptions the engine uses (spec 7): each is
// fetched once per version, kept by the HTTP caching rules (RFC 9111: ETag, Cache-Control,
// revalidation with If-None-Match when stale) in Cache, parsed once, and shared read-only by
// every Client, the approval queue, the model's tools and the window. Safe for concurrent use.
type Descriptions struct {
	cfg DescriptionsConfig
	log *slog.Logger

	mu      sync.Mutex
	entries map[string]*descEntry // by description URL
	tick    uint64
}

// descEntry is one description in memory. mu is held while it is fetched or parsed, so
// concurrent users of one URL wait for one fetch.
type descEntry struct {
	mu      sync.Mutex
	p       *parsed
	digest  [sha256.Size]byte // of the document p was parsed from
	etag    string
	expires time.Time

	// Under Descriptions.mu:
	used uint64 // last use, for least-recently-used eviction
	size int    // the document's bytes while p is set, else 0
}

// NewDescriptions returns an empty Descriptions.
func NewDescriptions(cfg DescriptionsConfig) (*Descriptions, error) {
	if cfg.Transport == nil {
		return nil, errors.New("apis: Descriptions needs the engine's Transport")
	}
	if cfg.Cache == nil {
		cfg.Cache = discovery.NewMemoryCache()
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultDescriptionEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultDescriptionBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Descriptions{cfg: cfg, log: cfg.Logger, entries: map[string]*descEntry{}}, nil
}

// Get returns the description of an openapi entry of poppy.json seen through the Session
// destinations dest (spec 5.2): from memory while fresh, else from Cache while fresh, else
// fetched (conditionally when a validator is known) and parsed. Client.FetchOpenAPI reads
// through it with the Client's destinations and records the request URLs described.
func (ds *Descriptions) Get(ctx context.Context, api discovery.API, dest *transport.Destinations) (*Description, error) {
	if api.Type != "openapi" {
		return nil, fmt.Errorf("apis: %q is a %q API, not openapi", api.URL, api.Type)
	}
	p, err := ds.parsed(ctx, api.URL, false)
	if err != nil {
		return nil, err
	}
	d := p.view(dest.Allows)
	d.APIDescribe = api.Description
	return d, nil
}

// RequestURLs implements discovery.Describer for the engine's discovery: the request URLs the
// description at descURL describes, from the parsed description shared with every Client, so
// discovering a Company again reads none of its descriptions while they are fresh (and
// revalidates them with one conditional request each when revalidate is set or they are stale).
func (ds *Descriptions) RequestURLs(ctx context.Context, descURL string, revalidate bool) ([]string, error) {
	p, err := ds.parsed(ctx, descURL, revalidate)
	if err != nil {
		return nil, err
	}
	return slices.Clone(p.requestURLs), nil
}

var _ discovery.Describer = (*Descriptions)(nil)

// parsed returns the parsed description at u, shared read-only; revalidate asks the Company
// even while the copy is fresh.
func (ds *Descriptions) parsed(ctx context.Context, u string, revalidate bool) (*parsed, error) {
	e := ds.entry(u)
	e.mu.Lock()
	p, keep, err := ds.load(ctx, e, u, revalidate)
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ds.settle(u, e, p, keep)
	return p, nil
}

// Len reports how many parsed descriptions are in memory and their documents' total bytes.
func (ds *Descriptions) Len() (entries, bytes int) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, e := range ds.entries {
		if e.size > 0 {
			entries++
			bytes += e.size
		}
	}
	return entries, bytes
}

func (ds *Descriptions) entry(u string) *descEntry {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	e := ds.entries[u]
	if e == nil {
		e = &descEntry{}
		ds.entries[u] = e
	}
	ds.tick++
	e.used = ds.tick
	return e
}

// load returns the parsed description for e, fetching and parsing when needed; keep is false
// when the response may not be stored (Cache-Control: no-store), so it is used once. A document
// is parsed once per version: a 304, or a 200 whose body has the digest of the one in memory
// (a Company that sends no validator), keeps the parsed description.
func (ds *Descriptions) load(ctx context.Context, e *descEntry, u string, revalidate bool) (*parsed, bool, error) {
	now := ds.cfg.Now()
	if e.p != nil && now.Before(e.expires) && !revalidate {
		return e.p, true, nil
	}
	var (
		stored discovery.CacheEntry
		have   bool
	)
	etag := e.etag
	if e.p == nil {
		var err error
		stored, have, err = ds.cfg.Cache.Get(ctx, u)
		if err != nil {
			ds.log.WarnContext(ctx, "apis: reading a cached API description failed; fetching it", "url", u, "error", err)
			have = false
		}
		if have && stored.FinalURL != "" && stored.FinalURL != u {
			have = false // never a redirected answer: descriptions are not redirected
		}
		if have && now.Before(stored.Expires) && !revalidate {
			p, err := ds.parse(ctx, u, stored.Body)
			if err == nil {
				e.p, e.digest, e.etag, e.expires = p, sha256.Sum256(stored.Body), stored.ETag, stored.Expires
				return p, true, nil
			}
			ds.log.WarnContext(ctx, "apis: a cached API description no longer parses; fetching it", "url", u, "error", err)
			ds.cfg.Cache.Delete(ctx, u)
			have = false
		}
		etag = ""
		if have {
			etag = stored.ETag
		}
	}
	res, err := fetchDescription(ctx, ds.cfg.Transport, u, etag)
	if err != nil {
		return nil, false, err
	}
	store, exp := discovery.Freshness(res.header, ds.cfg.Now())
	if res.notModified {
		if et := res.header.Get("ETag"); et != "" {
			etag = et
		}
		if e.p == nil {
			p, err := ds.parse(ctx, u, stored.Body)
			if err != nil {
				// The Company confirmed a document this build cannot read: ask for it whole.
				ds.cfg.Cache.Delete(ctx, u)
				e.etag = ""
				return ds.load(ctx, e, u, false)
			}
			e.p, e.digest = p, sha256.Sum256(stored.Body)
			if store {
				ds.put(ctx, u, discovery.CacheEntry{FinalURL: u, Body: stored.Body, ETag: etag, Expires: exp})
			}
		}
		if !store {
			// The validated document may not be kept any longer (RFC 9111 §4.3.4: the 304's
			// headers replace the stored ones): used once, then fetched whole next time.
			ds.cfg.Cache.Delete(ctx, u)
			p := e.p
			e.p, e.etag = nil, ""
			return p, false, nil
		}
		// With the parsed document in memory, the stored entry keeps its old expiry: it is
		// revalidated again (one conditional request) after a restart.
		e.etag, e.expires = etag, exp
		return e.p, true, nil
	}
	digest := sha256.Sum256(res.body)
	p := e.p
	if p == nil || digest != e.digest {
		var err error
		if p, err = ds.parse(ctx, u, res.body); err != nil {
			e.p, e.etag = nil, ""
			return nil, false, err
		}
	}
	if !store {
		ds.cfg.Cache.Delete(ctx, u)
		e.p, e.etag = nil, ""
		return p, false, nil
	}
	e.p, e.digest, e.etag, e.expires = p, digest, res.header.Get("ETag"), exp
	ds.put(ctx, u, discovery.CacheEntry{FinalURL: u, Body: res.body, ETag: e.etag, Expires: exp})
	return p, true, nil
}

// parse parses one version of the description at u, and logs it (how big, how long: a big API
// takes a noticeable part of a second, once per version).
func (ds *Descriptions) parse(ctx context.Context, u string, body []byte) (*parsed, error) {
	start := ds.cfg.Now()
	p, err := parseOpenAPI(ctx, u, body)
	if err != nil {
		return nil, err
	}
	ds.log.DebugContext(ctx, "apis: parsed an API description", "url", u, "bytes", len(body), "operations", len(p.operations), "took", ds.cfg.Now().Sub(start))
	return p, nil
}

func (ds *Descriptions) put(ctx context.Context, u string, ce discovery.CacheEntry) {
	if err := ds.cfg.Cache.Put(ctx, u, ce); err != nil {
		ds.log.WarnContext(ctx, "apis: storing an API description in the cache failed; it is fetched again after a restart", "url", u, "error", err)
	}
}

// settle records the size of the entry just used and drops the least recently used entries
// beyond MaxEntries or MaxBytes (never the one just used).
func (ds *Descriptions) settle(u string, e *descEntry, p *parsed, keep bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if cur := ds.entries[u]; cur != e {
		return // dropped while it was loading
	}
	if keep {
		e.size = p.size
	} else {
		e.size = 0
	}
	for {
		n, total := 0, 0
		var lru string
		var lruUsed uint64
		for k, x := range ds.entries {
			if x.size == 0 {
				if x != e && ds.tick > uint64(4*ds.cfg.MaxEntries) && x.used < ds.tick-uint64(4*ds.cfg.MaxEntries) {
					delete(ds.entries, k) // a long-unused entry that holds nothing
				}
				continue
			}
			n++
			total += x.size
			if x != e && (lru == "" || x.used < lruUsed) {
				lru, lruUsed = k, x.used
			}
		}
		if lru == "" || (n <= ds.cfg.MaxEntries && total <= ds.cfg.MaxBytes) {
			return
		}
		delete(ds.entries, lru)
	}
}
