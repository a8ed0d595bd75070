package apis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// This file indexes an OpenAPI description: its operations with their parameters, request
// bodies, responses and security, and the document's component schemas kept as raw JSON for
// describing one operation in full (Description.Detail). The document is read with
// discovery.LoadOpenAPI, the one reader of descriptions (typed encoding/json, schemas kept raw,
// external $refs refused), which discovery also uses to know the request URLs a description
// describes; each operation's server is discovery.OpenAPIServer, so an operation's URL is exactly
// the request URL discovery made a Session destination. For GitHub's REST description (13 MB,
// 1,223 operations) this costs about as much as decoding the same bytes into `any`, where
// kin-openapi's loader, which builds and resolves the whole schema graph, costs about ten times
// more in time and allocates about 1 GB (see BenchmarkGitHubDescription). Each operation that is
// described in full has its schemas and the component schemas they reference checked then
// (Description.Detail).

// parsed is a description read once, independent of any Company's Session destinations: each
// operation's server is resolved, and Unavailable only says why it has no usable server.
// Immutable once built (but for the memos of Detail and destinations); shared by every
// Description made from it.
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
	base       *url.URL                   // the description's URL, servers resolve against it
	// requestURLs are the request URLs the description describes (discovery.OpenAPIRequestURLs),
	// as discovery computes the Company's Session destinations from the same document.
	requestURLs []string

	// What listing and filtering read, built with the index: each operation's text that a
	// query's words are looked for in (lower case), the operations of each tag (by lower-case
	// tag) and the tags with their counts.
	hay       []string
	byTag     map[string][]int
	tagCounts []TagCount // by tag
	tagsByOps []TagCount // by operations, most first, then by tag

	destOnce sync.Once
	dest     *transport.Destinations
	// checks are, by operation, what the Session destination check of a view reads (built with
	// dest).
	checks []opCheck

	viewMu sync.Mutex
	views  []viewMemo // the latest views, newest last (at most maxViews)

	detailMu   sync.Mutex
	details    map[string]detailOf    // by operation ID
	components map[string]schemaCheck // components.schemas checked so far, by name

	findMu sync.Mutex
	finds  []findMemo // the latest filters' results, newest last (at most maxFinds)
}

// opCheck is how an operation's URL is checked against a Company's Session destinations: u is
// its server URL joined with its path, the path parameters filled in (nil: not a URL), and self
// reports whether the description's own request URLs (destinations) allow u.
type opCheck struct {
	u    *url.URL
	self bool
}

// viewMemo is a view of the description for one Company's Session destinations.
type viewMemo struct {
	dest *transport.Destinations
	d    *Description
}

// findMemo is the result of one filter (Description.Find), shared read-only: a model pages
// through one listing with the same filter, a call per page.
type findMemo struct {
	key string
	out []int
}

// maxFinds bounds the filters' results a parsed description keeps.
const maxFinds = 8

// maxViews bounds the views a parsed description keeps: one per Client that reads it (a
// Company's accounts share their destinations only while they share a Company document).
const maxViews = 8

// Tag is one tag of the description (OpenAPI 3.1 §4.8.22).
type Tag struct {
	Name, Description string
}

