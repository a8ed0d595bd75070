package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file reads OpenAPI descriptions (spec 7) as the engine does everywhere: discovery, to know
// the request URLs each describes (the API's Session destinations, spec 5.2), and agentcore/apis,
// to index the operations. Both read a description with LoadOpenAPI, into the typed objects
// below, so they never disagree on whether a description is readable or on an operation's
// server.
//
// Why encoding/json rather than kin-openapi's loader: the loader builds and resolves the whole
// schema graph of a document. For GitHub's REST API description (13 MB, 1,223 operations) that
// costs about 11 times a plain encoding/json decode of the same bytes and allocates about 1 GB,
// which would make the discovery of such a Company take seconds. The objects here keep schemas as
// raw JSON and skip what the engine never reads (examples, response headers, links), in one pass
// over the bytes: less than a plain decode into `any` (BenchmarkLoadGitHubDescription).
// agentcore/apis checks the schemas of each operation it describes in full.

// MaxDescription is the largest OpenAPI description the engine reads: 32 MiB, more than twice
// the largest public descriptions of today (GitHub's REST API for api.github.com, 13 MB; for
// GitHub Enterprise Cloud, 14 MB). A larger one is refused with an error naming the limit.
const MaxDescription = 32 << 20

// OpenAPIError is an OpenAPI description that cannot be used: Msg says why in words that follow
// "the OpenAPI description at URL", Err is the decoder's error, if any.
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

// The OpenAPI objects the engine reads (OpenAPI 3.1 §4.8; 3.0 has the same shape for these).
// Unknown fields are skipped by the decoder without being kept; schemas stay raw JSON as the
// description writes them (local $refs included).
type (
	// OpenAPI is a description document.
	OpenAPI struct {
		OpenAPI    string                      `json:"openapi"`
		Info       *OpenAPIInfo                `json:"info"`
		Servers    []OpenAPIServerObject       `json:"servers"`
		Paths      map[string]*OpenAPIPathItem `json:"paths"`
		Components *OpenAPIComponents          `json:"components"`
		Security   []map[string][]string       `json:"security"`
		Tags       []OpenAPITag                `json:"tags"`
	}
	// OpenAPIInfo is the document's info.
	OpenAPIInfo struct {
		Title   string `json:"title"`
		Version string `json:"version"`
	}
	// OpenAPITag is one of the document's tags.
	OpenAPITag struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	// OpenAPIServerObject is one server: its URL and its variables' defaults.
	OpenAPIServerObject struct {
		URL       string `json:"url"`
		Variables map[string]struct {
			Default string `json:"default"`
		} `json:"variables"`
	}
	// OpenAPIComponents are the components the engine resolves local references to.
	OpenAPIComponents struct {
		SecuritySchemes map[string]*OpenAPISecurityScheme `json:"securitySchemes"`
		Parameters      map[string]*OpenAPIParameter      `json:"parameters"`
		RequestBodies   map[string]*OpenAPIRequestBody    `json:"requestBodies"`
		Responses       map[string]*OpenAPIResponse       `json:"responses"`
		PathItems       map[string]*OpenAPIPathItem       `json:"pathItems"`
		Schemas         map[string]json.RawMessage        `json:"schemas"`
	}
	// OpenAPISecurityScheme is a security scheme with the scopes of its OAuth2 flows.
	OpenAPISecurityScheme struct {
		Ref         string `json:"$ref"`
		Type        string `json:"type"`
		Description string `json:"description"`
		Flows       map[string]*struct {
			Scopes map[string]string `json:"scopes"`
		} `json:"flows"`
	}
	// OpenAPIPathItem is the item of one path. LoadOpenAPI replaces an item that references
	// components.pathItems with the component.
	OpenAPIPathItem struct {
		Ref        string                `json:"$ref"`
		Servers    []OpenAPIServerObject `json:"servers"`
		Parameters []*OpenAPIParameter   `json:"parameters"`
		Get        *OpenAPIOperation     `json:"get"`
		Put        *OpenAPIOperation     `json:"put"`
		Post       *OpenAPIOperation     `json:"post"`
		Delete     *OpenAPIOperation     `json:"delete"`
		Options    *OpenAPIOperation     `json:"options"`
		Head       *OpenAPIOperation     `json:"head"`
		Patch      *OpenAPIOperation     `json:"patch"`
		Trace      *OpenAPIOperation     `json:"trace"`
	}
	// OpenAPIOperation is one operation.
	OpenAPIOperation struct {
		OperationID string                      `json:"operationId"`
		Summary     string                      `json:"summary"`
		Description string                      `json:"description"`
		Tags        []string                    `json:"tags"`
		Deprecated  bool                        `json:"deprecated"`
		Parameters  []*OpenAPIParameter         `json:"parameters"`
		RequestBody *OpenAPIRequestBody         `json:"requestBody"`
		Responses   map[string]*OpenAPIResponse `json:"responses"`
		Security    *[]map[string][]string      `json:"security"`
		Servers     *[]OpenAPIServerObject      `json:"servers"`
	}
	// OpenAPIParameter is one parameter, or a reference to components.parameters.
	OpenAPIParameter struct {
		Ref         string          `json:"$ref"`
		Name        string          `json:"name"`
		In          string          `json:"in"`
		Description string          `json:"description"`
		Required    bool            `json:"required"`
		Schema      json.RawMessage `json:"schema"`
	}
	// OpenAPIRequestBody is a request body, or a reference to components.requestBodies.
	OpenAPIRequestBody struct {
		Ref         string                       `json:"$ref"`
		Description string                       `json:"description"`
		Required    bool                         `json:"required"`
		Content     map[string]*OpenAPIMediaType `json:"content"`
	}
	// OpenAPIMediaType is one media type of a body, with its schema.
	OpenAPIMediaType struct {
		Schema json.RawMessage `json:"schema"`
	}
	// OpenAPIResponse is one response, or a reference to components.responses.
	OpenAPIResponse struct {
		Ref         string                       `json:"$ref"`
		Description string                       `json:"description"`
		Content     map[string]*OpenAPIMediaType `json:"content"`
	}
)

