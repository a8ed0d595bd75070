package operations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Node is one value of a JSON document and where it is: its JSON Pointer (RFC 6901).
type Node struct {
	// Pointer is the value's JSON Pointer, "" for the whole document.
	Pointer string
	// Member is set when the value is an object member; Name is then the member's name.
	Member bool
	Name   string
	// Value is the decoded value: a string, a json.Number (as written), a bool, nil, a
	// map[string]any or a []any (containers hold the decoded values of their members).
	Value any
	// Leaf is set for a string, number, boolean or null and for an empty object or array: the
	// values that have no members of their own.
	Leaf bool
}

// Flatten decodes one JSON document and returns every value in it, in the order the document
// writes them, each object or array before its members. It is the one walk of JSON Pointers in
// Poppydesk: the window's term rows (TermRows) and the terms checks (CheckTerms) both read its
// nodes. Invalid JSON, data after the document, or nesting deeper than maxDepth (the document
// itself is depth 0) is an error, and then no node is returned.
func Flatten(raw []byte, maxDepth int) ([]Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var nodes []Node
	if _, err := walkNodes(dec, Node{}, &nodes, 0, maxDepth); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("operations: data after the JSON document")
	}
	return nodes, nil
}

// walkNodes reads the value that starts at dec's next token, appends its node (at as the
// Pointer, Member and Name) and its members' nodes to nodes, and returns the decoded value.
func walkNodes(dec *json.Decoder, at Node, nodes *[]Node, depth, maxDepth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("operations: JSON nested deeper than %d at %q", maxDepth, at.Pointer)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, container := tok.(json.Delim)
	if !container {
		at.Value, at.Leaf = tok, true
		*nodes = append(*nodes, at)
		return tok, nil
	}
	// The container's node comes before its members; its value is filled in once they are read.
	i := len(*nodes)
	*nodes = append(*nodes, at)
	var v any
	switch d {
	case '{':
		obj := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name, _ := k.(string)
			mv, err := walkNodes(dec, Node{Pointer: memberPointer(at.Pointer, name), Member: true, Name: name}, nodes, depth+1, maxDepth)
			if err != nil {
				return nil, err
			}
			obj[name] = mv
		}
		v = obj
		(*nodes)[i].Leaf = len(obj) == 0
	case '[':
		arr := []any{}
		for dec.More() {
			ev, err := walkNodes(dec, Node{Pointer: at.Pointer + "/" + strconv.Itoa(len(arr))}, nodes, depth+1, maxDepth)
			if err != nil {
				return nil, err
			}
			arr = append(arr, ev)
		}
		v = arr
		(*nodes)[i].Leaf = len(arr) == 0
	default:
		return nil, fmt.Errorf("operations: unexpected %v in JSON", d)
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	(*nodes)[i].Value = v
	return v, nil
}

// memberPointer returns the JSON Pointer of the member name of the object at pointer: "~" and "/" in
// name are escaped as "~0" and "~1" (RFC 6901 section 3).
func memberPointer(pointer, name string) string {
	return pointer + "/" + pointerEscaper.Replace(name)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// TermRow is one term as the approval dialog lists it: its JSON Pointer (RFC 6901) into terms
// and its value as JSON text.
type TermRow struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// MaxTermDepth bounds how deeply TermRows descends into terms; deeper terms are shown as their
// text in one row.
const MaxTermDepth = 32

// TermRows flattens terms (Operations 3; a JSON object) into rows of JSON Pointer → value, in
// the order the Company wrote them. Values are JSON text (strings quoted without HTML escaping,
// numbers as written, {} and [] for empty objects and arrays), and invisible characters in
// paths and values are made visible (Visible). Absent or null terms give no rows; terms that
// are not one valid JSON document, or are nested deeper than MaxTermDepth, come back as one row
// for "" holding their text.
func TermRows(raw json.RawMessage) []TermRow {
	rows := []TermRow{}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return rows
	}
	nodes, err := Flatten(raw, MaxTermDepth)
	if err != nil {
		return []TermRow{{Path: "", Value: Visible(string(raw))}}
	}
	for _, n := range nodes {
		if n.Leaf {
			rows = append(rows, TermRow{Path: Visible(n.Pointer), Value: Visible(leafText(n.Value))})
		}
	}
	return rows
}

// leafText writes a leaf value as JSON text: numbers as written, strings quoted without HTML
// escaping (the window shows them as text).
func leafText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case map[string]any:
		return "{}"
	case []any:
		return "[]"
	}
	return string(encodeJSON(v))
}
