package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// Settings is the part of the state store that keeps small named values. *vault.State
// satisfies it as it is; the engine keeps the known issuers there (spec 3.2).
type Settings interface {
	// GetSetting returns an error matching fs.ErrNotExist when key is not set.
	GetSetting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
}

// State is the engine's non-secret memory (DESIGN.md: SQLite through the vault). Its record
// types mirror the vault's field for field, so the adapter in package main (cli_engine.go) is a
// plain copy; [NewMemoryState] is an in-memory State for tests. Nothing the engine writes here
// is secret (DESIGN.md invariant 5): no token, key, Session JWT, User ID or Agent ID.
// Errors for absent records match fs.ErrNotExist; AddSession of a used sid matches fs.ErrExist.
type State interface {
	Settings
	GetCacheEntry(ctx context.Context, url string) (CacheRecord, error)
	PutCacheEntry(ctx context.Context, e CacheRecord) error
	DeleteCacheEntry(ctx context.Context, url string) error
	PutCompany(ctx context.Context, c CompanyRecord) error
	GetCompany(ctx context.Context, identifier string) (CompanyRecord, error)
	AddSession(ctx context.Context, s SessionRecord) error
	EndSession(ctx context.Context, sid string, at time.Time) error
	AddExchange(ctx context.Context, e ExchangeRecord) (int64, error)
}

// CacheRecord is a cached discovery document (vault.CacheEntry).
type CacheRecord struct {
	URL       string
	Company   string
	Body      []byte
	ETag      string
	FetchedAt time.Time
	Expires   time.Time
}

// CompanyRecord is a discovered Company as stored (vault.Company). Document is the JSON the
// engine writes (see [storedCompany]).
type CompanyRecord struct {
	Identifier string
	Domain     string
	Document   json.RawMessage
	FetchedAt  time.Time
	ETag       string
	Expires    time.Time
}

// SessionRecord is one Session (vault.Session): sid, version and extensions. The sid is not
// secret; the User ID it signs for is, and is never part of this record (spec 5.1).
type SessionRecord struct {
	SID        string
	Company    string
	Account    string
	Version    string
	Extensions []string
	Started    time.Time
	Ended      time.Time
}

// ExchangeRecord is one HTTP exchange for the inspector (vault.Exchange), already redacted by
// agentcore/transport. When no response arrived, Status is 0 and ResponseBody holds the
// (redacted) error text.
type ExchangeRecord struct {
	ID              int64
	At              time.Time
	Company         string
	Direction       string
	Method          string
	URL             string
	Status          int
	RequestHeaders  http.Header
	RequestBody     []byte
	ResponseHeaders http.Header
	ResponseBody    []byte
	Duration        time.Duration
}

// cacheAdapter is discovery.Cache over State. The vault's cache rows have no column for the
// final URL after redirects, which discovery needs (spec 3: the document is used only when the
// final URL's path is exactly /.well-known/poppy.json), so an entry whose final URL differs
// from its key is stored as a small JSON envelope; an entry that was not redirected is stored
// as the plain document, readable in the database.
type cacheAdapter struct {
	st  State
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
	if strings.HasPrefix(string(r.Body), `{"poppydesk_final_url":`) {
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
	if e.FinalURL != url || strings.HasPrefix(string(body), `{"poppydesk_final_url":`) {
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
	rec := CacheRecord{URL: url, Body: body, ETag: e.ETag, FetchedAt: a.now(), Expires: e.Expires}
	if u, err := neturl.Parse(url); err == nil && a.company != nil {
		rec.Company = a.company(strings.ToLower(u.Host))
	}
	return a.st.PutCacheEntry(ctx, rec)
}

func (a cacheAdapter) Delete(ctx context.Context, url string) error {
	return a.st.DeleteCacheEntry(ctx, url)
}

// knownAdapter is discovery.KnownStore over Settings: one setting per Company domain.
type knownAdapter struct{ st Settings }

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
