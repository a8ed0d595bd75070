package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// cacheAdapter is discovery.Cache over store.EngineState. A store.CacheEntry has no field for
// the final URL after redirects, which discovery needs (spec 3: the document is used only when
// the final URL's path is exactly /.well-known/poppy.json), so an entry whose final URL differs
// from its key is stored as a small JSON envelope; an entry that was not redirected is stored as
// the plain document, readable in the database.
type cacheAdapter struct {
	st  store.EngineState
	now func() time.Time
	// company names the Company a URL's host belongs to, so that forgetting a Company removes
	// its cached documents ("" before its first discovery).
	company func(host string) string
}

type cacheEnvelope struct {
	FinalURL string          `json:"poppydesk_final_url"`
	JSON     json.RawMessage `json:"json,omitempty"`
	Raw      []byte          `json:"raw,omitempty"`
}

func (a cacheAdapter) Get(ctx context.Context, url string) (discovery.CacheEntry, bool, error) {
	r, err := a.st.GetCacheEntry(ctx, url)
	if errors.Is(err, fs.ErrNotExist) {
		return discovery.CacheEntry{}, false, nil
	}
	if err != nil {
		return discovery.CacheEntry{}, false, err
	}
	e := discovery.CacheEntry{FinalURL: url, Body: r.Body, ETag: r.ETag, Expires: r.Expires}
	if bytes.HasPrefix(r.Body, []byte(`{"poppydesk_final_url":`)) {
		var env cacheEnvelope
		if json.Unmarshal(r.Body, &env) == nil && env.FinalURL != "" {
			e.FinalURL, e.Body = env.FinalURL, env.Raw
			if env.JSON != nil {
				e.Body = env.JSON
			}
		}
	}
	return e, true, nil
}

func (a cacheAdapter) Put(ctx context.Context, url string, e discovery.CacheEntry) error {
	body := e.Body
	if e.FinalURL != url || bytes.HasPrefix(body, []byte(`{"poppydesk_final_url":`)) {
		env := cacheEnvelope{FinalURL: e.FinalURL}
		if json.Valid(body) {
			env.JSON = body
		} else {
			env.Raw = body
		}
		var err error
		if body, err = json.Marshal(env); err != nil {
			return err
		}
	}
	rec := store.CacheEntry{URL: url, Body: body, ETag: e.ETag, FetchedAt: a.now(), Expires: e.Expires}
	if u, err := neturl.Parse(url); err == nil && a.company != nil {
		rec.Company = a.company(strings.ToLower(u.Host))
	}
	return a.st.PutCacheEntry(ctx, rec)
}

func (a cacheAdapter) Delete(ctx context.Context, url string) error {
	return a.st.DeleteCacheEntry(ctx, url)
}

// knownAdapter is discovery.KnownStore over store.Settings: one setting per Company domain.
type knownAdapter struct{ st store.Settings }

const knownPrefix = "discovery.known_issuer:"

func (k knownAdapter) KnownIssuer(ctx context.Context, domain string) (string, bool, error) {
	v, err := k.st.GetSetting(ctx, knownPrefix+strings.ToLower(domain))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the known issuer of %s: %w", domain, err)
	}
	return v, v != "", nil
}

func (k knownAdapter) SetIssuer(ctx context.Context, domain, issuer string) error {
	return k.st.SetSetting(ctx, knownPrefix+strings.ToLower(domain), issuer)
}

// storedCompany is the document the engine keeps per Company: the verified Company, plus the
// chosen poppy.json and the issuer's metadata, which discovery.Company leaves out of its JSON.
type storedCompany struct {
	Company             *discovery.Company    `json:"company"`
	Document            *discovery.Document   `json:"document"`
	AuthorizationServer *discovery.ASMetadata `json:"authorization_server,omitempty"`
}

// storedDoc is the record document last stored for a Company (encodeCompany) and the Company it
// encodes.
type storedDoc struct {
	doc []byte
	co  *discovery.Company
}

// sameCompany reports whether a and b have the same encodeCompany: the request URLs their
// descriptions describe are compared as lists, the rest as encoded.
func sameCompany(a, b *discovery.Company) bool {
	if len(a.Described) != len(b.Described) {
		return false
	}
	for k, v := range a.Described {
		if w, ok := b.Described[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	ac, bc := *a, *b
	ac.Described, bc.Described = nil, nil
	ea, err := encodeCompany(&ac)
	if err != nil {
		return false
	}
	eb, err := encodeCompany(&bc)
	return err == nil && bytes.Equal(ea, eb)
}

func encodeCompany(c *discovery.Company) ([]byte, error) {
	return json.Marshal(storedCompany{Company: c, Document: c.Document, AuthorizationServer: c.AuthorizationServer})
}

func decodeCompany(raw []byte) (*discovery.Company, error) {
	var sc storedCompany
	if err := json.Unmarshal(raw, &sc); err != nil || sc.Company == nil || sc.Document == nil {
		return nil, fmt.Errorf("the stored Company is not in the format this build writes (%v); discover it again", err)
	}
	sc.Company.Document, sc.Company.AuthorizationServer = sc.Document, sc.AuthorizationServer
	return sc.Company, nil
}
