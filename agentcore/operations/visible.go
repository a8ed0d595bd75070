package operations

import (
	"fmt"
	"strings"
	"unicode"
)

// Invisible reports whether r is a character that a summary could use to hide or reorder text:
// bidi controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), zero-width characters
// (U+200B–U+200D, U+2060, U+FEFF), every other format character (Unicode category Cf, such as
// the soft hyphen and tag characters), control characters other than tab and line feed, line and
// paragraph separators, and characters that render as blank without being spaces (Hangul fillers,
// the combining grapheme joiner, the Braille blank).
func Invisible(r rune) bool {
	switch r {
	case '\n', '\t':
		return false
	case 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0, 0xFFFC, 0x180E:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Zl, unicode.Zp) ||
		(r >= 0xFE00 && r <= 0xFE0F) || (r >= 0xE0100 && r <= 0xE01EF) // variation selectors
}

// Token is the visible text that stands for the invisible character r, e.g. "⟦U+202E⟧".
func Token(r rune) string { return fmt.Sprintf("⟦U+%04X⟧", r) }

// Visible returns s with every invisible character (see Invisible) replaced by its Token.
func Visible(s string) string {
	if printableASCII(s) || strings.IndexFunc(s, Invisible) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if Invisible(r) {
			b.WriteString(Token(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// printableASCII reports whether s has only the characters U+0020–U+007E, none of which is
// invisible: the fast path for most terms, URLs and IDs.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
