package operations

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Changes is what changed between two revisions of an operation (Operations 3 "New terms"), for
// the window to show "what changed since the last revision".
type Changes struct {
	SummaryChanged bool `json:"summary_changed"`
	// Summary is a word-level comparison of the two summaries (source text), present when the
	// summary changed.
	Summary []TextChange `json:"summary,omitempty"`
	// Terms lists each changed term, by JSON Pointer path (RFC 6901) into `terms`.
	Terms         []TermChange `json:"terms,omitempty"`
	ExpiryChanged bool         `json:"expiry_changed"`
	OldExpiresAt  time.Time    `json:"old_expires_at,omitzero"`
	NewExpiresAt  time.Time    `json:"new_expires_at,omitzero"`
}

// Any reports whether anything the User approves changed.
func (c Changes) Any() bool { return c.SummaryChanged || len(c.Terms) > 0 || c.ExpiryChanged }

// TextChange is a run of the summary that is the same in both revisions, only in the old one
// (deleted) or only in the new one (inserted).
type TextChange struct {
	Op   string `json:"op"` // "equal", "delete", "insert"
	Text string `json:"text"`
}

// TermChange is one changed term. Old and New are JSON values (nil when absent).
type TermChange struct {
	Path string          `json:"path"` // JSON Pointer; "" is the whole terms object
	Kind string          `json:"kind"` // "added", "removed", "changed"
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// Diff compares two revisions of the same operation. Numbers in terms are compared by exact
// decimal value (70.00 and 70 are the same term value); strings are compared exactly.
func Diff(prev, next *Operation) Changes {
	var c Changes
	if prev.Summary != next.Summary {
		c.SummaryChanged = true
		c.Summary = wordDiff(prev.Summary, next.Summary)
	}
	if !prev.ExpiresAt.Equal(next.ExpiresAt) {
		c.ExpiryChanged = true
		c.OldExpiresAt, c.NewExpiresAt = prev.ExpiresAt, next.ExpiresAt
	}
	var a, b any
	var hasA, hasB bool
	if len(prev.Terms) > 0 {
		if v, err := decodeJSON(prev.Terms); err == nil {
			a, hasA = v, true
		}
	}
	if len(next.Terms) > 0 {
		if v, err := decodeJSON(next.Terms); err == nil {
			b, hasB = v, true
		}
	}
	switch {
	case hasA && hasB:
		diffValues("", a, b, &c.Terms)
	case hasA:
		c.Terms = append(c.Terms, TermChange{Path: "", Kind: "removed", Old: encodeJSON(a)})
	case hasB:
		c.Terms = append(c.Terms, TermChange{Path: "", Kind: "added", New: encodeJSON(b)})
	}
	return c
}

func diffValues(path string, a, b any, out *[]TermChange) {
	ao, aObj := a.(map[string]any)
	bo, bObj := b.(map[string]any)
	if aObj && bObj {
		keys := map[string]bool{}
		for k := range ao {
			keys[k] = true
		}
		for k := range bo {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := memberPointer(path, k)
			av, inA := ao[k]
			bv, inB := bo[k]
			switch {
			case inA && inB:
				diffValues(p, av, bv, out)
			case inA:
				*out = append(*out, TermChange{Path: p, Kind: "removed", Old: encodeJSON(av)})
			default:
				*out = append(*out, TermChange{Path: p, Kind: "added", New: encodeJSON(bv)})
			}
		}
		return
	}
	aa, aArr := a.([]any)
	ba, bArr := b.([]any)
	if aArr && bArr {
		for i := 0; i < max(len(aa), len(ba)); i++ {
			p := path + "/" + strconv.Itoa(i)
			switch {
			case i < len(aa) && i < len(ba):
				diffValues(p, aa[i], ba[i], out)
			case i < len(aa):
				*out = append(*out, TermChange{Path: p, Kind: "removed", Old: encodeJSON(aa[i])})
			default:
				*out = append(*out, TermChange{Path: p, Kind: "added", New: encodeJSON(ba[i])})
			}
		}
		return
	}
	if !sameJSON(a, b) {
		*out = append(*out, TermChange{Path: path, Kind: "changed", Old: encodeJSON(a), New: encodeJSON(b)})
	}
}

// sameJSON compares two decoded JSON values (numbers as json.Number): numbers by exact decimal
// value, everything else exactly. A string is never equal to a number here (see CheckTerms for the
// looser request comparison).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(string(x), string(y))
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case map[string]any, []any:
		return sameContainer(a, b, sameJSON)
	}
	return false
}

// sameContainer compares two decoded JSON objects or arrays member by member with eq: the same
// keys (or length), and eq true for each pair. It is shared by the exact comparison (sameJSON)
// and the looser one of CheckTerms (looseEqual).
func sameContainer(a, b any, eq func(a, b any) bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !eq(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !eq(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// maxNumberLen bounds decimal parsing (big.Rat of a huge exponent would be slow).
const maxNumberLen = 64

// sameNumber compares two JSON number literals by exact decimal value. Literals longer than
// maxNumberLen or with an exponent beyond ±1000 are compared as text.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	x, okx := parseDecimal(a)
	y, oky := parseDecimal(b)
	return okx && oky && x.Cmp(y) == 0
}

func parseDecimal(s string) (*big.Rat, bool) {
	if len(s) == 0 || len(s) > maxNumberLen {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// maxDiffCells bounds the word diff (words(prev) × words(next)); beyond it the whole summary is
// reported as replaced.
const maxDiffCells = 1 << 20

// wordDiff compares two texts word by word (a word keeps the whitespace that follows it).
func wordDiff(a, b string) []TextChange {
	wa, wb := splitWords(a), splitWords(b)
	if len(wa)*len(wb) > maxDiffCells {
		return []TextChange{{Op: "delete", Text: a}, {Op: "insert", Text: b}}
	}
	// LCS table over suffixes.
	n, m := len(wa), len(wb)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if wa[i] == wb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []TextChange
	add := func(op, t string) {
		if k := len(out); k > 0 && out[k-1].Op == op {
			out[k-1].Text += t
			return
		}
		out = append(out, TextChange{Op: op, Text: t})
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case wa[i] == wb[j]:
			add("equal", wa[i])
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			add("delete", wa[i])
			i++
		default:
			add("insert", wb[j])
			j++
		}
	}
	for ; i < n; i++ {
		add("delete", wa[i])
	}
	for ; j < m; j++ {
		add("insert", wb[j])
	}
	return out
}

func splitWords(s string) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range s {
		sp := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !sp && inSpace && i > start {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = sp
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
