package operations

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// flatten returns every inline of a summary in order.
func flatten(blocks []Block) []Inline {
	var out []Inline
	for _, b := range blocks {
		out = append(out, b.Inlines...)
		for _, it := range b.Items {
			out = append(out, flatten(it.Blocks)...)
		}
	}
	return out
}

func TestRenderSummaryHostile(t *testing.T) {
	tests := []struct {
		name     string
		summary  string
		wantText string   // Summary.Text()
		literals []string // inlines that must appear, marked Literal
	}{
		{"spec summary", "Exchange the Stormline Jacket (M) on order ord_7Hk2 for the Stormline Insulated Jacket (M), for $70.00 more.",
			"Exchange the Stormline Jacket (M) on order ord_7Hk2 for the Stormline Insulated Jacket (M), for $70.00 more.", nil},
		{"link", "Pay [here](https://evil.example/pay) now", "Pay [here](https://evil.example/pay) now", []string{"[here](https://evil.example/pay)"}},
		{"link with title", `[a](http://x "t")`, `[a](http://x "t")`, []string{`[a](http://x "t")`}},
		{"image", "![logo](https://evil.example/track.png)", "![logo](https://evil.example/track.png)", []string{"![logo](https://evil.example/track.png)"}},
		{"autolink", "see <https://x.example>", "see <https://x.example>", []string{"<https://x.example>"}},
		{"email autolink", "mail <a@b.example>", "mail <a@b.example>", []string{"<a@b.example>"}},
		{"script block", "<script>alert(1)</script>", "<script>alert(1)</script>", nil},
		{"inline img onerror", "ok <img src=x onerror=alert(1)> done", "ok <img src=x onerror=alert(1)> done", []string{"<img src=x onerror=alert(1)>"}},
		{"html comment inline", "a <!-- hidden --> b", "a <!-- hidden --> b", []string{"<!-- hidden -->"}},
		{"html comment block", "<!-- hidden\nsecret -->\n\nvisible", "<!-- hidden\nsecret -->\nvisible", nil},
		{"reference link and definition", "[click][x]\n\n[x]: https://evil \"t\"", "[click][x]\n[x]: https://evil \"t\"", nil},
		{"entities not decoded", "&lt;script&gt; &amp; &#x202E; &copy;", "&lt;script&gt; &amp; &#x202E; &copy;", nil},
		{"backslash escapes kept", `\*not\* \[x\](y)`, `\*not\* \[x\](y)`, nil},
		{"code span", "run `rm -rf *`", "run `rm -rf *`", []string{"`rm -rf *`"}},
		{"code block", "```html\n<b>x</b>\n```", "```html\n<b>x</b>\n```", nil},
		{"indented code", "para\n\n    code <a>", "para\n    code <a>", nil},
		{"heading", "# Big\nSetext\n===", "# Big\nSetext\n===", nil},
		{"block quote", "> quoted [l](u)", "> quoted [l](u)", nil},
		{"thematic break", "a\n\n***\n\nb", "a\n***\nb", nil},
		{"table is text", "| a | b |\n|---|---|\n| 1 | 2 |", "| a | b |\n|---|---|\n| 1 | 2 |", nil},
		{"emphasis around link", "*see [x](y)* and **[a](b)**", "see [x](y) and [a](b)", []string{"[x](y)", "[a](b)"}},
		{"nested emphasis with link", "***[l](u)***", "[l](u)", []string{"[l](u)"}},
		{"link over lines in list", "- [a\n  b](c)\n- x", "- [a\n  b](c)\n- x", []string{"[a\nb](c)"}},
		{"javascript link", "[x](javascript:alert(1))", "[x](javascript:alert(1))", []string{"[x](javascript:alert(1))"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := RenderSummary(tt.summary)
			if got := s.Text(); got != tt.wantText {
				t.Errorf("Text() = %q, want %q", got, tt.wantText)
			}
			lits := map[string]bool{}
			for _, in := range flatten(s.Blocks) {
				if in.Literal {
					lits[in.Text] = true
				}
			}
			for _, l := range tt.literals {
				if !lits[l] {
					t.Errorf("literal %q not found; literals: %v", l, lits)
				}
			}
			if s.PlainText != tt.summary {
				t.Errorf("PlainText = %q", s.PlainText)
			}
			j, err := json.Marshal(s)
			if err != nil || !json.Valid(j) {
				t.Errorf("not JSON-serializable: %v", err)
			}
		})
	}
}

