package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Implemented is the protocol version this engine implements.
const Implemented = "0.4"

// Config configures a Discoverer.
type Config struct {
	Transport *transport.Transport // required
	Cache     Cache                // nil: NewMemoryCache()
	Known     KnownStore           // nil: NewMemoryKnown()
	Now       func() time.Time     // nil: time.Now
	Logger    *slog.Logger         // nil: slog.Default()
	// Versions are the protocol versions implemented (default {Implemented}).
	Versions []string
	// Describer, when set, reads the OpenAPI descriptions the Company lists (spec 7) in place
	// of discovery's own fetch and read: the engine passes its apis.Descriptions, which keeps
	// each description parsed once per version, so discovering a Company again decodes none of
	// its descriptions while they are fresh.
	Describer Describer
}

// Discoverer finds and verifies Companies (spec 3).
type Discoverer struct {
	tr       *transport.Transport
	cache    Cache
	known    KnownStore
	now      func() time.Time
	log      *slog.Logger
	descr    Describer
	versions []string
}

// New returns a Discoverer.
func New(cfg Config) (*Discoverer, error) {
	if cfg.Transport == nil {
		return nil, errors.New("discovery: Config.Transport is required")
	}
	d := &Discoverer{tr: cfg.Transport, cache: cfg.Cache, known: cfg.Known, now: cfg.Now, log: cfg.Logger, versions: cfg.Versions,
		descr: cfg.Describer}
	if d.cache == nil {
		d.cache = NewMemoryCache()
	}
	if d.known == nil {
		d.known = NewMemoryKnown()
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if len(d.versions) == 0 {
		d.versions = []string{Implemented}
	}
	return d, nil
}

// Option changes one discovery.
type Option func(*options)

type options struct {
	noCache   bool
	cacheOnly bool
	report    *Report
}

// NoCache fetches every document again without using a cached copy (spec 3.4, after
// version_unsupported). Fresh results are still stored.
func NoCache() Option { return func(o *options) { o.noCache = true } }

// CacheOnly answers [Discoverer.FetchPublic] from the RFC 9111 cache alone, without the network:
// the cached copy, fresh or not (Public.Stale says which), or ErrNotCached. A screen that lists
// many Companies reads their documents this way, so it never waits on one Company's server.
func CacheOnly() Option { return func(o *options) { o.cacheOnly = true } }

// ErrNotCached: a CacheOnly read found no copy of the document.
var ErrNotCached = errors.New("the document is not in Poppydesk's cache yet")

// Company is a verified Company (spec 3, 3.2).
type Company struct {
	// Identifier is the issuer, or https://{organization.domain} with the host lowercased (3.2).
	Identifier   string       `json:"identifier"`
	Organization Organization `json:"organization"`
	// Issuer is "" when the Company has no issuer.
	Issuer string `json:"issuer,omitempty"`
	// IssuerRemoved is set when a previously known issuer was removed by this discovery, so the
	// identifier changed and User IDs and Sessions must be new (spec 3.2).
	IssuerRemoved bool   `json:"issuer_removed,omitempty"`
	SignIn        SignIn `json:"sign_in"`
	// Version is the chosen protocol version (3.4) and DocumentURL its document's URL.
	Version      string                      `json:"version"`
	DocumentURL  string                      `json:"document_url"`
	PoppyJSONURL string                      `json:"poppy_json_url"` // final URL after redirects
	Channels     Channels                    `json:"channels"`
	Extensions   map[string][]ExtensionEntry `json:"extensions,omitempty"`
	Scopes       []Scope                     `json:"scopes,omitempty"`
	// Described lists, by the url of each openapi entry of apis, the request URLs its
	// description describes: server URLs joined with path templates, such as
	// https://shop.example/api/orders/{id} (OpenAPIRequestURLs). They are the API's Session
	// destinations (spec 5.2, 7), known once the description was read, which discovery does
	// before the Company is used.
	Described map[string][]string `json:"described,omitempty"`
	// DescriptionErrors says, by the url of an openapi entry, why its description could not be
	// read; that API has no Session destinations.
	DescriptionErrors map[string]string `json:"description_errors,omitempty"`
	// Document is the chosen version's document; AuthorizationServer the issuer's metadata.
	Document            *Document   `json:"-"`
	AuthorizationServer *ASMetadata `json:"-"`
}

// SignIn says which sign-in types the Company offers Personal Agents (spec 3.2, 4).
type SignIn struct {
	Offered  bool `json:"offered"`
	Disabled bool `json:"disabled,omitempty"` // auth.disabled
	Direct   bool `json:"direct,omitempty"`
	Device   bool `json:"device,omitempty"`
}

// Channels are the Company's interaction channels (spec 3.1).
type Channels struct {
	Agent         *Agent         `json:"agent,omitempty"`
	APIs          []API          `json:"apis,omitempty"`
	Web           *Web           `json:"web,omitempty"`
	Feedback      *Feedback      `json:"feedback,omitempty"`
	ExcludedTasks *ExcludedTasks `json:"excluded_tasks,omitempty"`
}

// Scope is one described scope with its hints (spec 4.7).
type Scope struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	Changes      string `json:"changes,omitempty"` // none, reversible, irreversible ("" = no hints)
	PersonalData *bool  `json:"personal_data,omitempty"`
}

