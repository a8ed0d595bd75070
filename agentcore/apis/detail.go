package apis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// OperationDetail is one operation described in full: the operation with its parameters,
// request body, responses and security, and every component schema its parameters and request
// body reference, directly or through other schemas.
type OperationDetail struct {
	Operation
	// Schemas are the referenced components.schemas by name; SchemaNames lists them in the
	// order they are reached (breadth-first from the parameters and the request body).
	Schemas     map[string]json.RawMessage
	SchemaNames []string
}

// detailOf is what Detail computes once per operation of a parsed document.
type detailOf struct {
	names []string
	err   error
}

// Detail describes the operation id in full. The first time an operation is described, it is
// loaded with kin-openapi (external $refs off, as every description is read) together with the
// component schemas it references, so a schema that does not resolve or is not a valid OpenAPI
// schema object is reported here, before the model builds a request from it.
func (d *Description) Detail(ctx context.Context, id string) (*OperationDetail, error) {
	op, ok := d.Operation(id)
	if !ok {
		return nil, fmt.Errorf("apis: the description at %s has no operation %q", d.URL, id)
	}
	out := &OperationDetail{Operation: *op, Schemas: map[string]json.RawMessage{}}
	if d.p == nil {
		return out, nil
	}
	det := d.p.detail(ctx, op)
	if det.err != nil {
		return nil, det.err
	}
	out.SchemaNames = det.names
	for _, n := range det.names {
		out.Schemas[n] = d.p.schemas[n]
	}
	return out, nil
}

// Schema returns the component schema name (components.schemas) as the description writes it.
func (d *Description) Schema(name string) (json.RawMessage, bool) {
	if d.p == nil {
		return nil, false
	}
	s, ok := d.p.schemas[name]
	return s, ok
}

func (p *parsed) detail(ctx context.Context, op *Operation) detailOf {
	p.detailMu.Lock()
	det, ok := p.details[op.ID]
	p.detailMu.Unlock()
	if ok {
		return det
	}
	det = p.loadDetail(ctx, op)
	p.detailMu.Lock()
	if p.details == nil {
		p.details = map[string]detailOf{}
	}
	p.details[op.ID] = det
	p.detailMu.Unlock()
	return det
}

// loadDetail finds the schemas op references and loads op with them through kin-openapi.
func (p *parsed) loadDetail(ctx context.Context, op *Operation) detailOf {
	var queue []string
	for _, prm := range op.Parameters {
		queue = schemaRefs(prm.Schema, queue)
	}
	if op.RequestBody != nil {
		queue = schemaRefs(op.RequestBody.Schema, queue)
	}
	seen := map[string]bool{}
	var names []string
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		raw, ok := p.schemas[n]
		if !ok {
			return detailOf{err: &descError{url: p.url, msg: fmt.Sprintf("describes operation %q with a reference to the schema %q, which its components do not define; the Company must fix its description", op.ID, n)}}
		}
		names = append(names, n)
		queue = schemaRefs(raw, queue)
	}
	schemas := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		schemas[n] = p.schemas[n]
	}
	params := make([]map[string]any, 0, len(op.Parameters))
	for _, prm := range op.Parameters {
		m := map[string]any{"name": prm.Name, "in": prm.In, "required": prm.Required}
		if len(prm.Schema) > 0 {
			m["schema"] = json.RawMessage(prm.Schema)
		}
		params = append(params, m)
	}
	o := map[string]any{"parameters": params, "responses": map[string]any{"default": map[string]any{"description": "any"}}}
	if rb := op.RequestBody; rb != nil && len(rb.Schema) > 0 {
		o["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": rb.Schema}}}
	}
	frag, err := json.Marshal(map[string]any{"openapi": p.openAPI, "info": map[string]any{"title": p.title, "version": "1"},
		"paths": map[string]any{op.Path: map[string]any{strings.ToLower(op.Method): o}}, "components": map[string]any{"schemas": schemas}})
	if err != nil {
		return detailOf{err: &descError{url: p.url, msg: fmt.Sprintf("describes operation %q with schemas that are not JSON", op.ID), err: err}}
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = ctx
	if _, err := loader.LoadFromData(frag); err != nil {
		return detailOf{err: &descError{url: p.url, msg: fmt.Sprintf("describes operation %q with parameters or a request body that are not valid OpenAPI", op.ID), err: err}}
	}
	return detailOf{names: names}
}

