package modelapi

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameRules: what the model may name (a domain, an approval's handle, an account label, a
// tool's name) is checked by a class and a length, exactly as one pattern with the bounded
// repetition would check it, at and around each bound.
func TestNameRules(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	for _, tc := range []struct {
		name  string
		check func(string) bool
		rule  string
		in    []string
	}{
		{"domain", validDomain, `^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?$`, []string{
			"shop.example", "a", "a.b:8443", "localhost:1", "a:123456", "-a.b", "a.b-", "a..b", "a b", "",
			long("a", 253), long("a", 254), long("a", 253) + ":443", long("a", 254) + ":443", "a.b:", ":443", "a:b:1"}},
		{"handle", validHandle, `^[A-Za-z0-9_.:-]{1,128}$`, []string{
			"apr_1", "a:b.c-d", "", "a b", "a/b", long("x", 128), long("x", 129)}},
		{"account", validAccount, `^[^\x00-\x1f\x7f]{0,100}$`, []string{
			"", "work", "Büro ☕", "a\nb", "a\x7f", long("é", 100), long("é", 101), long("a", 100), long("a", 101), "\xff\xfe"}},
		{"tool name", validToolName, `^[A-Za-z0-9_.\-/]{1,128}$`, []string{
			"get_order", "ns/tool.v1-2", "", "a b", "a:b", long("t", 128), long("t", 129)}},
	} {
		re := regexp.MustCompile(tc.rule)
		for _, s := range tc.in {
			if got, want := tc.check(s), re.MatchString(s); got != want {
				t.Errorf("%s %.40q (%d bytes): %v, want %v", tc.name, s, len(s), got, want)
			}
		}
	}
}