// ASMetadata is the part of RFC 8414 metadata the engine uses (spec 3.2).
type ASMetadata struct {
	Issuer                       string   `json:"issuer"`
	TokenEndpoint                string   `json:"token_endpoint"`
	RevocationEndpoint           string   `json:"revocation_endpoint"`
	AuthorizationEndpoint        string   `json:"authorization_endpoint,omitempty"`
	DeviceAuthorizationEndpoint  string   `json:"device_authorization_endpoint,omitempty"`
	GrantTypesSupported          []string `json:"grant_types_supported"`
	ScopesSupported              []string `json:"scopes_supported,omitempty"`
	ProtectedResources           []string `json:"protected_resources"`
	TokenEndpointAuthSigningAlgs []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	DPoPSigningAlgs              []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

const (
	grantAuthorizationCode = "authorization_code"
	grantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
	grantRefreshToken      = "refresh_token"
)

// Discover fetches and verifies the Company at domain ("example.com", or "host:port" in dev
// mode). Every failure is a *CheckError naming the check and spec section.
func (d *Discoverer) Discover(ctx context.Context, domain string, opts ...Option) (*Company, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	c, err := d.discover(ctx, domain, o)
	if err != nil {
		if ce, ok := AsCheckError(err); ok && ce.Domain == "" {
			ce.Domain = domain
		}
		if ce, ok := AsCheckError(err); ok && o.report != nil {
			o.report.add(CheckResult{Check: ce.Check, Section: ce.Section, URL: ce.URL, Err: ce})
		}
		return nil, err
	}
	if o.report != nil {
		for i := range o.report.Results {
			if ce := o.report.Results[i].Err; ce != nil && ce.Domain == "" {
				ce.Domain = domain
			}
		}
		if o.report.Failed() {
			return c, o.report.First()
		}
	}
	return c, nil
}

func (d *Discoverer) discover(ctx context.Context, domain string, o options) (*Company, error) {
	if domain == "" || strings.ContainsAny(domain, "/?#@ ") || strings.Contains(domain, "://") {
		return nil, &CheckError{Check: CheckDomain, Section: "3", Detail: fmt.Sprintf("%q is not a domain; give a host name such as example.com (or host:port in dev mode)", domain)}
	}
	wk := "https://" + domain + "/.well-known/poppy.json"
	if _, err := url.Parse(wk); err != nil {
		return nil, &CheckError{Check: CheckDomain, Section: "3", Detail: fmt.Sprintf("%q is not a valid host", domain)}
	}
	res, err := d.fetch(ctx, wk, fetchFollow, o.noCache)
	if err != nil {
		return nil, &CheckError{Check: CheckFetch, Section: "3", URL: wk, Detail: "could not fetch poppy.json", Err: err}
	}
	if res.status != http.StatusOK {
		return nil, &CheckError{Check: CheckFetch, Section: "3", URL: wk, Detail: fmt.Sprintf("poppy.json answered HTTP %d; a Company must publish it at https://{domain}/.well-known/poppy.json", res.status)}
	}
	final, _ := url.Parse(res.finalURL)
	if final.Path != "/.well-known/poppy.json" || final.RawQuery != "" || final.ForceQuery || final.RawPath != "" && final.RawPath != final.Path {
		if err := o.soft(&CheckError{Check: CheckFinalURL, Section: "3", URL: res.finalURL,
			Detail: "after redirects poppy.json came from a URL whose path is not exactly /.well-known/poppy.json or that has a query; the document is not used (otherwise an uploaded file could speak for the domain)"}); err != nil {
			return nil, err
		}
	} else {
		o.pass(CheckFinalURL, "3", res.finalURL)
	}
	host := authority(final)
	main, err := ParseDocument(res.body)
	if err != nil {
		return nil, withURL(err, res.finalURL)
	}
	if !strings.EqualFold(main.Organization.Domain, host) {
		if err := o.soft(&CheckError{Check: CheckOrganizationDomain, Section: "3, 3.1", URL: res.finalURL,
			Detail: fmt.Sprintf("organization.domain is %q but the document was served by %q; it must name the host that serves it after redirects (compared ignoring case)", main.Organization.Domain, host)}); err != nil {
			return nil, err
		}
	} else {
		o.pass(CheckOrganizationDomain, "3, 3.1", res.finalURL)
	}
	// Versions (spec 3.4).
	chosen, chosenURL := "", ""
	candidates := map[string]string{main.ProtocolVersion: res.finalURL}
	for v, u := range main.SupportedVersions {
		if _, ok := candidates[v]; !ok {
			candidates[v] = u
		}
	}
	for v, u := range candidates {
		if _, _, ok := headers.ParseVersion(v); !ok {
			continue
		}
		for _, impl := range d.versions {
			if Compatible(v, impl) && (chosen == "" || headers.Newer(v, chosen)) {
				chosen, chosenURL = v, u
			}
		}
	}
	if chosen == "" {
		offered := make([]string, 0, len(candidates))
		for v := range candidates {
			offered = append(offered, v)
		}
		sort.Strings(offered)
		return nil, &CheckError{Check: CheckVersion, Section: "3.4", URL: res.finalURL,
			Detail: fmt.Sprintf("the Company serves versions %s and none is compatible with %s that this Personal Agent implements; none of its documents can be used", strings.Join(offered, ", "), strings.Join(d.versions, ", "))}
	}
	doc := main
	docURL := res.finalURL
	if chosen != main.ProtocolVersion {
		doc, err = d.versionDocument(ctx, final, chosen, chosenURL, o)
		if err != nil {
			return nil, err
		}
		docURL = chosenURL
		if !strings.EqualFold(doc.Organization.Domain, host) {
			if err := o.soft(&CheckError{Check: CheckOrganizationDomain, Section: "3.4", URL: chosenURL,
				Detail: fmt.Sprintf("the version %s document names organization.domain %q, but every document a Company serves must have the same organization.domain (%q)", chosen, doc.Organization.Domain, host)}); err != nil {
				return nil, err
			}
		}
	}
	o.pass(CheckVersion, "3.4", docURL)
	c := &Company{Organization: doc.Organization, Version: chosen, DocumentURL: docURL, PoppyJSONURL: res.finalURL, Document: doc,
		Channels:   Channels{Agent: doc.Agent, APIs: doc.APIs, Web: doc.Web, Feedback: doc.Feedback, ExcludedTasks: doc.ExcludedTasks},
		Extensions: doc.Extensions, Scopes: scopes(doc)}
	if err := d.findIssuer(ctx, c, host, o); err != nil {
		return nil, err
	}
	d.describe(ctx, c, o)
	return c, nil
}

// versionDocument fetches a supported_versions document (spec 3.4).
func (d *Discoverer) versionDocument(ctx context.Context, final *url.URL, v, raw string, o options) (*Document, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || !strings.EqualFold(authority(u), authority(final)) {
		return nil, &CheckError{Check: CheckVersionDocument, Section: "3.4", URL: raw,
			Detail: fmt.Sprintf("supported_versions[%q] must be an HTTPS URL on the host that served poppy.json (%s)", v, authority(final))}
	}
	res, err := d.fetch(ctx, raw, fetchNoRedirect, o.noCache)
	if err != nil {
		return nil, &CheckError{Check: CheckVersionDocument, Section: "3.4", URL: raw, Detail: "could not fetch the version " + v + " document", Err: err}
	}
	if res.status >= 300 && res.status < 400 {
		return nil, &CheckError{Check: CheckVersionDocument, Section: "3.4", URL: raw, Detail: fmt.Sprintf("the version %s document answered a redirect (HTTP %d); Personal Agents must not follow redirects from supported_versions URLs", v, res.status)}
	}
	if res.status != http.StatusOK {
		return nil, &CheckError{Check: CheckVersionDocument, Section: "3.4", URL: raw, Detail: fmt.Sprintf("the version %s document answered HTTP %d", v, res.status)}
	}
	doc, err := ParseDocument(res.body)
	if err != nil {
		return nil, withURL(err, raw)
	}
	if doc.ProtocolVersion != v {
		return nil, &CheckError{Check: CheckVersionDocument, Section: "3.4", URL: raw, Detail: fmt.Sprintf("the document listed under version %q has protocol_version %q; they must be equal", v, doc.ProtocolVersion)}
	}
	if doc.hasSupportedVersions {
		return nil, &CheckError{Check: CheckVersionDocument, Section: "3.4", URL: raw, Detail: "a document listed in supported_versions must not have supported_versions itself"}
	}
	return doc, nil
}

func withURL(err error, u string) error {
	if ce, ok := AsCheckError(err); ok && ce.URL == "" {
		ce.URL = u
	}
	return err
}

// findIssuer runs spec 3.2: protected resource metadata, issuer selection, authorization server
// metadata and the checks in both directions. It sets the Company's identifier.
func (d *Discoverer) findIssuer(ctx context.Context, c *Company, host string, o options) error {
	doc := c.Document
	origin := "https://" + strings.ToLower(host)
	prURL := "https://" + c.Organization.Domain + "/.well-known/oauth-protected-resource"
	declared := ""
	if doc.Auth != nil {
		declared = doc.Auth.Issuer
	}
	knownKey := strings.ToLower(host)
	knownIssuer, known, err := d.known.KnownIssuer(ctx, knownKey)
	if err != nil {
		return &CheckError{Check: CheckKnownIssuer, Section: "3.2", Detail: "reading the known Companies store failed", Err: err}
	}
	res, err := d.fetch(ctx, prURL, fetchNoRedirect, o.noCache)
	if err != nil {
		return &CheckError{Check: CheckResourceMetadata, Section: "3.2", URL: prURL, Detail: "could not fetch the protected resource metadata; without it the issuer can't be verified, and a failure never means \"no issuer\"", Err: err}
	}
	var servers []string
	switch {
	case res.status == http.StatusNotFound:
		if known {
			return &CheckError{Check: CheckKnownIssuer, Section: "3.2", URL: prURL,
				Detail: fmt.Sprintf("the protected resource metadata answered 404, but this Company's issuer %s is known; a 404 does not establish that the issuer was removed (publish metadata with an empty authorization_servers to remove it)", knownIssuer)}
		}
	case res.status == http.StatusOK:
		var pr struct {
			Resource             *string  `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.Unmarshal(res.body, &pr); err != nil || pr.Resource == nil {
			return &CheckError{Check: CheckResourceMetadata, Section: "3.2", URL: prURL, Detail: "the protected resource metadata is not valid RFC 9728 metadata with a resource (never treated as \"no issuer\")"}
		}
		if *pr.Resource != "https://"+c.Organization.Domain && *pr.Resource != origin {
			return &CheckError{Check: CheckResourceMetadata, Section: "3.2", URL: prURL,
				Detail: fmt.Sprintf("resource is %q; it must be exactly %q", *pr.Resource, "https://"+c.Organization.Domain)}
		}
		servers = pr.AuthorizationServers
	case res.status >= 300 && res.status < 400:
		return &CheckError{Check: CheckResourceMetadata, Section: "3.2", URL: prURL, Detail: fmt.Sprintf("the protected resource metadata answered a redirect (HTTP %d); it must be served at https://{organization.domain}/.well-known/oauth-protected-resource (never treated as \"no issuer\")", res.status)}
	default:
		return &CheckError{Check: CheckResourceMetadata, Section: "3.2", URL: prURL, Detail: fmt.Sprintf("the protected resource metadata answered HTTP %d; only 404 means \"no issuer\", any other error stops discovery", res.status)}
	}
	if len(servers) == 0 {
		// No issuer: valid only when auth.issuer is absent and the Company offers no sign-in.
		if declared != "" {
			return &CheckError{Check: CheckIssuerSelection, Section: "3.1, 3.2", URL: prURL, Detail: fmt.Sprintf("auth.issuer names %s but the domain's protected resource metadata lists no authorization server", declared)}
		}
		if why := needsIssuer(doc); why != "" {
			return &CheckError{Check: CheckSignInConfiguration, Section: "3.2", URL: prURL, Detail: "the Company has no issuer, but " + why + "; a Company that offers sign-in must have an OAuth issuer"}
		}
		if known {
			// Reached only with valid metadata and an empty list: removal established (3.2).
			c.IssuerRemoved = true
		}
		if err := d.known.SetIssuer(ctx, knownKey, ""); err != nil {
			return &CheckError{Check: CheckKnownIssuer, Section: "3.2", Detail: "recording the Company failed", Err: err}
		}
		c.Identifier = origin
		return nil
	}
	issuer := ""
	switch {
	case len(servers) == 1:
		issuer = servers[0]
		if declared != "" && declared != issuer {
			return &CheckError{Check: CheckIssuerSelection, Section: "3.1, 3.2", URL: prURL, Detail: fmt.Sprintf("auth.issuer is %s but the protected resource metadata lists only %s; when present it must name that server", declared, issuer)}
		}
	default:
		if declared == "" {
			return &CheckError{Check: CheckIssuerSelection, Section: "3.1, 3.2", URL: prURL, Detail: fmt.Sprintf("the protected resource metadata lists %d authorization servers, so poppy.json must name the one Personal Agents use in auth.issuer", len(servers))}
		}
		for _, s := range servers {
			if s == declared {
				issuer = s
			}
		}
		if issuer == "" {
			return &CheckError{Check: CheckIssuerSelection, Section: "3.1, 3.2", URL: prURL, Detail: fmt.Sprintf("auth.issuer %s is not among the authorization servers the protected resource metadata lists (%s)", declared, strings.Join(servers, ", "))}
		}
	}
	as, err := d.authorizationServer(ctx, issuer, c.Organization.Domain, o)
	if err != nil {
		return err
	}
	c.Issuer, c.Identifier, c.AuthorizationServer = issuer, issuer, as
	disabled := doc.Auth != nil && doc.Auth.Disabled
	c.SignIn = SignIn{Disabled: disabled}
	if !disabled {
		c.SignIn.Direct = contains(as.GrantTypesSupported, grantAuthorizationCode)
		c.SignIn.Device = contains(as.GrantTypesSupported, grantDeviceCode)
		c.SignIn.Offered = c.SignIn.Direct || c.SignIn.Device
	} else if why := disabledConflict(doc); why != "" {
		return &CheckError{Check: CheckSignInConfiguration, Section: "3.2", URL: c.DocumentURL, Detail: "auth.disabled is true, but " + why}
	}
	if known && knownIssuer == issuer {
		return nil // recorded already: no write on every discovery
	}
	if known {
		d.log.InfoContext(ctx, "Company issuer changed; its identifier changed", "domain", host, "old", knownIssuer, "new", issuer)
	}
	if err := d.known.SetIssuer(ctx, knownKey, issuer); err != nil {
		return &CheckError{Check: CheckKnownIssuer, Section: "3.2", Detail: "recording the Company failed", Err: err}
	}
	return nil
}

// needsIssuer says why a document needs an issuer ("" if it doesn't).
func needsIssuer(doc *Document) string {
	if doc.Agent != nil {
		for _, p := range doc.Agent.Protocols {
			if p.Access == "signed_in" {
				return "agent.protocols lists access \"signed_in\""
			}
		}
	}
	if _, ok := doc.Extensions["mediated-sign-in"]; ok {
		return "it lists the mediated-sign-in extension"
	}
	return ""
}

func disabledConflict(doc *Document) string {
	if doc.Agent != nil {
		for _, p := range doc.Agent.Protocols {
			if p.Access == "signed_in" {
				return "agent.protocols lists access \"signed_in\", which a Company that sets auth.disabled must not"
			}
		}
	}
	if _, ok := doc.Extensions["mediated-sign-in"]; ok {
		return "it lists the mediated-sign-in extension, which a Company that sets auth.disabled must not"
	}
	return ""
}

// ASMetadataURL is the RFC 8414 §3.1 metadata URL of issuer: the well-known segment inserted
// between the host and the issuer's path.
func ASMetadataURL(issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.User != nil {
		return "", fmt.Errorf("issuer %q must be an HTTPS URL without query or fragment (RFC 8414 §2)", issuer)
	}
	p := u.EscapedPath()
	if p == "/" {
		p = ""
	}
	return "https://" + u.Host + "/.well-known/oauth-authorization-server" + p, nil
}

func (d *Discoverer) authorizationServer(ctx context.Context, issuer, domain string, o options) (*ASMetadata, error) {
	mu, err := ASMetadataURL(issuer)
	if err != nil {
		return nil, &CheckError{Check: CheckIssuerSelection, Section: "3.2", Detail: err.Error()}
	}
	res, err := d.fetch(ctx, mu, fetchNoRedirect, o.noCache)
	if err != nil {
		return nil, &CheckError{Check: CheckASMetadata, Section: "3.2", URL: mu, Detail: "could not fetch the issuer's authorization server metadata", Err: err}
	}
	if res.status != http.StatusOK {
		return nil, &CheckError{Check: CheckASMetadata, Section: "3.2", URL: mu, Detail: fmt.Sprintf("the issuer's metadata answered HTTP %d; the issuer must publish RFC 8414 metadata at this URL", res.status)}
	}
	var as ASMetadata
	if err := json.Unmarshal(res.body, &as); err != nil {
		return nil, &CheckError{Check: CheckASMetadata, Section: "3.2", URL: mu, Detail: "the issuer's metadata is not valid JSON metadata: " + err.Error()}
	}
	if as.Issuer != issuer {
		if err := o.soft(&CheckError{Check: CheckIssuerMatch, Section: "3.2", URL: mu, Detail: fmt.Sprintf("the metadata's issuer is %q but the issuer found is %q; they must match character for character", as.Issuer, issuer)}); err != nil {
			return nil, err
		}
	} else {
		o.pass(CheckIssuerMatch, "3.2", mu)
	}
	want := strings.ToLower(domain)
	listed := false
	for _, r := range as.ProtectedResources {
		u, err := url.Parse(r)
		if err == nil && u.Scheme == "https" && strings.ToLower(u.Host) == want && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil && !u.ForceQuery {
			listed = true
		}
	}
	if !listed {
		if err := o.soft(&CheckError{Check: CheckProtectedResources, Section: "3.2", URL: mu, Detail: fmt.Sprintf("the issuer's protected_resources does not list https://%s; the issuer must confirm every domain whose issuer it is, otherwise any domain could claim its tokens", domain)}); err != nil {
			return nil, err
		}
	} else {
		o.pass(CheckProtectedResources, "3.2", mu)
	}
	missing := func(field string) error {
		return &CheckError{Check: CheckASMetadata, Section: "3.2", URL: mu, Detail: field}
	}
	for _, f := range []struct{ name, v string }{{"token_endpoint", as.TokenEndpoint}, {"revocation_endpoint", as.RevocationEndpoint}} {
		if f.v == "" {
			return nil, missing(f.name + " is required")
		}
	}
	if !contains(as.GrantTypesSupported, grantRefreshToken) {
		return nil, missing("grant_types_supported is required and must include refresh_token (spec 4.4)")
	}
	if contains(as.GrantTypesSupported, grantAuthorizationCode) && as.AuthorizationEndpoint == "" {
		return nil, missing("authorization_endpoint is required because grant_types_supported includes authorization_code")
	}
	if contains(as.GrantTypesSupported, grantDeviceCode) && as.DeviceAuthorizationEndpoint == "" {
		return nil, missing("device_authorization_endpoint is required because grant_types_supported includes the device_code grant")
	}
	for _, f := range []struct{ name, v string }{{"token_endpoint", as.TokenEndpoint}, {"revocation_endpoint", as.RevocationEndpoint},
		{"authorization_endpoint", as.AuthorizationEndpoint}, {"device_authorization_endpoint", as.DeviceAuthorizationEndpoint}} {
		if f.v != "" {
			if _, err := transport.CheckURL(f.v); err != nil {
				return nil, &CheckError{Check: CheckHTTPS, Section: "3, 3.2", URL: mu, Detail: fmt.Sprintf("%s is %q; it must be an HTTPS URL", f.name, f.v)}
			}
		}
	}
	return &as, nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func scopes(doc *Document) []Scope {
	if doc.Auth == nil {
		return nil
	}
	names := map[string]bool{}
	for n := range doc.Auth.Scopes {
		names[n] = true
	}
	for n := range doc.Auth.ScopeHints {
		names[n] = true
	}
	var out []Scope
	for n := range names {
		s := Scope{Name: n, Description: doc.Auth.Scopes[n]}
		if h, ok := doc.Auth.ScopeHints[n]; ok {
			switch h.Changes {
			case "none", "reversible", "irreversible":
				s.Changes = h.Changes
			default:
				s.Changes = "irreversible" // spec 4.7: unknown values are treated as irreversible
			}
			s.PersonalData = h.PersonalData
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// authority is the URL's host[:port], lowercased, without the default port.
func authority(u *url.URL) string {
	h := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && p != "443" {
		return h + ":" + p
	}
	return h
}

type fetched struct {
	status   int
	body     []byte
	finalURL string
}

const maxDocument = 1 << 20

// fetchHow says how a document is fetched: poppy.json follows redirects (spec 3); the other
// discovery documents and the OpenAPI descriptions never do (spec 3.2, 3.4, 7).
type fetchHow int

const (
	fetchNoRedirect fetchHow = iota
	fetchFollow
	fetchDescription // no redirects, JSON or YAML, up to MaxDescription bytes
)

// fetch GETs a discovery document with the RFC 9111 cache: a fresh entry costs no network; a
// stale one with an ETag is revalidated with If-None-Match.
func (d *Discoverer) fetch(ctx context.Context, raw string, how fetchHow, noCache bool) (fetched, error) {
	accept, limit := "application/json", maxDocument
	if how == fetchDescription {
		accept, limit = "application/json, application/yaml;q=0.9, */*;q=0.1", MaxDescription
	}
	return d.get(ctx, raw, how, noCache, accept, limit)
}

// Public is a public document fetched with [Discoverer.FetchPublic].
type Public struct {
	Status   int    // the HTTP status (200 also for a copy from the cache or after a 304)
	Body     []byte // the body, at most the limit given
	FinalURL string // the URL the body came from, after redirects
	// Stale is true for a CacheOnly copy past its freshness lifetime (RFC 9111 §4.2).
	Stale bool
}

// FetchPublic GETs a public document a Company publishes besides its discovery documents, such
// as its excluded tasks (spec 9.1) and skill artifacts (9.4), the way discovery fetches its own:
// through the transport's discovery client (every redirect to HTTPS only, no credentials and no
// Session header, the address policy at connection time: spec 3) and through the same RFC 9111
// cache. accept is the Accept header; a body longer than limit bytes is an error. NoCache()
// fetches again without the cached copy; CacheOnly() reads only the cache.
func (d *Discoverer) FetchPublic(ctx context.Context, rawURL, accept string, limit int, opts ...Option) (Public, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if _, err := transport.CheckURL(rawURL); err != nil {
		return Public{}, err
	}
	if o.cacheOnly {
		entry, cached, err := d.cache.Get(ctx, rawURL)
		switch {
		case err != nil:
			return Public{}, fmt.Errorf("reading the cached copy of %s failed: %w", rawURL, err)
		case !cached || len(entry.Body) > limit:
			return Public{}, ErrNotCached
		}
		return Public{Status: http.StatusOK, Body: entry.Body, FinalURL: entry.FinalURL, Stale: !d.now().Before(entry.Expires)}, nil
	}
	res, err := d.get(ctx, rawURL, fetchFollow, o.noCache, accept, limit)
	if err != nil {
		return Public{}, err
	}
	return Public{Status: res.status, Body: res.body, FinalURL: res.finalURL}, nil
}

func (d *Discoverer) get(ctx context.Context, raw string, how fetchHow, noCache bool, accept string, limit int) (fetched, error) {
	now := d.now()
	var (
		entry  CacheEntry
		cached bool
	)
	if !noCache {
		var err error
		entry, cached, err = d.cache.Get(ctx, raw)
		if err != nil {
			d.log.WarnContext(ctx, "discovery cache read failed; fetching", "url", raw, "error", err)
			cached = false
		}
		if cached && now.Before(entry.Expires) {
			return fetched{status: http.StatusOK, body: entry.Body, finalURL: entry.FinalURL}, nil
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fetched{}, err
	}
	req.Header.Set("Accept", accept)
	if cached && entry.ETag != "" {
		req.Header.Set("If-None-Match", entry.ETag)
	}
	client := d.tr.NoRedirectClient()
	if how == fetchFollow {
		client = d.tr.DiscoveryClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return fetched{}, err
	}
	defer resp.Body.Close()
	final := resp.Request.URL.String()
	if resp.StatusCode == http.StatusNotModified && cached && final == entry.FinalURL {
		store, exp := freshness(resp.Header, d.now())
		if store {
			entry.Expires = exp
			if et := resp.Header.Get("ETag"); et != "" {
				entry.ETag = et
			}
			d.put(ctx, raw, entry)
		} else {
			d.cache.Delete(ctx, raw)
		}
		return fetched{status: http.StatusOK, body: entry.Body, finalURL: entry.FinalURL}, nil
	}
	if resp.StatusCode == http.StatusNotModified {
		if noCache {
			// The request had no validator, so a 304 is meaningless (RFC 9110 §15.4.5). Asking
			// again would loop for as long as the server keeps answering 304.
			return fetched{}, fmt.Errorf("%s answered 304 Not Modified to a request without If-None-Match (RFC 9110 §15.4.5); the server must answer 200 with the document (spec 3)", raw)
		}
		// A 304 we can't use (no matching entry): fetch again, once, without a validator.
		d.cache.Delete(ctx, raw)
		return d.get(ctx, raw, how, true, accept, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return fetched{}, fmt.Errorf("reading %s: %w", raw, err)
	}
	if len(body) > limit {
		return fetched{}, &tooLargeError{url: raw, limit: limit}
	}
	if resp.StatusCode == http.StatusOK {
		if store, exp := freshness(resp.Header, d.now()); store {
			d.put(ctx, raw, CacheEntry{FinalURL: final, Body: body, ETag: resp.Header.Get("ETag"), Expires: exp})
		} else {
			d.cache.Delete(ctx, raw)
		}
	}
	return fetched{status: resp.StatusCode, body: body, finalURL: final}, nil
}

// tooLargeError is a document longer than the bytes the engine reads of it.
type tooLargeError struct {
	url   string
	limit int
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.url, e.limit)
}

func (d *Discoverer) put(ctx context.Context, key string, e CacheEntry) {
	if err := d.cache.Put(ctx, key, e); err != nil {
		d.log.WarnContext(ctx, "discovery cache write failed", "url", key, "error", err)
	}
}

// AgentEndpoint returns the `poppy` protocol endpoint of the Company Agent (spec 8.1): the first
// entry of agent.protocols with type "poppy", without a trailing slash; unfamiliar types are
// skipped. false when the Company lists none.
func (c *Company) AgentEndpoint() (string, bool) {
	if c.Channels.Agent == nil {
		return "", false
	}
	for _, p := range c.Channels.Agent.Protocols {
		if p.Type == "poppy" && p.Endpoint != "" {
			return strings.TrimSuffix(p.Endpoint, "/"), true
		}
	}
	return "", false
}

// SessionDestinations returns the Company's Session destinations (spec 5.2) from the chosen
// document: the request URLs its listed APIs describe (an MCP server's url; for an OpenAPI API,
// its description's servers joined with its paths, as read at discovery, each path template
// matching one segment per expression: Described), the conversation endpoint and the routes of
// spec 8.2 below it, {browser_session_endpoint}/authorize, the feedback endpoint, and the
// extension endpoints and the paths below them. Discovery and description documents, OAuth
// endpoints, the website's pages the document names (its root, the browser-session page, the
// logo), excluded tasks and skill URLs are excluded whatever the layout, and so is every path
// under /.well-known/ (transport.Destinations).
func (c *Company) SessionDestinations() (*transport.Destinations, error) {
	var b transport.DestinationsBuilder
	doc := c.Document
	for _, a := range doc.APIs {
		switch a.Type {
		case "mcp":
			if err := b.Exact(a.URL); err != nil {
				return nil, err
			}
		case "openapi":
			for _, t := range c.Described[a.URL] {
				if err := b.Template(t); err != nil {
					// A path the transport can't match safely (a dot-segment, a backslash) is
					// left out: its operations are unavailable (agentcore/apis says why).
					continue
				}
			}
		}
	}
	if doc.Agent != nil {
		for _, p := range doc.Agent.Protocols {
			if p.Type != "poppy" {
				continue
			}
			// spec 8.2: POST {endpoint}, and {endpoint}/{id}/messages, events, handoff, close.
			if err := b.Exact(p.Endpoint); err != nil {
				return nil, err
			}
			u, _ := url.Parse(p.Endpoint)
			u.RawQuery, u.ForceQuery, u.Fragment = "", false, ""
			ep := strings.TrimSuffix(u.String(), "/")
			for _, r := range []string{"messages", "events", "handoff", "close"} {
				b.Template(ep + "/{id}/" + r) // the endpoint is a valid HTTPS URL (Exact above)
			}
		}
	}
	if doc.Web != nil && doc.Web.BrowserSessionEndpoint != "" {
		if err := b.Exact(strings.TrimSuffix(doc.Web.BrowserSessionEndpoint, "/") + "/authorize"); err != nil {
			return nil, err
		}
	}
	if doc.Feedback != nil && doc.Feedback.Endpoint != "" {
		if err := b.Exact(doc.Feedback.Endpoint); err != nil {
			return nil, err
		}
	}
	for _, es := range doc.Extensions {
		for _, e := range es {
			if ep := e.Endpoint(); ep != "" {
				if err := b.Prefix(ep); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, u := range c.notDestinations() {
		b.Exclude(u) // a URL that isn't a valid HTTPS URL can't be requested anyway
	}
	return b.Build(), nil
}

// notDestinations lists the URLs of the Company's documents, OAuth endpoints and pages, which
// never carry the Session header (spec 5.2), even when an API or endpoint entry would cover them.
func (c *Company) notDestinations() []string {
	doc := c.Document
	out := []string{c.PoppyJSONURL, c.DocumentURL, "https://" + c.Organization.Domain + "/", doc.Organization.LogoURI}
	for _, u := range doc.SupportedVersions {
		out = append(out, u)
	}
	for _, a := range doc.APIs {
		if a.Type == "openapi" {
			out = append(out, a.URL)
		}
	}
	if as := c.AuthorizationServer; as != nil {
		out = append(out, as.Issuer, as.TokenEndpoint, as.RevocationEndpoint, as.AuthorizationEndpoint, as.DeviceAuthorizationEndpoint)
	}
	if doc.Web != nil && doc.Web.BrowserSessionEndpoint != "" {
		out = append(out, doc.Web.BrowserSessionEndpoint)
	}
	if doc.ExcludedTasks != nil {
		out = append(out, doc.ExcludedTasks.URL)
	}
	return append(out, skillURLs(c.PoppyJSONURL, doc.SkillIndex)...)
}

// skillURLs are the artifact URLs of a skill_index, resolved against the final poppy.json URL
// (spec 9.4): listing them does not make them API endpoints.
func skillURLs(base string, index json.RawMessage) []string {
	if len(index) == 0 {
		return nil
	}
	var idx struct {
		Skills []struct {
			URL string `json:"url"`
		} `json:"skills"`
	}
	b, err := url.Parse(base)
	if err != nil || json.Unmarshal(index, &idx) != nil {
		return nil
	}
	var out []string
	for _, s := range idx.Skills {
		if r, err := url.Parse(s.URL); err == nil {
			out = append(out, b.ResolveReference(r).String())
		}
	}
	return out
}