// OpenAPIMethod is an operation of a path item with its HTTP method.
type OpenAPIMethod struct {
	Method string // upper case
	Op     *OpenAPIOperation
}

// Operations returns the item's operations, sorted by method.
func (it *OpenAPIPathItem) Operations() []OpenAPIMethod {
	var out []OpenAPIMethod
	for _, m := range []OpenAPIMethod{{"DELETE", it.Delete}, {"GET", it.Get}, {"HEAD", it.Head}, {"OPTIONS", it.Options},
		{"PATCH", it.Patch}, {"POST", it.Post}, {"PUT", it.Put}, {"TRACE", it.Trace}} {
		if m.Op != nil {
			out = append(out, m)
		}
	}
	return out
}

// LoadOpenAPI reads an OpenAPI 3.0 or 3.1 description (JSON or YAML, spec 7). External $refs
// are refused: a description never makes the engine fetch another URL or file. A path item that
// references components.pathItems is replaced by the component (one that does not resolve is an
// error); the other references stay for the reader to resolve.
func LoadOpenAPI(ctx context.Context, data []byte) (*OpenAPI, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	js, err := toJSON(data)
	if err != nil {
		return nil, &OpenAPIError{Msg: "is not a readable OpenAPI document", Err: err}
	}
	if err := checkRefs(js); err != nil {
		return nil, &OpenAPIError{Msg: "is not a readable OpenAPI document", Err: err}
	}
	var doc OpenAPI
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, &OpenAPIError{Msg: "is not a readable OpenAPI document", Err: err}
	}
	mm := doc.OpenAPI
	if parts := strings.SplitN(mm, ".", 3); len(parts) >= 2 {
		mm = parts[0] + "." + parts[1]
	}
	if mm != "3.0" && mm != "3.1" {
		return nil, &OpenAPIError{Msg: fmt.Sprintf("declares OpenAPI %q; spec 7 lists OpenAPI 3.0 and 3.1", doc.OpenAPI)}
	}
	for p, item := range doc.Paths {
		if item == nil || item.Ref == "" {
			continue
		}
		var comp *OpenAPIPathItem
		if doc.Components != nil {
			comp = doc.Components.PathItems[OpenAPIComponentName(item.Ref, "pathItems")]
		}
		if comp == nil || comp.Ref != "" {
			return nil, &OpenAPIError{Msg: "is not a readable OpenAPI document",
				Err: fmt.Errorf("the path %s references %q, which is not a path item of its components", p, item.Ref)}
		}
		doc.Paths[p] = comp
	}
	return &doc, nil
}

// toJSON returns data as JSON: JSON as it is, YAML converted (OpenAPI 3.1 §4.3: a description
// is JSON or YAML).
func toJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return trimmed, nil
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	v, err := jsonValue(v)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("the document is not a JSON or YAML object")
	}
	return json.Marshal(v)
}

// jsonValue turns what yaml.v3 decodes into values encoding/json can encode (mapping keys that
// YAML reads as numbers or booleans, like response codes, become strings).
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = c
		}
		return m, nil
	case []any:
		for i, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	default:
		return v, nil
	}
}

