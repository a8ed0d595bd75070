package operations

import (
	"fmt"
	"sort"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// BlockKind is the kind of a rendered summary block.
type BlockKind string

const (
	// BlockParagraph is a paragraph of inlines.
	BlockParagraph BlockKind = "paragraph"
	// BlockList is an ordered or unordered list of items.
	BlockList BlockKind = "list"
	// BlockLiteral is any other CommonMark block (heading, block quote, code block, HTML block,
	// thematic break, ...) shown as its source text, whitespace preserved.
	BlockLiteral BlockKind = "literal"
)

// Summary is a summary rendered for the window (Operations 3 "Formatting", DESIGN invariant 4):
// a text-only structure the frontend turns into DOM text nodes, never HTML. It can express only
// paragraphs, lists, emphasis and strong emphasis. No Text in it contains an invisible character
// (see Invisible): those are separate inlines with Invisible set and a visible Token as Text.
type Summary struct {
	Blocks []Block `json:"blocks"`
	// PlainText is the whole summary as written, with invisible characters made visible: the
	// fallback for a window or transcript that shows the text as is.
	PlainText string           `json:"plain_text"`
	Warnings  []SummaryWarning `json:"warnings,omitempty"`
}

// Block is a paragraph, a list or a literal block.
type Block struct {
	Kind    BlockKind  `json:"kind"`
	Inlines []Inline   `json:"inlines,omitempty"` // paragraph and literal
	Ordered bool       `json:"ordered,omitempty"` // list
	Start   int        `json:"start,omitempty"`   // ordered list: first number
	Items   []ListItem `json:"items,omitempty"`   // list
}

// ListItem is one item of a list: its blocks (paragraphs, nested lists, literal blocks).
type ListItem struct {
	Blocks []Block `json:"blocks"`
}

// Inline is a run of text with a style. Text may contain "\n" (a line break in the source).
type Inline struct {
	Text     string `json:"text"`
	Emphasis bool   `json:"emphasis,omitempty"`
	Strong   bool   `json:"strong,omitempty"`
	// Literal marks source text of an element that is not rendered (a link, image, autolink,
	// raw HTML or code span): the frontend may style it as "shown as written".
	Literal bool `json:"literal,omitempty"`
	// Invisible marks a Token standing for an invisible character of the summary.
	Invisible bool `json:"invisible,omitempty"`
}

// SummaryWarning reports invisible characters found in a summary.
type SummaryWarning struct {
	Code      string `json:"code"` // "invisible_character"
	CodePoint string `json:"code_point"`
	Count     int    `json:"count"`
	Message   string `json:"message"`
}

// The parser: CommonMark 0.31.2 block and inline parsers, but no paragraph transformers, so link
// reference definitions are not consumed (they stay visible as text, and reference links stay
// text too).
var mdParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers(parser.DefaultInlineParsers()...),
)

// RenderSummary renders a summary (Operations 3 "Formatting"). Only paragraphs, lists, emphasis
// and strong emphasis are rendered. Everything else appears as its literal source text, taken
// from the source bytes of the goldmark AST: `[click](https://evil)` stays `[click](https://evil)`,
// `<script>` stays `<script>`. Nothing is decoded: entity references (`&lt;`), numeric character
// references and backslash escapes are shown as written, so the User sees exactly what the
// Company wrote (only the marker of a backslash hard line break is shown as the line break).
// Link reference definitions are not consumed (the parser runs without goldmark's paragraph
// transformer), so `[x]: https://evil` stays visible and `[click][x]` stays text. Line endings
// "\r\n" and "\r" become "\n" and invalid UTF-8 becomes U+FFFD. Lists nested deeper than
// MaxListDepth are shown as literal text. Invisible characters are made visible (separate
// Invisible inlines holding a Token) and reported as warnings. It never panics and never fails.
func RenderSummary(summary string) Summary {
	src := []byte(normalizeNewlines(summary))
	r := &renderer{src: src}
	doc := mdParser.Parse(text.NewReader(src))
	out := Summary{Blocks: r.blocks(doc, len(src), 0)}
	if out.Blocks == nil {
		out.Blocks = []Block{}
	}
	out.PlainText = r.visibleString(string(src))
	// Warnings count the characters of the source once (the blocks hold the same characters).
	cps := make([]rune, 0, len(r.plainCounts))
	for cp := range r.plainCounts {
		cps = append(cps, cp)
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i] < cps[j] })
	for _, cp := range cps {
		n := r.plainCounts[cp]
		out.Warnings = append(out.Warnings, SummaryWarning{
			Code:      "invisible_character",
			CodePoint: fmt.Sprintf("U+%04X", cp),
			Count:     n,
			Message: fmt.Sprintf("The summary contains %d invisible character%s %s (%s). It can hide or reorder text; it is shown as %s.",
				n, plural(n), fmt.Sprintf("U+%04X", cp), invisibleName(cp), Token(cp)),
		})
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func invisibleName(r rune) string {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return "a bidirectional text control"
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF:
		return "a zero-width character"
	case r < 0x20, r >= 0x7F && r < 0xA0:
		return "a control character"
	}
	return "an invisible formatting character"
}

