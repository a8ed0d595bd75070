package operations

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/internal/benchratio"
)

func TestFlatten(t *testing.T) {
	type row struct {
		Pointer string
		Name    string // "-" when not an object member
		Value   string // encodeJSON of the value
		Leaf    bool
	}
	for _, tc := range []struct {
		name, doc string
		depth     int
		want      []row // nil: an error
	}{
		{"scalar document", `"x"`, 4, []row{{"", "-", `"x"`, true}}},
		{"document order, containers before members", `{"b":{"y":1,"x":[true,null]},"a":"s"}`, 4, []row{
			{"", "-", `{"a":"s","b":{"x":[true,null],"y":1}}`, false},
			{"/b", "b", `{"x":[true,null],"y":1}`, false},
			{"/b/y", "y", `1`, true},
			{"/b/x", "x", `[true,null]`, false},
			{"/b/x/0", "-", `true`, true},
			{"/b/x/1", "-", `null`, true},
			{"/a", "a", `"s"`, true},
		}},
		{"empty containers are leaves", `{"e":{},"z":[]}`, 4, []row{{"", "-", `{"e":{},"z":[]}`, false}, {"/e", "e", `{}`, true}, {"/z", "z", `[]`, true}}},
		{"numbers as written", `[70.00,1e400]`, 4, []row{{"", "-", `[70.00,1e400]`, false}, {"/0", "-", `70.00`, true}, {"/1", "-", `1e400`, true}}},
		{"RFC 6901 escaping", `{"a/b":{"c~d":1}}`, 4, []row{{"", "-", `{"a/b":{"c~d":1}}`, false}, {"/a~1b", "a/b", `{"c~d":1}`, false}, {"/a~1b/c~0d", "c~d", `1`, true}}},
		{"nesting at the bound", `[[1]]`, 2, []row{{"", "-", `[[1]]`, false}, {"/0", "-", `[1]`, false}, {"/0/0", "-", `1`, true}}},
		{"nesting beyond the bound", `[[1]]`, 1, nil},
		{"invalid", `{"a":`, 4, nil},
		{"trailing data", `{"a":1} {"b":2}`, 4, nil},
		{"empty", ``, 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := Flatten([]byte(tc.doc), tc.depth)
			if tc.want == nil {
				if err == nil || nodes != nil {
					t.Fatalf("Flatten(%s) = %v, %v; want an error and no nodes", tc.doc, nodes, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, n := range nodes {
				name := "-"
				if n.Member {
					name = n.Name
				}
				got = append(got, row{n.Pointer, name, string(encodeJSON(n.Value)), n.Leaf})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Flatten(%s)\n got %+v\nwant %+v", tc.doc, got, tc.want)
			}
		})
	}
}

func TestTermRows(t *testing.T) {
	for _, tc := range []struct {
		name, terms string
		want        []TermRow
	}{
		{"absent", ``, []TermRow{}},
		{"null", `null`, []TermRow{}},
		{"the spec's jacket terms, in the order written", `{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":"70.00","currency":"USD"}}`,
			[]TermRow{{"/order_id", `"ord_7Hk2"`}, {"/item_id", `"itm_4Qa"`}, {"/replacement_sku", `"stormline-insulated-m"`}, {"/price_difference/amount", `"70.00"`}, {"/price_difference/currency", `"USD"`}}},
		{"numbers as written, arrays, empties, booleans, null", `{"n":70.00,"big":1e400,"a":[1,"x"],"e":{},"z":[],"t":true,"nil":null}`,
			[]TermRow{{"/n", "70.00"}, {"/big", "1e400"}, {"/a/0", "1"}, {"/a/1", `"x"`}, {"/e", "{}"}, {"/z", "[]"}, {"/t", "true"}, {"/nil", "null"}}},
		{"pointer escaping", `{"a/b":{"c~d":1}}`, []TermRow{{"/a~1b/c~0d", "1"}}},
		{"markup stays text, invisible characters made visible", `{"note":"<a href=x>y</a>\u202e"}`, []TermRow{{"/note", `"<a href=x>y</a>⟦U+202E⟧"`}}},
		{"invisible characters in a key", "{\"a\u200bb\":1}", []TermRow{{"/a⟦U+200B⟧b", "1"}}},
		{"not JSON", `{"a":`, []TermRow{{"", `{"a":`}}},
		{"not JSON, invisible characters made visible", "{\u202e", []TermRow{{"", "{⟦U+202E⟧"}}},
		{"trailing data", `{"a":1} {"b":2}`, []TermRow{{"", `{"a":1} {"b":2}`}}},
		{"at the depth bound", strings.Repeat(`[`, MaxTermDepth+1) + strings.Repeat(`]`, MaxTermDepth+1), []TermRow{{strings.Repeat("/0", MaxTermDepth), "[]"}}},
		{"too deep", strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40), []TermRow{{"", strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TermRows(json.RawMessage(tc.terms)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("TermRows(%s) = %q, want %q", tc.terms, got, tc.want)
			}
		})
	}
}

// FuzzTermRows: terms are Company input (Operations 3); flattening never panics, and every row
// is a JSON Pointer or the raw text.
func FuzzTermRows(f *testing.F) {
	for _, s := range []string{`{"order_id":"ord_7Hk2","price_difference":{"amount":"70.00","currency":"USD"}}`, `[1,[2,{}]]`, `{"a/b~":null}`, `{`, `"x"`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rows := TermRows(json.RawMessage(s))
		for _, r := range rows {
			if r.Path != "" && !strings.HasPrefix(r.Path, "/") {
				t.Fatalf("row path %q is not a JSON Pointer", r.Path)
			}
		}
	})
}

var jacketTerms = json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":"70.00","currency":"USD"}}`)

// BenchmarkTermRows compares flattening the spec's terms with decoding them (the baseline).
func BenchmarkTermRows(b *testing.B) {
	benchratio.RunCPU(b, "TermRows", "json.Unmarshal", func(*testing.B) { TermRows(jacketTerms) }, func(*testing.B) {
		var v any
		_ = json.Unmarshal(jacketTerms, &v)
	})
}