func TestRenderSummaryStructure(t *testing.T) {
	s := RenderSummary("Exchange **the jacket** for *$70.00* more.\n\n- one\n- two\n  1. inner *x*\n\n3. c\n4. d")
	want := []Block{
		{Kind: BlockParagraph, Inlines: []Inline{{Text: "Exchange "}, {Text: "the jacket", Strong: true}, {Text: " for "}, {Text: "$70.00", Emphasis: true}, {Text: " more."}}},
		{Kind: BlockList, Items: []ListItem{
			{Blocks: []Block{{Kind: BlockParagraph, Inlines: []Inline{{Text: "one"}}}}},
			{Blocks: []Block{{Kind: BlockParagraph, Inlines: []Inline{{Text: "two"}}}, {Kind: BlockList, Ordered: true, Start: 1, Items: []ListItem{
				{Blocks: []Block{{Kind: BlockParagraph, Inlines: []Inline{{Text: "inner "}, {Text: "x", Emphasis: true}}}}},
			}}}},
		}},
		{Kind: BlockList, Ordered: true, Start: 3, Items: []ListItem{
			{Blocks: []Block{{Kind: BlockParagraph, Inlines: []Inline{{Text: "c"}}}}},
			{Blocks: []Block{{Kind: BlockParagraph, Inlines: []Inline{{Text: "d"}}}}},
		}},
	}
	got, _ := json.Marshal(s.Blocks)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("blocks =\n%s\nwant\n%s", got, exp)
	}
	// The JSON shape the frontend reads.
	var top map[string]json.RawMessage
	j, _ := json.Marshal(RenderSummary("a\u202Eb"))
	if err := json.Unmarshal(j, &top); err != nil || top["blocks"] == nil || top["plain_text"] == nil || top["warnings"] == nil {
		t.Errorf("summary JSON = %s", j)
	}
}

func TestRenderSummaryInvisible(t *testing.T) {
	tests := []struct {
		name     string
		summary  string
		wantText string
		wantCPs  []string
	}{
		{"RLO", "Pay \u202E00.07$\u202C now", "Pay ⟦U+202E⟧00.07$⟦U+202C⟧ now", []string{"U+202C", "U+202E"}},
		{"isolates and marks", "a\u2066b\u2067c\u2068d\u2069e\u200Ef\u200Fg\u061Ch", "a⟦U+2066⟧b⟦U+2067⟧c⟦U+2068⟧d⟦U+2069⟧e⟦U+200E⟧f⟦U+200F⟧g⟦U+061C⟧h",
			[]string{"U+061C", "U+200E", "U+200F", "U+2066", "U+2067", "U+2068", "U+2069"}},
		{"zero width", "a\u200Bb\u200Cc\u200Dd\u2060e\uFEFFf", "a⟦U+200B⟧b⟦U+200C⟧c⟦U+200D⟧d⟦U+2060⟧e⟦U+FEFF⟧f", []string{"U+200B", "U+200C", "U+200D", "U+2060", "U+FEFF"}},
		{"soft hyphen and tag", "a\u00ADb\U000E0041", "a⟦U+00AD⟧b⟦U+E0041⟧", []string{"U+00AD", "U+E0041"}},
		{"in a link literal", "[a\u202Eb](u)", "[a⟦U+202E⟧b](u)", []string{"U+202E"}},
		{"in strong", "**x\u200By**", "x⟦U+200B⟧y", []string{"U+200B"}},
		{"control char", "a\x07b", "a⟦U+0007⟧b", []string{"U+0007"}},
		{"CRLF is a line break", "a\r\nb", "a\nb", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := RenderSummary(tt.summary)
			if got := s.Text(); got != tt.wantText {
				t.Errorf("Text() = %q, want %q", got, tt.wantText)
			}
			var cps []string
			for _, w := range s.Warnings {
				cps = append(cps, w.CodePoint)
				if w.Code != "invisible_character" || !strings.Contains(w.Message, w.CodePoint) {
					t.Errorf("warning = %+v", w)
				}
			}
			if strings.Join(cps, ",") != strings.Join(tt.wantCPs, ",") {
				t.Errorf("warned about %v, want %v", cps, tt.wantCPs)
			}
			for _, in := range flatten(s.Blocks) {
				if in.Invisible != strings.HasPrefix(in.Text, "⟦U+") {
					t.Errorf("inline %+v: Invisible flag wrong", in)
				}
			}
			if strings.IndexFunc(s.PlainText, Invisible) >= 0 {
				t.Errorf("PlainText %q has an invisible character", s.PlainText)
			}
		})
	}
}