type renderer struct {
	src         []byte
	plainCounts map[rune]int
}

func (r *renderer) visibleString(s string) string {
	if r.plainCounts == nil {
		r.plainCounts = map[rune]int{}
	}
	for _, c := range s {
		if Invisible(c) {
			r.plainCounts[c]++
		}
	}
	return Visible(s)
}

// blockStart is where a block node begins in the source: the earliest of its position, its first
// line and its first child's start (goldmark's positions can point past a tab-indented start).
func blockStart(n ast.Node, fallback int) int {
	start := fallback
	if p := n.Pos(); p >= 0 {
		start = p
	}
	if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
		start = min(start, n.Lines().At(0).Start)
	}
	if c := n.FirstChild(); c != nil && c.Type() == ast.TypeBlock {
		start = min(start, blockStart(c, start))
	}
	return start
}

// MaxListDepth is the deepest list nesting rendered as lists; a list nested deeper is shown as
// literal text, so the window never has to build an unboundedly deep structure.
const MaxListDepth = 16

// blocks renders the block children of parent, a list nested depth lists deep; end is where
// parent's content ends in the source.
func (r *renderer) blocks(parent ast.Node, end, depth int) []Block {
	var out []Block
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		nEnd := end
		if next := n.NextSibling(); next != nil {
			nEnd = blockStart(next, end)
		}
		switch n.Kind() {
		case ast.KindParagraph, ast.KindTextBlock:
			b := Block{Kind: BlockParagraph}
			r.inlines(n, nEnd, n.Lines(), false, false, &b.Inlines)
			b.Inlines = mergeInlines(b.Inlines)
			out = append(out, b)
		case ast.KindList:
			if depth >= MaxListDepth {
				out = r.literalBlock(out, n, nEnd)
				continue
			}
			l := n.(*ast.List)
			b := Block{Kind: BlockList, Ordered: l.IsOrdered()}
			if l.IsOrdered() {
				b.Start = l.Start
			}
			for it := l.FirstChild(); it != nil; it = it.NextSibling() {
				itEnd := nEnd
				if next := it.NextSibling(); next != nil {
					itEnd = blockStart(next, nEnd)
				}
				b.Items = append(b.Items, ListItem{Blocks: nonNil(r.blocks(it, itEnd, depth+1))})
			}
			out = append(out, b)
		default:
			out = r.literalBlock(out, n, nEnd)
		}
	}
	return out
}

// literalBlock appends the source text of block n, which ends before end, as a literal block.
func (r *renderer) literalBlock(out []Block, n ast.Node, end int) []Block {
	start := blockStart(n, end)
	// Keep the indentation of the first line (an indented code block starts after it).
	for start > 0 && start <= len(r.src) && (r.src[start-1] == ' ' || r.src[start-1] == '\t') {
		start--
	}
	lit := strings.TrimRight(r.slice(start, end), " \t\n")
	if lit == "" {
		return out
	}
	b := Block{Kind: BlockLiteral}
	r.add(&b.Inlines, Inline{Text: lit})
	b.Inlines = mergeInlines(b.Inlines)
	return append(out, b)
}

func nonNil(b []Block) []Block {
	if b == nil {
		return []Block{}
	}
	return b
}

func (r *renderer) slice(start, end int) string {
	start = max(0, min(start, len(r.src)))
	end = max(start, min(end, len(r.src)))
	return string(r.src[start:end])
}

// inlineStart is where an inline node begins in the source.
func inlineStart(n ast.Node, fallback int) int {
	if t, ok := n.(*ast.Text); ok {
		return t.Segment.Start
	}
	if p := n.Pos(); p >= 0 {
		return p
	}
	if c := n.FirstChild(); c != nil {
		return inlineStart(c, fallback)
	}
	return fallback
}