// checkRefs refuses a $ref that names another document (OpenAPI 3.1 §4.8.23): the engine never
// fetches another URL or file for a description, so every reference must be local ("#/...").
// It scans the JSON text once, without decoding it.
func checkRefs(data []byte) error {
	key := []byte(`"$ref"`)
	for i := 0; ; {
		j := bytes.Index(data[i:], key)
		if j < 0 {
			return nil
		}
		k := i + j + len(key)
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\r' || data[k] == '\n') {
			k++
		}
		i = k
		if k >= len(data) || data[k] != ':' {
			continue // "$ref" as a value or a property name inside an example, not a reference
		}
		k++
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\r' || data[k] == '\n') {
			k++
		}
		if k < len(data) && data[k] == '"' {
			if k+1 >= len(data) || data[k+1] != '#' {
				end := bytes.IndexByte(data[k+1:], '"')
				ref := string(data[k+1:])
				if end >= 0 {
					ref = string(data[k+1 : k+1+end])
				}
				if len(ref) > 200 {
					ref = ref[:200] + "…"
				}
				return fmt.Errorf("it references another document (%q); external $refs are never fetched, so every $ref must start with \"#\"", ref)
			}
		}
	}
}

// OpenAPIComponentName returns the name in a local reference #/components/<kind>/<name> (RFC
// 6901 escapes undone), or "" when ref is not one.
func OpenAPIComponentName(ref, kind string) string {
	prefix := "#/components/" + kind + "/"
	if !strings.HasPrefix(ref, prefix) {
		return ""
	}
	name := ref[len(prefix):]
	if strings.Contains(name, "/") {
		return ""
	}
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	return strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
}

// OpenAPIServer returns the server URL of an operation (without a trailing slash), or the reason
// it has none: the operation's servers, else its path's, else the document's, else "/" (OpenAPI
// 3.1 §4.8.1), resolved against the description's URL, with server variables at their defaults.
// The first that is an HTTPS URL (spec 3) without an unresolved variable, query or fragment is
// used.
func OpenAPIServer(descURL *url.URL, doc *OpenAPI, item *OpenAPIPathItem, op *OpenAPIOperation) (string, string) {
	servers := doc.Servers
	if item != nil && len(item.Servers) > 0 {
		servers = item.Servers
	}
	if op != nil && op.Servers != nil && len(*op.Servers) > 0 {
		servers = *op.Servers
	}
	if len(servers) == 0 {
		servers = []OpenAPIServerObject{{URL: "/"}}
	}
	var reasons []string
	for _, s := range servers {
		raw := s.URL
		for name, v := range s.Variables {
			raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
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
func OpenAPIRequestURLs(descURL *url.URL, doc *OpenAPI) []string {
	seen := map[string]bool{}
	var out []string
	for p, item := range doc.Paths {
		if item == nil || !strings.HasPrefix(p, "/") {
			continue
		}
		for _, m := range item.Operations() {
			if server, reason := OpenAPIServer(descURL, doc, item, m.Op); reason == "" && !seen[server+p] {
				seen[server+p] = true
				out = append(out, server+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Describer reads an OpenAPI description for discovery (Config.Describer): RequestURLs returns
// the request URLs the description at descURL describes (OpenAPIRequestURLs of the document,
// read with LoadOpenAPI), fetched without credentials and never redirected, at most
// MaxDescription bytes, through the RFC 9111 cache; revalidate asks the Company again even
// while the copy is fresh (NoCache). The slice is the caller's. An error says what failed in
// words that start "the OpenAPI description at URL".
type Describer interface {
	RequestURLs(ctx context.Context, descURL string, revalidate bool) ([]string, error)
}

// describe fetches the description of each openapi entry of apis (without credentials, never
// redirected, at most MaxDescription bytes, through the discovery cache, where agentcore/apis
// finds it again) and records the request URLs it describes, which are the API's Session
// destinations (spec 5.2, 7). A description that cannot be fetched or read is recorded in
// DescriptionErrors: its API has no destinations, and the rest of the Company stays usable.
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
	if d.descr != nil {
		return d.descr.RequestURLs(ctx, raw, o.noCache)
	}
	res, err := d.fetch(ctx, raw, fetchDescription, o.noCache)
	if tl := (*tooLargeError)(nil); errors.As(err, &tl) {
		return nil, fmt.Errorf("the OpenAPI description at %s is larger than the %d MiB the engine reads (discovery.MaxDescription); the Company should split its API into smaller descriptions", raw, tl.limit>>20)
	}
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
	d.log.DebugContext(ctx, "discovery: parsed an API description", "url", raw, "bytes", len(res.body))
	return OpenAPIRequestURLs(u, doc), nil
}