// letters returns the letters of s, in order.
func letters(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func checkRendered(t *testing.T, summary string, s Summary) {
	t.Helper()
	var all strings.Builder
	for _, in := range flatten(s.Blocks) {
		if strings.IndexFunc(in.Text, Invisible) >= 0 {
			t.Fatalf("inline text %q contains an invisible character", in.Text)
		}
		all.WriteString(in.Text)
	}
	if strings.IndexFunc(s.PlainText, Invisible) >= 0 {
		t.Fatalf("PlainText contains an invisible character")
	}
	// No letter of the summary is hidden or duplicated: the rendered text has exactly the
	// letters of the source (with invisible characters as tokens).
	src := Visible(normalizeNewlines(summary))
	if got, want := letters(all.String()), letters(src); got != want {
		t.Fatalf("letters differ:\n got %q\nwant %q", got, want)
	}
}

func TestRenderSummaryKeepsEveryLetter(t *testing.T) {
	for _, s := range []string{
		"*a **b** c* [d](e \"f\") ![g](h) <i>j</i> `k` <l@m.example> &n;",
		"- o\n  > p\n  ```q\n  r\n  ```\n- s\n\n1) t\n2) u\n   # v\n\nw\n===\n\nx  \ny\\\nz",
		"[aa][bb]\n[bb]: cc\n\n<div>\ndd\n</div>\n\n    ee\n\n---\nff",
		"***gg** hh* _ii_ __jj__ ***[kk](ll)***",
	} {
		checkRendered(t, s, RenderSummary(s))
	}
}

func FuzzRenderSummary(f *testing.F) {
	for _, s := range []string{
		"Exchange **the jacket** for *$70.00*.", "[x](y) ![i](j) <b>k</b> `c`", "- a\n  - b\n1. c",
		"a\u202Eb\u200B", "***x** y*", "> q\n# h\n```\nc\n```", "[r][s]\n\n[s]: t", "&lt; \\* <!-- c -->",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, summary string) {
		checkRendered(t, summary, RenderSummary(summary))
	})
}

// A typical summary: two sentences with strong emphasis and a short list.
const typicalSummary = "Exchange the **Stormline Jacket (M)** on order ord_7Hk2 for the **Stormline Insulated Jacket (M)**, for *$70.00 more*, charged to the card used for the order.\n\n- Return the original within 30 days.\n- The new jacket ships in 2 business days."

var typicalOperation = []byte(`{"operation_id":"exc_5Rt2","revision":"1791487200-k3Jd9Qx2mW8v","summary":` + mustJSON(typicalSummary) + `,"terms":{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":"70.00","currency":"USD"}},"expires_at":"2026-10-08T12:20:00-07:00"}`)

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func BenchmarkRenderSummary(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderSummary(typicalSummary)
	}
}

// BenchmarkParse parses an operation, against the baseline of json.Unmarshal of the same bytes.
func BenchmarkParse(b *testing.B) {
	benchratio.RunCPU(b, "Parse", "json.Unmarshal", func(b *testing.B) {
		if _, err := Parse(typicalOperation); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		var v map[string]any
		if err := json.Unmarshal(typicalOperation, &v); err != nil {
			b.Fatal(err)
		}
	})
}

func TestRenderSummaryDepthCap(t *testing.T) {
	summary := strings.Repeat("- ", MaxListDepth+5) + "deep"
	s := RenderSummary(summary)
	depth := 0
	blocks := s.Blocks
	for len(blocks) == 1 && blocks[0].Kind == BlockList {
		depth++
		blocks = blocks[0].Items[0].Blocks
	}
	if depth != MaxListDepth {
		t.Fatalf("list depth = %d, want %d", depth, MaxListDepth)
	}
	if len(blocks) != 1 || blocks[0].Kind != BlockLiteral || !strings.HasSuffix(blocks[0].Inlines[0].Text, "deep") {
		t.Fatalf("the rest is not literal: %+v", blocks)
	}
	checkRendered(t, summary, s)
}