// inlines renders the inline children of parent, whose content ends at end in the source; lines
// are the source lines of the enclosing paragraph (without container prefixes such as list
// indentation).
func (r *renderer) inlines(parent ast.Node, end int, lines *text.Segments, em, strong bool, out *[]Inline) {
	for c := parent.FirstChild(); c != nil; c = c.NextSibling() {
		cEnd := end
		if next := c.NextSibling(); next != nil {
			cEnd = min(end, inlineStart(next, end))
		}
		switch n := c.(type) {
		case *ast.Text:
			t := string(n.Segment.Value(r.src))
			if n.SoftLineBreak() || n.HardLineBreak() {
				t += "\n"
			}
			r.add(out, Inline{Text: t, Emphasis: em, Strong: strong})
		case *ast.String:
			r.add(out, Inline{Text: string(n.Value), Emphasis: em, Strong: strong})
		case *ast.Emphasis:
			if n.Level >= 2 {
				r.inlines(n, cEnd, lines, em, true, out)
			} else {
				r.inlines(n, cEnd, lines, true, strong, out)
			}
		default:
			// A link, image, autolink, raw HTML, code span or anything else: its source text.
			// cEnd may include closing emphasis delimiters and trailing spaces after it; none of
			// these elements ends with "*", "_" or a space, so they are trimmed.
			lit := r.span(inlineStart(c, cEnd), cEnd, lines)
			lit = strings.TrimRight(lit, "*_ \t\n")
			r.add(out, Inline{Text: lit, Emphasis: em, Strong: strong, Literal: true})
		}
	}
}

// span returns the source between start and end, restricted to the paragraph's lines and joined
// with "\n" (so container prefixes such as list indentation are not included).
func (r *renderer) span(start, end int, lines *text.Segments) string {
	var b strings.Builder
	first := true
	// The first line that ends after start (lines are in source order).
	i0 := sort.Search(lines.Len(), func(i int) bool { return lines.At(i).Stop > start })
	for i := i0; i < lines.Len(); i++ {
		seg := lines.At(i)
		if seg.Start >= end {
			break
		}
		lo, hi := max(start, seg.Start), min(end, seg.Stop)
		if lo >= hi {
			continue
		}
		chunk := strings.TrimRight(r.slice(lo, hi), "\n")
		if !first {
			b.WriteByte('\n')
		}
		first = false
		b.WriteString(chunk)
	}
	return b.String()
}

// add appends in, splitting out invisible characters as separate Invisible inlines.
func (r *renderer) add(out *[]Inline, in Inline) {
	if in.Text == "" {
		return
	}
	s := in.Text
	for s != "" {
		i := strings.IndexFunc(s, Invisible)
		if i < 0 {
			r.push(out, Inline{Text: s, Emphasis: in.Emphasis, Strong: in.Strong, Literal: in.Literal})
			return
		}
		if i > 0 {
			r.push(out, Inline{Text: s[:i], Emphasis: in.Emphasis, Strong: in.Strong, Literal: in.Literal})
		}
		c, size := decodeRune(s[i:])
		r.push(out, Inline{Text: Token(c), Emphasis: in.Emphasis, Strong: in.Strong, Literal: in.Literal, Invisible: true})
		s = s[i+size:]
	}
}

func (r *renderer) push(out *[]Inline, in Inline) { *out = append(*out, in) }

// mergeInlines joins neighbouring inlines of the same style (in linear time).
func mergeInlines(in []Inline) []Inline {
	var out []Inline
	var b strings.Builder
	same := func(x, y Inline) bool {
		return !x.Invisible && !y.Invisible && x.Emphasis == y.Emphasis && x.Strong == y.Strong && x.Literal == y.Literal
	}
	for i := 0; i < len(in); {
		j := i + 1
		for j < len(in) && same(in[i], in[j]) {
			j++
		}
		cur := in[i]
		if j > i+1 {
			b.Reset()
			for _, x := range in[i:j] {
				b.WriteString(x.Text)
			}
			cur.Text = b.String()
		}
		out = append(out, cur)
		i = j
	}
	return out
}

func decodeRune(s string) (rune, int) {
	for _, c := range s {
		return c, len(string(c))
	}
	return 0, 1
}

// Text returns the text of a rendered summary as a user would read it in the window (blocks
// and list items each on their own lines), for transcripts and tests.
func (s Summary) Text() string {
	var b strings.Builder
	writeBlocks(&b, s.Blocks, "")
	return strings.TrimRight(b.String(), "\n")
}

func writeBlocks(b *strings.Builder, blocks []Block, indent string) {
	for _, bl := range blocks {
		switch bl.Kind {
		case BlockList:
			for i, it := range bl.Items {
				marker := "- "
				if bl.Ordered {
					marker = fmt.Sprintf("%d. ", bl.Start+i)
				}
				b.WriteString(indent + marker)
				var inner strings.Builder
				writeBlocks(&inner, it.Blocks, "")
				txt := strings.TrimRight(inner.String(), "\n")
				b.WriteString(strings.ReplaceAll(txt, "\n", "\n"+indent+strings.Repeat(" ", len(marker))))
				b.WriteByte('\n')
			}
		default:
			b.WriteString(indent)
			for _, in := range bl.Inlines {
				b.WriteString(strings.ReplaceAll(in.Text, "\n", "\n"+indent))
			}
			b.WriteString("\n")
		}
	}
}

// normalizeNewlines turns the CommonMark line endings "\r\n" and "\r" into "\n", and invalid
// UTF-8 into U+FFFD (so no two stray bytes can join into a character in the output).
func normalizeNewlines(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
