package apis

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
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

// Detail describes the operation id in full. The first time an operation is described, the
// schemas of its parameters and request body and the component schemas they reference are
// checked (checkSchema), so a schema that does not resolve or is not a schema object is reported
// here, before the model builds a request from it.
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

// loadDetail finds the schemas op references and checks each of them (checkSchema).
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
	invalid := func(what string, err error) detailOf {
		return detailOf{err: &descError{url: p.url, msg: fmt.Sprintf("describes operation %q with %s that is not a valid schema object; the Company must fix its description", op.ID, what), err: err}}
	}
	for _, prm := range op.Parameters {
		if err := p.checkSchema(prm.Schema); err != nil {
			return invalid(fmt.Sprintf("the parameter %q, whose schema", prm.Name), err)
		}
	}
	if rb := op.RequestBody; rb != nil {
		if err := p.checkSchema(rb.Schema); err != nil {
			return invalid("a request body whose schema", err)
		}
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return detailOf{err: err}
		}
		if err := p.checkSchema(p.schemas[n]); err != nil {
			return invalid(fmt.Sprintf("the component schema %q, which", n), err)
		}
	}
	return detailOf{names: names}
}

// checkSchema reports why raw, a schema of the description, is not a schema object Poppydesk
// can hand to the model: it is read with the JSON Schema library the MCP SDK uses
// (github.com/google/jsonschema-go), which refuses a keyword of the wrong JSON type
// ("properties": "x", "required": "a", "type": 5, "items": 1), and every $ref in it must name
// one of the description's components.schemas (no other document, no other component). In an
// OpenAPI 3.0 description, exclusiveMinimum and exclusiveMaximum are booleans beside minimum and
// maximum (OpenAPI 3.0.3, Schema Object), which JSON Schema 2020-12 writes as numbers: those
// booleans are set aside before it is read.
func (p *parsed) checkSchema(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if strings.HasPrefix(p.openAPI, "3.0") {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		dropBooleanBounds(v)
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		raw = b
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	var bad string
	eachSchema(reflect.ValueOf(&s), func(s *jsonschema.Schema) {
		if bad == "" && s.Ref != "" && !strings.HasPrefix(s.Ref, "#/components/schemas/") {
			bad = s.Ref
		}
	})
	if bad != "" {
		return fmt.Errorf("$ref %q is not a reference to one of components.schemas, the only schemas a schema of the description may name", bad)
	}
	return nil
}

// dropBooleanBounds deletes, at any depth of a decoded schema, the boolean exclusiveMinimum and
// exclusiveMaximum of OpenAPI 3.0.
func dropBooleanBounds(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if _, isBool := e.(bool); isBool && (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
				delete(t, k)
				continue
			}
			dropBooleanBounds(e)
		}
	case []any:
		for _, e := range t {
			dropBooleanBounds(e)
		}
	}
}

// eachSchema calls f with s and every schema inside it: whatever the library's Schema holds as a
// *Schema, a []*Schema or a map of them (properties, items, allOf, $defs, ...), found by
// reflection so that a keyword the library adds is walked too.
func eachSchema(v reflect.Value, f func(*jsonschema.Schema)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		s, ok := v.Interface().(*jsonschema.Schema)
		if !ok {
			return
		}
		f(s)
		e := v.Elem()
		for i := range e.NumField() {
			if e.Type().Field(i).IsExported() {
				eachSchema(e.Field(i), f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachSchema(v.Index(i), f)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			eachSchema(it.Value(), f)
		}
	}
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
