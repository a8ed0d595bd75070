package apis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Description is a Company's OpenAPI description, as the engine uses it (spec 7): the index of
// one parsed document seen through one Company's Session destinations. A Description from
// Client.FetchOpenAPI shares its Operations (and everything they hold) with every other reader
// of the same version: read-only.
type Description struct {
	URL         string // where it was fetched
	OpenAPI     string // "3.0.3", "3.1.0", ...
	Title       string
	Version     string
	APIDescribe string // the poppy.json entry's description
	// Schemes are the security schemes, by name.
	Schemes map[string]SecurityScheme
	// Tags are the document's tags, in its order (operations name theirs in Operation.Tags).
	Tags       []Tag
	Operations []Operation

	p *parsed // the parsed document this view shares (nil for a Description built by hand)
}

// SecurityScheme is one security scheme. For OAuth2, Scopes holds every scope of its flows with
// its description (spec 3.1 auth.scopes uses the same form).
type SecurityScheme struct {
	Name, Type, Description string
	Scopes                  map[string]string
}

// Operation is one operation of the API.
type Operation struct {
	ID          string // operationId, or "METHOD /path" when there is none
	Method      string
	Path        string // the path template, e.g. /orders/{id}/exchanges
	ServerURL   string // the resolved absolute server URL
	Summary     string
	Description string
	Deprecated  bool
	Tags        []string
	Parameters  []Parameter
	RequestBody *RequestBody
	// Responses are the documented responses by status code ("200", "4XX", "default"), sorted.
	Responses []Response
	// Security lists the alternatives (any one suffices); each alternative lists requirements
	// that all apply. Empty: no security requirement (callable signed out).
	Security [][]SecurityRequirement
	// Unavailable, when set, says why the engine will not call this operation (e.g. its URL is
	// not a Session destination, spec 5.2).
	Unavailable string
}

// Unsafe reports whether the operation's method gets an Idempotency-Key.
func (o *Operation) Unsafe() bool { return Unsafe(o.Method) }

// Scopes returns the scopes of the first security alternative (nil when none is needed).
func (o *Operation) Scopes() []string {
	if len(o.Security) == 0 {
		return nil
	}
	var out []string
	for _, r := range o.Security[0] {
		for _, s := range r.Scopes {
			out = append(out, s.Name)
		}
	}
	return out
}

// Parameter is one parameter (in path, query or header).
type Parameter struct {
	Name, In, Description string
	Required              bool
	Schema                json.RawMessage
}

// RequestBody is the operation's request body.
type RequestBody struct {
	Required     bool
	Description  string
	ContentTypes []string
	// Schema is the JSON schema of application/json (or another JSON media type) when present,
	// as the description writes it: local $refs to components.schemas stay references
	// (Description.Detail lists the schemas they name).
	Schema json.RawMessage
}

// Response is one documented response of an operation.
type Response struct {
	Status, Description string
	Schema              json.RawMessage // of a JSON media type, when present (local $refs kept)
}

// SecurityRequirement is one scheme of a requirement with the scopes it needs.
type SecurityRequirement struct {
	Scheme string
	Type   string // oauth2, http, apiKey, openIdConnect (or "" if the scheme is not defined)
	Scopes []Scope
}

// Scope is a scope with its description from the security scheme.
type Scope struct {
	Name, Description string
}

// Operation returns the operation with this ID.
func (d *Description) Operation(id string) (*Operation, bool) {
	if d.p != nil {
		if i, ok := d.p.byID[id]; ok && i < len(d.Operations) && d.Operations[i].ID == id {
			return &d.Operations[i], true
		}
		return nil, false
	}
	for i := range d.Operations {
		if d.Operations[i].ID == id {
			return &d.Operations[i], true
		}
	}
	return nil, false
}

// ErrDescription is matched (errors.Is) by every failure to fetch or read an API description.
var ErrDescription = errors.New("apis: unusable API description")

type descError struct {
	url, msg string
	err      error
}

func (e *descError) Error() string {
	s := fmt.Sprintf("the OpenAPI description at %s (listed in poppy.json apis, spec 7) %s", e.url, e.msg)
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}
func (e *descError) Unwrap() error        { return e.err }
func (e *descError) Is(target error) bool { return target == ErrDescription }

// MaxDescription is the largest OpenAPI description the engine reads (discovery.MaxDescription:
// 32 MiB, more than twice GitHub's 13 MB REST API description). A larger one is refused with an
// error naming the limit.
const MaxDescription = discovery.MaxDescription

