package apis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// This file reads an OpenAPI description into the index the engine uses: operations with their
// parameters, request bodies, responses and security, and the document's component schemas kept
// as raw JSON for describing one operation in full (Description.Detail). It decodes with
// encoding/json into typed structs that keep schemas as json.RawMessage, in one pass over the
// bytes: for GitHub's REST description (13 MB, 1,223 operations) this costs about as much as
// decoding the same bytes into `any`, where kin-openapi's loader, which builds and resolves the
// whole schema graph, costs about ten times more in time and allocates about 1 GB (see
// BenchmarkGitHubDescription). kin-openapi still loads each operation that is described in full,
// with the component schemas it references (Description.Detail).

// The OpenAPI objects the index reads (OpenAPI 3.1 §4.8). Unknown fields, responses' content and
// examples are skipped by the decoder without being kept.
type (
	oaDoc struct {
		OpenAPI    string                 `json:"openapi"`
		Info       *oaInfo                `json:"info"`
		Servers    []oaServer             `json:"servers"`
		Paths      map[string]*oaPathItem `json:"paths"`
		Components *oaComponents          `json:"components"`
		Security   []map[string][]string  `json:"security"`
		Tags       []oaTag                `json:"tags"`
	}
	oaInfo struct {
		Title   string `json:"title"`
		Version string `json:"version"`
	}
	oaTag struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	oaServer struct {
		URL       string `json:"url"`
		Variables map[string]struct {
			Default string `json:"default"`
		} `json:"variables"`
	}
	oaComponents struct {
		SecuritySchemes map[string]*oaSecurityScheme `json:"securitySchemes"`
		Parameters      map[string]*oaParameter      `json:"parameters"`
		RequestBodies   map[string]*oaRequestBody    `json:"requestBodies"`
		Responses       map[string]*oaResponse       `json:"responses"`
		PathItems       map[string]*oaPathItem       `json:"pathItems"`
		Schemas         map[string]json.RawMessage   `json:"schemas"`
	}
	oaSecurityScheme struct {
		Ref         string `json:"$ref"`
		Type        string `json:"type"`
		Description string `json:"description"`
		Flows       map[string]*struct {
			Scopes map[string]string `json:"scopes"`
		} `json:"flows"`
	}
	oaPathItem struct {
		Ref        string         `json:"$ref"`
		Servers    []oaServer     `json:"servers"`
		Parameters []*oaParameter `json:"parameters"`
		Get        *oaOperation   `json:"get"`
		Put        *oaOperation   `json:"put"`
		Post       *oaOperation   `json:"post"`
		Delete     *oaOperation   `json:"delete"`
		Options    *oaOperation   `json:"options"`
		Head       *oaOperation   `json:"head"`
		Patch      *oaOperation   `json:"patch"`
		Trace      *oaOperation   `json:"trace"`
	}
	oaOperation struct {
		OperationID string                 `json:"operationId"`
		Summary     string                 `json:"summary"`
		Description string                 `json:"description"`
		Tags        []string               `json:"tags"`
		Deprecated  bool                   `json:"deprecated"`
		Parameters  []*oaParameter         `json:"parameters"`
		RequestBody *oaRequestBody         `json:"requestBody"`
		Responses   map[string]*oaResponse `json:"responses"`
		Security    *[]map[string][]string `json:"security"`
		Servers     *[]oaServer            `json:"servers"`
	}
	oaParameter struct {
		Ref         string          `json:"$ref"`
		Name        string          `json:"name"`
		In          string          `json:"in"`
		Description string          `json:"description"`
		Required    bool            `json:"required"`
		Schema      json.RawMessage `json:"schema"`
	}
	oaRequestBody struct {
		Ref         string                  `json:"$ref"`
		Description string                  `json:"description"`
		Required    bool                    `json:"required"`
		Content     map[string]*oaMediaType `json:"content"`
	}
	oaMediaType struct {
		Schema json.RawMessage `json:"schema"`
	}
	oaResponse struct {
		Ref         string                  `json:"$ref"`
		Description string                  `json:"description"`
		Content     map[string]*oaMediaType `json:"content"`
	}
)