// parse reads a description into the index (the format checks of ParseOpenAPI, without the
// Session destinations).
func parse(ctx context.Context, descURL string, base *url.URL, data []byte) (*parsed, error) {
	doc, err := discovery.LoadOpenAPI(ctx, data)
	if err != nil {
		var oe *discovery.OpenAPIError
		if errors.As(err, &oe) {
			return nil, &descError{url: descURL, msg: oe.Msg, err: oe.Err}
		}
		return nil, &descError{url: descURL, msg: "could not be read", err: err}
	}
	p := &parsed{url: descURL, base: base, openAPI: doc.OpenAPI, schemes: map[string]SecurityScheme{}, byID: map[string]int{}, size: len(data),
		requestURLs: discovery.OpenAPIRequestURLs(base, doc)}
	if doc.Info != nil {
		p.title, p.version = doc.Info.Title, doc.Info.Version
	}
	for _, t := range doc.Tags {
		p.tags = append(p.tags, Tag{Name: t.Name, Description: t.Description})
	}
	comp := doc.Components
	if comp == nil {
		comp = &discovery.OpenAPIComponents{}
	}
	p.schemas = comp.Schemas
	for name, v := range comp.SecuritySchemes {
		if v != nil && v.Ref != "" {
			v = comp.SecuritySchemes[discovery.OpenAPIComponentName(v.Ref, "securitySchemes")]
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
		item := doc.Paths[path] // path item $refs resolved by LoadOpenAPI
		if item == nil {
			continue
		}
		for _, m := range item.Operations() {
			p.add(doc, comp, path, item, m.Method, m.Op)
		}
	}
	p.indexText()
	return p, nil
}

// indexText builds what listing and filtering read: each operation's lower-case text, the
// operations of each tag and the tag counts.
func (p *parsed) indexText() {
	p.hay = make([]string, len(p.operations))
	p.byTag = map[string][]int{}
	counts := map[string]int{}
	for i := range p.operations {
		o := &p.operations[i]
		p.hay[i] = strings.ToLower(o.ID + " " + o.Path + " " + o.Summary)
		if len(o.Tags) == 0 {
			counts[""]++
		}
		for _, t := range o.Tags {
			counts[t]++
			k := strings.ToLower(t)
			if l := p.byTag[k]; len(l) == 0 || l[len(l)-1] != i {
				p.byTag[k] = append(l, i)
			}
		}
	}
	p.tagCounts = make([]TagCount, 0, len(counts))
	for t, n := range counts {
		p.tagCounts = append(p.tagCounts, TagCount{Tag: t, Operations: n})
	}
	sort.Slice(p.tagCounts, func(i, j int) bool { return p.tagCounts[i].Tag < p.tagCounts[j].Tag })
	p.tagsByOps = byOperations(slices.Clone(p.tagCounts))
}

// add indexes one operation.
func (p *parsed) add(doc *discovery.OpenAPI, comp *discovery.OpenAPIComponents, path string, item *discovery.OpenAPIPathItem, method string, op *discovery.OpenAPIOperation) {
	o := Operation{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: op.Description,
		Deprecated: op.Deprecated, Tags: op.Tags}
	if o.ID == "" {
		o.ID = method + " " + path
	}
	o.ServerURL, o.Unavailable = discovery.OpenAPIServer(p.base, doc, item, op)
	if o.Unavailable == "" && !strings.HasPrefix(path, "/") {
		o.Unavailable = fmt.Sprintf("its path %q does not start with \"/\" (OpenAPI 3.1 §4.8.8)", path)
	}
	var broken []string
	o.Parameters, broken = resolveParameters(comp, item.Parameters, op.Parameters)
	if rb := op.RequestBody; rb != nil {
		if rb.Ref != "" {
			if rb = comp.RequestBodies[discovery.OpenAPIComponentName(rb.Ref, "requestBodies")]; rb == nil {
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
			r = comp.Responses[discovery.OpenAPIComponentName(r.Ref, "responses")]
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

// destinations are the request URLs the description describes (discovery.OpenAPIRequestURLs)
// as Session destination templates, built once. A URL the transport cannot match safely (a
// dot-segment, a backslash) is left out: its operations are unavailable.
func (p *parsed) destinations() *transport.Destinations {
	p.prepareChecks()
	return p.dest
}

// prepareChecks builds, once, the description's destinations and each operation's opCheck. An
// operation's URL is one of the request URLs (discovery.OpenAPIRequestURLs lists exactly the
// server and path of each operation that has a server), so whether the destinations allow it is
// first checked against its own template alone; only a URL that its template does not match
// (none that the transport accepts) is checked against them all.
func (p *parsed) prepareChecks() {
	p.destOnce.Do(func() {
		var b transport.DestinationsBuilder
		own := make(map[string]*transport.Destinations, len(p.requestURLs))
		for _, u := range p.requestURLs {
			if b.Template(u) != nil {
				continue
			}
			var one transport.DestinationsBuilder
			one.Template(u)
			own[u] = one.Build()
		}
		p.dest = b.Build()
		p.checks = make([]opCheck, len(p.operations))
		for i := range p.operations {
			o := &p.operations[i]
			if o.Unavailable != "" {
				continue
			}
			u, err := url.Parse(o.ServerURL + placeholderPath(o.Path))
			if err != nil {
				continue
			}
			d := own[o.ServerURL+o.Path]
			p.checks[i] = opCheck{u: u, self: d != nil && d.Allows(u) || p.dest.Allows(u)}
		}
	})
}

// viewOf is the Description of p for a Client whose Session destinations are dest and whose
// described request URLs include p's (Client.FetchOpenAPI): an operation is available when
// dest allows its URL, or when p's own request URLs do and dest does not refuse it (spec 5.2).
// The view is built once per dest and shared read-only by every call that reads it.
func (p *parsed) viewOf(dest *transport.Destinations) *Description {
	p.viewMu.Lock()
	for i, v := range p.views {
		if v.dest == dest {
			if i != len(p.views)-1 {
				p.views = append(append(p.views[:i:i], p.views[i+1:]...), v)
			}
			p.viewMu.Unlock()
			return v.d
		}
	}
	p.viewMu.Unlock()
	p.prepareChecks()
	d := &Description{URL: p.url, OpenAPI: p.openAPI, Title: p.title, Version: p.version, Schemes: p.schemes, Tags: p.tags, p: p}
	var ops []Operation // p.operations until an operation is unavailable in this view
	for i := range p.operations {
		o := &p.operations[i]
		if o.Unavailable != "" {
			continue
		}
		ck := p.checks[i]
		if ck.u != nil && (ck.self && !dest.Refuses(ck.u) || dest.Allows(ck.u)) {
			continue
		}
		if ops == nil {
			ops = make([]Operation, len(p.operations))
			copy(ops, p.operations)
		}
		ops[i].Unavailable = unavailableReason(o)
	}
	if ops == nil {
		ops = p.operations
	}
	d.Operations = ops
	p.viewMu.Lock()
	p.views = keepLatest(p.views, viewMemo{dest: dest, d: d}, maxViews)
	p.viewMu.Unlock()
	return d
}

// keepLatest appends v to the memo s (oldest first), dropping the oldest when s holds limit.
func keepLatest[T any](s []T, v T, limit int) []T {
	if len(s) >= limit {
		s = append(s[:0:0], s[len(s)-limit+1:]...)
	}
	return append(s, v)
}

// resolveParameters merges path-item and operation parameters (operation ones override,
// OpenAPI 3.1 §4.8.9), resolving references to components.parameters; broken lists those that
// do not resolve.
func resolveParameters(comp *discovery.OpenAPIComponents, lists ...[]*discovery.OpenAPIParameter) (out []Parameter, broken []string) {
	idx := map[string]int{}
	for _, l := range lists {
		for _, v := range l {
			if v != nil && v.Ref != "" {
				ref := v.Ref
				if v = comp.Parameters[discovery.OpenAPIComponentName(ref, "parameters")]; v == nil {
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