// FetchOpenAPI returns the description of an openapi entry of poppy.json. With
// Config.Descriptions (the engine's), the document is fetched once per version and kept by the
// RFC 9111 rules over the cache discovery fetched it through, so it is usually not downloaded
// again (Descriptions); without, it is fetched and parsed on every call. The request carries no
// Session header and no credentials (a description is not a Session destination, spec 5.2) and
// is never redirected; at most MaxDescription bytes are read. The request URLs the description
// describes become Session destinations of this Client (and of every Client sharing its
// Config.Described) in place of those of the entry's earlier reads: Send may sign requests to
// them from now on (spec 5.2, 7). Each operation whose URL is neither one of the Session destinations
// nor, unless they refuse it, described is Unavailable with the reason.
func (c *Client) FetchOpenAPI(ctx context.Context, api discovery.API) (*Description, error) {
	if api.Type != "openapi" {
		return nil, fmt.Errorf("apis: %q is a %q API, not openapi", api.URL, api.Type)
	}
	var p *parsed
	if c.cfg.Descriptions != nil {
		var err error
		if p, err = c.cfg.Descriptions.parsed(ctx, api.URL, false); err != nil {
			return nil, err
		}
	} else {
		res, err := fetchDescription(ctx, c.tr, api.URL, "")
		if err != nil {
			return nil, err
		}
		if p, err = parseOpenAPI(ctx, api.URL, res.body); err != nil {
			return nil, err
		}
	}
	c.described.record(api.URL, p.destinations())
	d := *p.viewOf(c.dest)
	d.APIDescribe = api.Description
	return &d, nil
}

// fetched is one answer to a description request.
type fetchedDesc struct {
	notModified bool
	body        []byte
	header      http.Header
}

