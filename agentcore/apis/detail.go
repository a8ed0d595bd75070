package apis

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
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
	if det.err != nil && ctx.Err() != nil {
		return det // cancelled: the next call checks again
	}
	p.detailMu.Lock()
	if p.details == nil {
		p.details = map[string]detailOf{}
	}
	p.details[op.ID] = det
	p.detailMu.Unlock()
	return det
}

// schemaCheck is what checking one schema found: the components.schemas it references, in the
// order it writes them, or why it is not a schema object Poppydesk can hand to the model.
type schemaCheck struct {
	refs []string
	err  error
}

// loadDetail checks the schemas of op's parameters and request body and, breadth-first, the
// component schemas they reference (checkSchema), and lists those components in the order they
// are reached.
func (p *parsed) loadDetail(ctx context.Context, op *Operation) detailOf {
	invalid := func(what string, err error) detailOf {
		return detailOf{err: &descError{url: p.url, msg: fmt.Sprintf("describes operation %q with %s that is not a valid schema object; the Company must fix its description", op.ID, what), err: err}}
	}
	var queue []string
	for _, prm := range op.Parameters {
		c := p.checkSchema(prm.Schema)
		if c.err != nil {
			return invalid(fmt.Sprintf("the parameter %q, whose schema", prm.Name), c.err)
		}
		queue = append(queue, c.refs...)
	}
	if rb := op.RequestBody; rb != nil {
		c := p.checkSchema(rb.Schema)
		if c.err != nil {
			return invalid("a request body whose schema", c.err)
		}
		queue = append(queue, c.refs...)
	}
	seen := map[string]bool{}
	var names []string
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return detailOf{err: err}
		}
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		c, ok := p.component(n)
		if !ok {
			return detailOf{err: &descError{url: p.url, msg: fmt.Sprintf("describes operation %q with a reference to the schema %q, which its components do not define; the Company must fix its description", op.ID, n)}}
		}
		if c.err != nil {
			return invalid(fmt.Sprintf("the component schema %q, which", n), c.err)
		}
		names = append(names, n)
		queue = append(queue, c.refs...)
	}
	return detailOf{names: names}
}

// component is the check of components.schemas name, made once per description however many
// operations reference it; ok is false when the description defines no such schema.
func (p *parsed) component(name string) (schemaCheck, bool) {
	raw, ok := p.schemas[name]
	if !ok {
		return schemaCheck{}, false
	}
	p.detailMu.Lock()
	c, done := p.components[name]
	p.detailMu.Unlock()
	if done {
		return c, true
	}
	c = p.checkSchema(raw)
	p.detailMu.Lock()
	if p.components == nil {
		p.components = map[string]schemaCheck{}
	}
	p.components[name] = c
	p.detailMu.Unlock()
	return c, true
}

// checkSchema checks raw, a schema of the description, and finds the components.schemas it
// references. It is read with the JSON Schema library the MCP SDK uses
// (github.com/google/jsonschema-go), which refuses a keyword of the wrong JSON type
// ("properties": "x", "required": "a", "type": 5, "items": 1), and every $ref in it must point
// into one of the description's components.schemas (no other document, no other component). In
// an OpenAPI 3.0 description, exclusiveMinimum and exclusiveMaximum are booleans beside minimum
// and maximum (OpenAPI 3.0.3, Schema Object), which JSON Schema 2020-12 writes as numbers: those
// booleans are set aside before it is read. The references are the $refs of the schema as read,
// so a string that looks like one in an example, a default or a description is not taken for
// one; they are ordered by where raw first writes them, so that the components an operation
// reaches are listed in the description's own order.
func (p *parsed) checkSchema(raw json.RawMessage) schemaCheck {
	if len(raw) == 0 {
		return schemaCheck{}
	}
	written := raw
	if strings.HasPrefix(p.openAPI, "3.0") {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return schemaCheck{err: err}
		}
		dropBooleanBounds(v)
		b, err := json.Marshal(v)
		if err != nil {
			return schemaCheck{err: err}
		}
		raw = b
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return schemaCheck{err: err}
	}
	var bad string
	at := map[string]int{} // each referenced component, at the first place written names it
	eachSchema(reflect.ValueOf(&s), func(s *jsonschema.Schema) {
		if s.Ref == "" || bad != "" {
			return
		}
		n := componentOf(s.Ref)
		if n == "" {
			bad = s.Ref
			return
		}
		i := bytes.Index(written, []byte(`"`+s.Ref+`"`))
		if i < 0 {
			i = len(written) // written with escapes: after the others
		}
		if j, ok := at[n]; !ok || i < j {
			at[n] = i
		}
	})
	if bad != "" {
		return schemaCheck{err: fmt.Errorf("$ref %q is not a reference into one of components.schemas, the only schemas a schema of the description may name", bad)}
	}
	refs := slices.Collect(maps.Keys(at))
	slices.SortFunc(refs, func(a, b string) int { return cmp.Or(cmp.Compare(at[a], at[b]), strings.Compare(a, b)) })
	return schemaCheck{refs: refs}
}

// componentOf is the components.schemas name ref points into: Name for #/components/schemas/Name
// and for a pointer inside it (#/components/schemas/Name/properties/id), RFC 6901's escapes
// undone; "" for any other reference.
func componentOf(ref string) string {
	rest, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	if first == "" {
		return ""
	}
	return discovery.OpenAPIComponentName("#/components/schemas/"+first, "schemas")
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

// TagCountsByOperations is TagCounts ordered by how many operations carry each tag, most first
// (ties by tag), sorted once per description.
func (d *Description) TagCountsByOperations() []TagCount {
	if d.p != nil {
		return slices.Clone(d.p.tagsByOps)
	}
	return byOperations(d.TagCounts())
}

// byOperations sorts counts, ordered by tag, by operations, most first, keeping the tags' order
// among equals.
func byOperations(counts []TagCount) []TagCount {
	slices.SortStableFunc(counts, func(a, b TagCount) int { return cmp.Compare(b.Operations, a.Operations) })
	return counts
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