// parsed is a description read once, independent of any Company's Session destinations: each
// operation's server is resolved, and Unavailable only says why it has no usable server.
// Immutable once built (but for the memo of Detail); shared by every Description made from it.
type parsed struct {
	url        string
	openAPI    string
	title      string
	version    string
	schemes    map[string]SecurityScheme
	tags       []Tag
	operations []Operation
	byID       map[string]int
	schemas    map[string]json.RawMessage // components.schemas, for Detail
	size       int                        // bytes of the document

	detailMu sync.Mutex
	details  map[string]detailOf // by operation ID
}

// Tag is one tag of the description (OpenAPI 3.1 §4.8.22).
type Tag struct {
	Name, Description string
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

// componentName returns the name in a local reference #/components/<kind>/<name> (RFC 6901
// escapes undone), or "" when ref is not one.
func componentName(ref, kind string) string {
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

// parse reads a description into the index (the format checks of ParseOpenAPI, without the
// Session destinations).
func parse(descURL string, base *url.URL, data []byte) (*parsed, error) {
	js, err := toJSON(data)
	if err != nil {
		return nil, &descError{url: descURL, msg: "is not a readable OpenAPI document", err: err}
	}
	if err := checkRefs(js); err != nil {
		return nil, &descError{url: descURL, msg: "is not a readable OpenAPI document", err: err}
	}
	var doc oaDoc
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, &descError{url: descURL, msg: "is not a readable OpenAPI document", err: err}
	}
	mm := doc.OpenAPI
	if parts := strings.SplitN(mm, ".", 3); len(parts) >= 2 {
		mm = parts[0] + "." + parts[1]
	}
	if mm != "3.0" && mm != "3.1" {
		return nil, &descError{url: descURL, msg: fmt.Sprintf("declares OpenAPI %q; spec 7 lists OpenAPI 3.0 and 3.1", doc.OpenAPI)}
	}
	p := &parsed{url: descURL, openAPI: doc.OpenAPI, schemes: map[string]SecurityScheme{}, byID: map[string]int{}, size: len(data)}
	if doc.Info != nil {
		p.title, p.version = doc.Info.Title, doc.Info.Version
	}
	for _, t := range doc.Tags {
		p.tags = append(p.tags, Tag{Name: t.Name, Description: t.Description})
	}
	comp := doc.Components
	if comp == nil {
		comp = &oaComponents{}
	}
	p.schemas = comp.Schemas
	for name, v := range comp.SecuritySchemes {
		if v != nil && v.Ref != "" {
			v = comp.SecuritySchemes[componentName(v.Ref, "securitySchemes")]
		}
		if v == nil {
			continue
		}
		ss := SecurityScheme{Name: name, Type: v.Type, Description: v.Description}
		if len(v.Flows) > 0 {
			ss.Scopes = map[string]string{}
			for _, flow := range []string{"authorizationCode", "implicit", "password", "clientCredentials"} {
				f := v.Flows[flow]
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
		p.schemes[name] = ss
	}
	keys := make([]string, 0, len(doc.Paths))
	for k := range doc.Paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, path := range keys {
		item := doc.Paths[path]
		if item != nil && item.Ref != "" {
			name := componentName(item.Ref, "pathItems")
			if item = comp.PathItems[name]; item == nil {
				return nil, &descError{url: descURL, msg: "is not a readable OpenAPI document", err: fmt.Errorf("the path %s references %q, which is not a path item of its components", path, doc.Paths[path].Ref)}
			}
		}
		if item == nil {
			continue
		}
		for _, mo := range []struct {
			method string
			op     *oaOperation
		}{{"DELETE", item.Delete}, {"GET", item.Get}, {"HEAD", item.Head}, {"OPTIONS", item.Options},
			{"PATCH", item.Patch}, {"POST", item.Post}, {"PUT", item.Put}, {"TRACE", item.Trace}} {
			if mo.op == nil {
				continue
			}
			p.add(base, &doc, comp, path, item, mo.method, mo.op)
		}
	}
	return p, nil
}

// add indexes one operation.
func (p *parsed) add(base *url.URL, doc *oaDoc, comp *oaComponents, path string, item *oaPathItem, method string, op *oaOperation) {
	o := Operation{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: op.Description,
		Deprecated: op.Deprecated, Tags: op.Tags}
	if o.ID == "" {
		o.ID = method + " " + path
	}
	servers := doc.Servers
	if len(item.Servers) > 0 {
		servers = item.Servers
	}
	if op.Servers != nil && len(*op.Servers) > 0 {
		servers = *op.Servers
	}
	o.ServerURL, o.Unavailable = resolveServer(base, servers)
	var broken []string
	o.Parameters, broken = resolveParameters(comp, item.Parameters, op.Parameters)
	if rb := op.RequestBody; rb != nil {
		if rb.Ref != "" {
			if rb = comp.RequestBodies[componentName(rb.Ref, "requestBodies")]; rb == nil {
				broken = append(broken, fmt.Sprintf("request body %q", op.RequestBody.Ref))
			}
		}
		if rb != nil {
			b := &RequestBody{Required: rb.Required, Description: rb.Description}
			for ct, mt := range rb.Content {
				b.ContentTypes = append(b.ContentTypes, ct)
				if isJSON(ct) && mt != nil && len(mt.Schema) > 0 && (len(b.Schema) == 0 || ct == "application/json") {
					b.Schema = mt.Schema
				}
			}
			sort.Strings(b.ContentTypes)
			o.RequestBody = b
		}
	}
	codes := make([]string, 0, len(op.Responses))
	for c := range op.Responses {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		r := op.Responses[c]
		if r != nil && r.Ref != "" {
			r = comp.Responses[componentName(r.Ref, "responses")]
		}
		if r == nil {
			continue
		}
		resp := Response{Status: c, Description: r.Description}
		for ct, mt := range r.Content {
			if isJSON(ct) && mt != nil && len(mt.Schema) > 0 {
				resp.Schema = mt.Schema
			}
		}
		o.Responses = append(o.Responses, resp)
	}
	if len(broken) > 0 && o.Unavailable == "" {
		o.Unavailable = "its " + strings.Join(broken, " and ") + " cannot be resolved in the description's components; the Company must fix its description"
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
			ss := p.schemes[n]
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
	if _, dup := p.byID[o.ID]; !dup {
		p.byID[o.ID] = len(p.operations)
	}
	p.operations = append(p.operations, o)
}

// resolveParameters merges path-item and operation parameters (operation ones override,
// OpenAPI 3.1 §4.8.9), resolving references to components.parameters; broken lists those that
// do not resolve.
func resolveParameters(comp *oaComponents, lists ...[]*oaParameter) (out []Parameter, broken []string) {
	idx := map[string]int{}
	for _, l := range lists {
		for _, v := range l {
			if v != nil && v.Ref != "" {
				ref := v.Ref
				if v = comp.Parameters[componentName(ref, "parameters")]; v == nil {
					broken = append(broken, fmt.Sprintf("parameter %q", ref))
					continue
				}
			}
			if v == nil {
				continue
			}
			p := Parameter{Name: v.Name, In: v.In, Description: v.Description, Required: v.Required || v.In == "path", Schema: v.Schema}
			k := v.In + "\x00" + v.Name
			if i, ok := idx[k]; ok {
				out[i] = p
				continue
			}
			idx[k] = len(out)
			out = append(out, p)
		}
	}
	return out, broken
}

// schemaRefs appends the names of the components.schemas that raw references directly.
func schemaRefs(raw []byte, out []string) []string {
	const prefix = `"#/components/schemas/`
	for {
		i := bytes.Index(raw, []byte(prefix))
		if i < 0 {
			return out
		}
		raw = raw[i+len(prefix):]
		j := bytes.IndexByte(raw, '"')
		if j < 0 {
			return out
		}
		out = append(out, componentName("#/components/schemas/"+string(raw[:j]), "schemas"))
		raw = raw[j:]
	}
}