// fetchDescription GETs a description without the Session header, never redirected, with
// If-None-Match when etag is set.
func fetchDescription(ctx context.Context, tr *transport.Transport, raw, etag string) (*fetchedDesc, error) {
	u, err := transport.CheckURL(raw)
	if err != nil {
		return nil, &descError{url: raw, msg: "is not an HTTPS URL (spec 3)", err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &descError{url: raw, msg: "cannot be requested", err: err}
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.1")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := tr.NoRedirectClient().Do(req)
	if err != nil {
		return nil, &descError{url: raw, msg: "could not be fetched", err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && etag != "" {
		return &fetchedDesc{notModified: true, header: resp.Header}, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, &descError{url: raw, msg: fmt.Sprintf("answered a redirect (HTTP %d to %q), which the engine does not follow; the Company should list the final URL in poppy.json", resp.StatusCode, resp.Header.Get("Location"))}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &descError{url: raw, msg: fmt.Sprintf("answered HTTP %d instead of the description", resp.StatusCode)}
	}
	if resp.ContentLength > MaxDescription {
		return nil, &descError{url: raw, msg: fmt.Sprintf("is %d bytes, larger than the %d MiB the engine reads (apis.MaxDescription); the Company should split its API into smaller descriptions", resp.ContentLength, MaxDescription>>20)}
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, MaxDescription+1)); err != nil {
		return nil, &descError{url: raw, msg: "could not be read", err: err}
	}
	if buf.Len() > MaxDescription {
		return nil, &descError{url: raw, msg: fmt.Sprintf("is larger than the %d MiB the engine reads (apis.MaxDescription); the Company should split its API into smaller descriptions", MaxDescription>>20)}
	}
	return &fetchedDesc{body: buf.Bytes(), header: resp.Header}, nil
}

// ParseOpenAPI reads an OpenAPI 3.0 or 3.1 description (JSON or YAML) fetched from descURL.
// External $refs are refused. Operations whose URL is not HTTPS or not one of dest are listed
// with Unavailable set (dest: Session destinations such as discovery.Company.SessionDestinations,
// which hold the request URLs of the description read at discovery, spec 5.2).
func ParseOpenAPI(ctx context.Context, descURL string, data []byte, dest *transport.Destinations) (*Description, error) {
	p, err := parseOpenAPI(ctx, descURL, data)
	if err != nil {
		return nil, err
	}
	return p.view(dest.Allows), nil
}

func parseOpenAPI(ctx context.Context, descURL string, data []byte) (*parsed, error) {
	base, err := transport.CheckURL(descURL)
	if err != nil {
		return nil, &descError{url: descURL, msg: "is not an HTTPS URL (spec 3)", err: err}
	}
	return parse(ctx, descURL, base, data)
}

// view is the Description of p for a Company whose Session destinations allows accepts: every
// operation whose URL it refuses is Unavailable (spec 5.2).
func (p *parsed) view(allows func(*url.URL) bool) *Description {
	d := &Description{URL: p.url, OpenAPI: p.openAPI, Title: p.title, Version: p.version, Schemes: p.schemes, Tags: p.tags,
		Operations: make([]Operation, len(p.operations)), p: p}
	copy(d.Operations, p.operations)
	markUnavailable(d, allows)
	return d
}

// markUnavailable sets Unavailable on each operation whose URL allows refuses (spec 5.2).
func markUnavailable(d *Description, allows func(*url.URL) bool) {
	for i := range d.Operations {
		o := &d.Operations[i]
		if o.Unavailable != "" {
			continue
		}
		if u, err := url.Parse(o.ServerURL + placeholderPath(o.Path)); err != nil || !allows(u) {
			o.Unavailable = unavailableReason(o)
		}
	}
}

// unavailableReason says why an operation whose URL is not a Session destination is unavailable.
func unavailableReason(o *Operation) string {
	return fmt.Sprintf("its URL %s%s is not one of the Company's Session destinations (spec 5.2: a document, OAuth endpoint or page that never gets the Session JWT, or a path the engine cannot match safely), so the engine will not send the Session JWT there", o.ServerURL, o.Path)
}

func isJSON(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// placeholderPath fills path parameters with "x" to check a template against the destinations.
func placeholderPath(p string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			b.WriteString(p)
			return b.String()
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			b.WriteString(p)
			return b.String()
		}
		b.WriteString(p[:i] + "x")
		p = p[i+j+1:]
	}
}

// Input is what a call of an operation fills in.
type Input struct {
	Path   map[string]string // path parameters
	Query  url.Values        // query parameters
	Header http.Header       // header parameters the operation declares
	// Body is the JSON request body (nil for none).
	Body json.RawMessage
	// AccessToken is sent when signed in ("" for signed out).
	AccessToken string
}

// checkPathValue refuses a path parameter value that a server could read as a dot-segment or a
// path separator (invariant 6, spec 5.2): url.PathEscape leaves "." and ".." alone, so
// /orders/{id} with id ".." would name /orders/.. = the API root's parent once normalised; and
// "/" or a backslash would be sent as %2F or %5C, which transport.CheckURL refuses. Values that
// decode (once or more, for servers that decode twice) to "." or ".." are refused too.
func checkPathValue(v string) error {
	if strings.ContainsAny(v, "/\\") {
		return errors.New("holds a slash or backslash, which a path parameter cannot carry safely (the server could read it as a path separator); pass the value without it")
	}
	for range 4 {
		if v == "." || v == ".." {
			return errors.New(`is "." or ".." (or percent-encodes it), which the server would resolve as a dot-segment to another path (RFC 3986 §5.2.4); pass the resource's real identifier`)
		}
		dec, err := url.PathUnescape(v)
		if err != nil || dec == v {
			break
		}
		v = dec
		if strings.ContainsAny(v, "/\\") {
			return errors.New("percent-encodes a slash or backslash, which the server could read as a path separator; pass the value without it")
		}
	}
	return nil
}

// NewRequest builds the request for operation id: path parameters escaped into the path template,
// query and declared header parameters, the JSON body, and an Idempotency-Key for an unsafe
// method. Missing required parameters or body are an error naming them.
func (d *Description) NewRequest(id string, in Input) (*Request, error) {
	op, ok := d.Operation(id)
	if !ok {
		return nil, fmt.Errorf("apis: the description at %s has no operation %q", d.URL, id)
	}
	if op.Unavailable != "" {
		return nil, fmt.Errorf("apis: operation %q is unavailable: %s", id, op.Unavailable)
	}
	path := op.Path
	q := url.Values{}
	h := http.Header{}
	var missing []string
	for _, p := range op.Parameters {
		switch p.In {
		case "path":
			v, ok := in.Path[p.Name]
			if !ok || v == "" {
				missing = append(missing, "path parameter "+p.Name)
				continue
			}
			if err := checkPathValue(v); err != nil {
				return nil, fmt.Errorf("apis: operation %q: path parameter %q %w", id, p.Name, err)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(v))
		case "query":
			if vs, ok := in.Query[p.Name]; ok {
				q[p.Name] = vs
			} else if p.Required {
				missing = append(missing, "query parameter "+p.Name)
			}
		case "header":
			if v := in.Header.Get(p.Name); v != "" {
				h.Set(p.Name, v)
			} else if p.Required {
				missing = append(missing, "header "+p.Name)
			}
		}
	}
	if op.RequestBody != nil && op.RequestBody.Required && len(in.Body) == 0 {
		missing = append(missing, "request body")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("apis: operation %q needs %s", id, strings.Join(missing, ", "))
	}
	for k := range in.Query {
		if _, declared := q[k]; !declared {
			return nil, fmt.Errorf("apis: operation %q declares no query parameter %q", id, k)
		}
	}
	u := op.ServerURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	r := &Request{Method: op.Method, URL: u, Header: h, AccessToken: in.AccessToken}
	if len(in.Body) > 0 {
		if !json.Valid(in.Body) {
			return nil, fmt.Errorf("apis: the body for operation %q is not valid JSON", id)
		}
		r.Body = append([]byte(nil), in.Body...)
		r.Header.Set("Content-Type", "application/json")
	}
	if Unsafe(r.Method) {
		r.Header.Set(headerIdemKey, NewIdempotencyKey())
	}
	return r, nil
}
