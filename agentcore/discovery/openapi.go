package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// MaxDescription bounds the bytes of an OpenAPI description the engine reads (4 MiB).
const MaxDescription = 4 << 20

// OpenAPIError is an OpenAPI description that cannot be used: Msg says why in words that follow
// "the OpenAPI description at URL", Err is the parser's error, if any.
type OpenAPIError struct {
	Msg string
	Err error
}

func (e *OpenAPIError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *OpenAPIError) Unwrap() error { return e.Err }

// LoadOpenAPI reads an OpenAPI 3.0 or 3.1 description (JSON or YAML, spec 7) with kin-openapi.
// External $refs are refused: a description never makes the engine fetch another URL or file.
func LoadOpenAPI(ctx context.Context, data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = ctx
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, &OpenAPIError{Msg: "is not a readable OpenAPI document", Err: err}
	}
	if mm := doc.OpenAPIMajorMinor(); mm != "3.0" && mm != "3.1" {
		return nil, &OpenAPIError{Msg: fmt.Sprintf("declares OpenAPI %q; spec 7 lists OpenAPI 3.0 and 3.1", doc.OpenAPI)}
	}
	return doc, nil
}

// OpenAPIServer returns the server URL of an operation (without a trailing slash), or the reason
// it has none: the operation's servers, else its path's, else the document's, else "/" (OpenAPI
// 3.1 §4.8.1), resolved against the description's URL, with server variables at their defaults.
// The first that is an HTTPS URL (spec 3) without an unresolved variable, query or fragment is
// used.
func OpenAPIServer(descURL *url.URL, doc *openapi3.T, item *openapi3.PathItem, op *openapi3.Operation) (string, string) {
	servers := doc.Servers
	if item != nil && len(item.Servers) > 0 {
		servers = item.Servers
	}
	if op != nil && op.Servers != nil && len(*op.Servers) > 0 {
		servers = *op.Servers
	}
	if len(servers) == 0 {
		servers = openapi3.Servers{{URL: "/"}}
	}
	var reasons []string
	for _, s := range servers {
		if s == nil {
			continue
		}
		raw := s.URL
		for name, v := range s.Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
		if strings.ContainsAny(raw, "{}") {
			reasons = append(reasons, fmt.Sprintf("%q uses a server variable it does not define", s.URL))
			continue
		}
		ref, err := url.Parse(raw)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%q is not a URL", s.URL))
			continue
		}
		u := descURL.ResolveReference(ref)
		if u.Scheme != "https" || u.Host == "" || u.User != nil {
			reasons = append(reasons, fmt.Sprintf("%q is not an HTTPS URL (spec 3)", s.URL))
			continue
		}
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			reasons = append(reasons, fmt.Sprintf("%q has a query or fragment, which a server URL joined with a path cannot keep", s.URL))
			continue
		}
		return strings.TrimSuffix(u.String(), "/"), ""
	}
	return "", "no usable server: " + strings.Join(reasons, "; ")
}

// OpenAPIRequestURLs lists the request URLs an OpenAPI description describes (spec 5.2, 7): for
// each operation, its server URL joined with its path template, such as
// https://shop.example/api/orders/{id}. Operations without a usable server, and paths that don't
// start with "/", describe none. The list is sorted and has no duplicates.
func OpenAPIRequestURLs(descURL *url.URL, doc *openapi3.T) []string {
	if doc.Paths == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for p, item := range doc.Paths.Map() {
		if item == nil || !strings.HasPrefix(p, "/") {
			continue
		}
		for _, op := range item.Operations() {
			if op == nil {
				continue
			}
			if server, reason := OpenAPIServer(descURL, doc, item, op); reason == "" && !seen[server+p] {
				seen[server+p] = true
				out = append(out, server+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// describe fetches the description of each openapi entry of apis (without credentials, never
// redirected, at most MaxDescription bytes, through the discovery cache) and records the request
// URLs it describes, which are the API's Session destinations (spec 5.2, 7). A description that
// cannot be fetched or read is recorded in DescriptionErrors: its API has no destinations, and
// the rest of the Company stays usable.
func (d *Discoverer) describe(ctx context.Context, c *Company, o options) {
	for _, a := range c.Document.APIs {
		if a.Type != "openapi" {
			continue
		}
		if _, done := c.Described[a.URL]; done {
			continue
		}
		urls, err := d.describeOne(ctx, a.URL, o)
		if err != nil {
			if c.DescriptionErrors == nil {
				c.DescriptionErrors = map[string]string{}
			}
			c.DescriptionErrors[a.URL] = err.Error()
			d.log.InfoContext(ctx, "discovery: an OpenAPI description is unusable; its API has no Session destinations", "url", a.URL, "err", err)
			continue
		}
		if c.Described == nil {
			c.Described = map[string][]string{}
		}
		c.Described[a.URL] = urls
	}
}

func (d *Discoverer) describeOne(ctx context.Context, raw string, o options) ([]string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("the OpenAPI description URL %q is not an HTTPS URL (spec 3)", raw)
	}
	res, err := d.fetch(ctx, raw, fetchDescription, o.noCache)
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI description at %s could not be fetched: %w", raw, err)
	}
	switch {
	case res.status >= 300 && res.status < 400:
		return nil, fmt.Errorf("the OpenAPI description at %s answered a redirect (HTTP %d), which the engine does not follow; the Company should list the final URL in poppy.json", raw, res.status)
	case res.status != http.StatusOK:
		return nil, fmt.Errorf("the OpenAPI description at %s answered HTTP %d instead of the description", raw, res.status)
	}
	doc, err := LoadOpenAPI(ctx, res.body)
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI description at %s %w", raw, err)
	}
	return OpenAPIRequestURLs(u, doc), nil
}