// TagCounts counts the operations of each tag, sorted by tag name; operations without a tag are
// counted under "".
func (d *Description) TagCounts() []TagCount {
	if d.p != nil {
		return slices.Clone(d.p.tagCounts)
	}
	n := map[string]int{}
	for _, o := range d.Operations {
		if len(o.Tags) == 0 {
			n[""]++
		}
		for _, t := range o.Tags {
			n[t]++
		}
	}
	out := make([]TagCount, 0, len(n))
	for t, c := range n {
		out = append(out, TagCount{Tag: t, Operations: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out
}

// TagCount is a tag with how many operations carry it.
type TagCount struct {
	Tag        string
	Operations int
}

// OperationFilter selects operations of a description (the model's listing, spec 7): each set
// field must hold. The zero value selects every operation.
type OperationFilter struct {
	Tag        string // one of the operation's tags, ignoring case
	PathPrefix string // how the operation's path template starts
	Query      string // words that each appear in the operation's ID, path or summary, ignoring case
}

// Find returns the indexes in d.Operations of the operations f selects, in order; the caller
// only reads them (they may be shared). For a description read through Client.FetchOpenAPI it
// reads the index built once per version (the operations of each tag, the paths in order, each
// operation's text in lower case) instead of every operation, and keeps the results of the
// latest filters, so that the pages of one listing filter once.
func (d *Description) Find(f OperationFilter) []int {
	words := strings.Fields(strings.ToLower(f.Query))
	p := d.p
	if p == nil || len(p.operations) != len(d.Operations) {
		var out []int
		for i := range d.Operations {
			o := &d.Operations[i]
			if f.Tag != "" && !slices.ContainsFunc(o.Tags, func(t string) bool { return strings.EqualFold(t, f.Tag) }) ||
				!strings.HasPrefix(o.Path, f.PathPrefix) || !containsAll(strings.ToLower(o.ID+" "+o.Path+" "+o.Summary), words) {
				continue
			}
			out = append(out, i)
		}
		return out
	}
	key := strings.ToLower(f.Tag) + "\x00" + f.PathPrefix + "\x00" + strings.Join(words, "\x00")
	p.findMu.Lock()
	for _, m := range p.finds {
		if m.key == key {
			p.findMu.Unlock()
			return m.out
		}
	}
	p.findMu.Unlock()
	out := p.find(f.Tag, f.PathPrefix, words)
	p.findMu.Lock()
	p.finds = keepLatest(p.finds, findMemo{key: key, out: out}, maxFinds)
	p.findMu.Unlock()
	return out
}

// find is Find over the index, for the tag, path prefix and lower-case words of a filter.
func (p *parsed) find(tag, prefix string, words []string) []int {
	// The operations are in path order (parse sorts the paths), so those with the prefix are
	// one run.
	lo := sort.Search(len(p.operations), func(i int) bool { return p.operations[i].Path >= prefix })
	hi := lo + sort.Search(len(p.operations)-lo, func(i int) bool { return !strings.HasPrefix(p.operations[lo+i].Path, prefix) })
	keep := func(i int) bool { return i >= lo && i < hi && containsAll(p.hay[i], words) }
	var out []int
	if tag != "" {
		for _, i := range p.byTag[strings.ToLower(tag)] {
			if keep(i) {
				out = append(out, i)
			}
		}
		return out
	}
	for i := lo; i < hi; i++ {
		if keep(i) {
			out = append(out, i)
		}
	}
	return out
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}
