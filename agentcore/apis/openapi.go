package apis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Description is a Company's OpenAPI description, as the engine uses it (spec 7).
type Description struct {
	URL         string // where it was fetched
	OpenAPI     string // "3.0.3", "3.1.0", ...
	Title       string
	Version     string
	APIDescribe string // the poppy.json entry's description
	// Schemes are the security schemes, by name.
	Schemes    map[string]SecurityScheme
	Operations []Operation
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
	Parameters  []Parameter
	RequestBody *RequestBody
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
	ContentTypes []string
	Schema       json.RawMessage // of application/json when present
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

// FetchOpenAPI fetches and reads the description of an openapi entry of poppy.json. The request
// carries no Session header and no credentials (a description is not a Session destination,
// spec 5.2) and is never redirected; the body is read up to 4 MiB. The request URLs the
// description describes become Session destinations of this Client (and of every Client sharing
// its Config.Described) in place of those of the entry's earlier reads: Send may sign requests
// to them from now on (spec 5.2, 7).
func (c *Client) FetchOpenAPI(ctx context.Context, api discovery.API) (*Description, error) {
	if api.Type != "openapi" {
		return nil, fmt.Errorf("apis: %q is a %q API, not openapi", api.URL, api.Type)
	}
	u, err := transport.CheckURL(api.URL)
	if err != nil {
		return nil, &descError{url: api.URL, msg: "is not an HTTPS URL (spec 3)", err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &descError{url: api.URL, msg: "cannot be requested", err: err}
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.1")
	resp, err := c.cfg.Transport.NoRedirectClient().Do(req)
	if err != nil {
		return nil, &descError{url: api.URL, msg: "could not be fetched", err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, &descError{url: api.URL, msg: fmt.Sprintf("answered a redirect (HTTP %d to %q), which the engine does not follow; the Company should list the final URL in poppy.json", resp.StatusCode, resp.Header.Get("Location"))}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &descError{url: api.URL, msg: fmt.Sprintf("answered HTTP %d instead of the description", resp.StatusCode)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, &descError{url: api.URL, msg: "could not be read", err: err}
	}
	if len(body) > maxBody {
		return nil, &descError{url: api.URL, msg: "is larger than the 4 MiB the engine reads"}
	}
	d, urls, err := parseOpenAPI(ctx, api.URL, body, nil)
	if err != nil {
		return nil, err
	}
	dest := c.described.record(api.URL, urls)
	markUnavailable(d, func(u *url.URL) bool {
		return c.cfg.Destinations.Allows(u) || !c.cfg.Destinations.Refuses(u) && dest.Allows(u)
	})
	d.APIDescribe = api.Description
	return d, nil
}

// ParseOpenAPI reads an OpenAPI 3.0 or 3.1 description (JSON or YAML) fetched from descURL.
// External $refs are refused. Operations whose URL is not HTTPS or not one of dest are listed
// with Unavailable set (dest: Session destinations such as discovery.Company.SessionDestinations,
// which hold the request URLs of the description read at discovery, spec 5.2).
func ParseOpenAPI(ctx context.Context, descURL string, data []byte, dest *transport.Destinations) (*Description, error) {
	d, _, err := parseOpenAPI(ctx, descURL, data, dest.Allows)
	return d, err
}

// parseOpenAPI is ParseOpenAPI with the destinations check as a function, and the request URLs
// the description describes (discovery.OpenAPIRequestURLs). A nil allows leaves Unavailable for
// markUnavailable.
func parseOpenAPI(ctx context.Context, descURL string, data []byte, allows func(*url.URL) bool) (*Description, []string, error) {
	base, err := transport.CheckURL(descURL)
	if err != nil {
		return nil, nil, &descError{url: descURL, msg: "is not an HTTPS URL (spec 3)", err: err}
	}
	doc, err := discovery.LoadOpenAPI(ctx, data)
	if err != nil {
		var oe *discovery.OpenAPIError
		if errors.As(err, &oe) {
			return nil, nil, &descError{url: descURL, msg: oe.Msg, err: oe.Err}
		}
		return nil, nil, &descError{url: descURL, msg: "is not a readable OpenAPI document", err: err}
	}
	d := &Description{URL: descURL, OpenAPI: doc.OpenAPI, Schemes: map[string]SecurityScheme{}}
	if doc.Info != nil {
		d.Title, d.Version = doc.Info.Title, doc.Info.Version
	}
	if doc.Components != nil {
		for name, ref := range doc.Components.SecuritySchemes {
			if ref == nil || ref.Value == nil {
				continue
			}
			v := ref.Value
			ss := SecurityScheme{Name: name, Type: v.Type, Description: v.Description}
			if v.Flows != nil {
				ss.Scopes = map[string]string{}
				for _, f := range []*openapi3.OAuthFlow{v.Flows.AuthorizationCode, v.Flows.Implicit, v.Flows.Password, v.Flows.ClientCredentials} {
					if f == nil {
						continue
					}
					for k, desc := range f.Scopes {
						if _, seen := ss.Scopes[k]; !seen {
							ss.Scopes[k] = desc
						}
					}
				}
			}
			d.Schemes[name] = ss
		}
	}
	if doc.Paths == nil {
		return d, nil, nil
	}
	paths := doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, p := range keys {
		item := paths[p]
		if item == nil {
			continue
		}
		ops := item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			op := ops[m]
			if op == nil {
				continue
			}
			o := Operation{ID: op.OperationID, Method: strings.ToUpper(m), Path: p, Summary: op.Summary, Description: op.Description, Deprecated: op.Deprecated}
			if o.ID == "" {
				o.ID = o.Method + " " + p
			}
			o.ServerURL, o.Unavailable = discovery.OpenAPIServer(base, doc, item, op)
			if o.Unavailable == "" && !strings.HasPrefix(p, "/") {
				o.Unavailable = fmt.Sprintf("its path %q does not start with \"/\" (OpenAPI 3.1 §4.8.8)", p)
			}
			o.Parameters = parameters(item.Parameters, op.Parameters)
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				rb := &RequestBody{Required: op.RequestBody.Value.Required}
				for ct, mt := range op.RequestBody.Value.Content {
					rb.ContentTypes = append(rb.ContentTypes, ct)
					if isJSON(ct) && mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
						rb.Schema, _ = json.Marshal(mt.Schema.Value)
					}
				}
				sort.Strings(rb.ContentTypes)
				o.RequestBody = rb
			}
			sec := doc.Security
			if op.Security != nil {
				sec = *op.Security
			}
			for _, alt := range sec {
				var reqs []SecurityRequirement
				names := make([]string, 0, len(alt))
				for n := range alt {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					ss := d.Schemes[n]
					r := SecurityRequirement{Scheme: n, Type: ss.Type}
					for _, sc := range alt[n] {
						r.Scopes = append(r.Scopes, Scope{Name: sc, Description: ss.Scopes[sc]})
					}
					reqs = append(reqs, r)
				}
				if len(reqs) == 0 {
					// {} is an alternative without any requirement: the operation is optional-auth.
					o.Security = nil
					break
				}
				o.Security = append(o.Security, reqs)
			}
			d.Operations = append(d.Operations, o)
		}
	}
	if allows != nil {
		markUnavailable(d, allows)
	}
	return d, discovery.OpenAPIRequestURLs(base, doc), nil
}

// markUnavailable sets Unavailable on each operation whose URL allows refuses (spec 5.2).
func markUnavailable(d *Description, allows func(*url.URL) bool) {
	for i := range d.Operations {
		o := &d.Operations[i]
		if o.Unavailable != "" {
			continue
		}
		if u, err := url.Parse(o.ServerURL + placeholderPath(o.Path)); err != nil || !allows(u) {
			o.Unavailable = fmt.Sprintf("its URL %s%s is not one of the Company's Session destinations (spec 5.2: a document, OAuth endpoint or page that never gets the Session JWT, or a path the engine cannot match safely), so the engine will not send the Session JWT there", o.ServerURL, o.Path)
		}
	}
}

func isJSON(ct string) bool {
	ct = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

func parameters(lists ...openapi3.Parameters) []Parameter {
	var out []Parameter
	idx := map[string]int{}
	for _, l := range lists { // operation parameters override path-item ones (OpenAPI 3.1 §4.8.9)
		for _, ref := range l {
			if ref == nil || ref.Value == nil {
				continue
			}
			v := ref.Value
			p := Parameter{Name: v.Name, In: v.In, Description: v.Description, Required: v.Required || v.In == "path"}
			if v.Schema != nil && v.Schema.Value != nil {
				p.Schema, _ = json.Marshal(v.Schema.Value)
			}
			k := v.In + "\x00" + v.Name
			if i, ok := idx[k]; ok {
				out[i] = p
				continue
			}
			idx[k] = len(out)
			out = append(out, p)
		}
	}
	return out
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
