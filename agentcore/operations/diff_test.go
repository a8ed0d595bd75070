package operations

import (
	"encoding/json"
	"strings"
	"testing"
)

func op(t *testing.T, rev, summary, terms, exp string) *Operation {
	t.Helper()
	raw := `{"operation_id":"exc_5Rt2","revision":"` + rev + `","summary":` + mustJSON(summary) + `,"expires_at":"` + exp + `"`
	if terms != "" {
		raw += `,"terms":` + terms
	}
	return mustParse(t, raw+"}")
}

func TestDiff(t *testing.T) {
	const exp = "2026-10-08T12:20:00-07:00"
	prev := op(t, "r1", "Exchange the jacket (M) for $70.00 more.", `{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":"70.00","currency":"USD"},"tags":["a","b"]}`, exp)
	tests := []struct {
		name        string
		next        *Operation
		wantSummary string // rendered word diff: [-del-]{+ins+}
		wantTerms   []string
		wantExpiry  bool
	}{
		{"nothing but the revision", op(t, "r2", prev.Summary, `{ "tags":["a","b"], "price_difference":{"currency":"USD","amount":"70.00"},"replacement_sku":"stormline-insulated-m","item_id":"itm_4Qa"}`, "2026-10-08T19:20:00Z"), "", nil, false},
		{"size changed", op(t, "r2", "Exchange the jacket (L) for $80.00 more.", `{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-l","price_difference":{"amount":"80.00","currency":"USD"},"tags":["a","b"]}`, exp),
			"Exchange the jacket [-(M) -]{+(L) +}for [-$70.00 -]{+$80.00 +}more.",
			[]string{`changed /price_difference/amount "70.00" -> "80.00"`, `changed /replacement_sku "stormline-insulated-m" -> "stormline-insulated-l"`}, false},
		{"terms added, removed, array", op(t, "r2", prev.Summary, `{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":"70.00","currency":"USD"},"tags":["a"],"a/b~":true}`, exp),
			"", []string{`added /a~1b~0 - -> true`, `removed /tags/1 "b" -> -`}, false},
		{"number vs string type change", op(t, "r2", prev.Summary, `{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":70.00,"currency":"USD"},"tags":["a","b"]}`, exp),
			"", []string{`changed /price_difference/amount "70.00" -> 70.00`}, false},
		{"terms dropped", op(t, "r2", prev.Summary, ``, exp), "", []string{`removed  {"item_id":"itm_4Qa","price_difference":{"amount":"70.00","currency":"USD"},"replacement_sku":"stormline-insulated-m","tags":["a","b"]} -> -`}, false},
		{"expiry", op(t, "r2", prev.Summary, `{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m","price_difference":{"amount":"70.00","currency":"USD"},"tags":["a","b"]}`, "2026-10-08T12:30:00-07:00"), "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Diff(prev, tt.next)
			var sb strings.Builder
			for _, ch := range c.Summary {
				switch ch.Op {
				case "equal":
					sb.WriteString(ch.Text)
				case "delete":
					sb.WriteString("[-" + ch.Text + "-]")
				case "insert":
					sb.WriteString("{+" + ch.Text + "+}")
				}
			}
			if sb.String() != tt.wantSummary || c.SummaryChanged != (tt.wantSummary != "") {
				t.Errorf("summary diff = %q (changed %v), want %q", sb.String(), c.SummaryChanged, tt.wantSummary)
			}
			var terms []string
			show := func(r json.RawMessage) string {
				if r == nil {
					return "-"
				}
				return string(r)
			}
			for _, tc := range c.Terms {
				terms = append(terms, tc.Kind+" "+tc.Path+" "+show(tc.Old)+" -> "+show(tc.New))
			}
			if strings.Join(terms, "\n") != strings.Join(tt.wantTerms, "\n") {
				t.Errorf("terms =\n%s\nwant\n%s", strings.Join(terms, "\n"), strings.Join(tt.wantTerms, "\n"))
			}
			if c.ExpiryChanged != tt.wantExpiry {
				t.Errorf("ExpiryChanged = %v", c.ExpiryChanged)
			}
			if c.Any() != (tt.wantSummary != "" || len(tt.wantTerms) > 0 || tt.wantExpiry) {
				t.Errorf("Any() = %v", c.Any())
			}
		})
	}
}

func TestDiffNumbersByValue(t *testing.T) {
	const exp = "2026-10-08T12:20:00Z"
	a := op(t, "r1", "s", `{"n":70,"m":1e2}`, exp)
	b := op(t, "r2", "s", `{"n":70.00,"m":100}`, exp)
	if c := Diff(a, b); len(c.Terms) != 0 {
		t.Errorf("equal numbers reported changed: %+v", c.Terms)
	}
}

func TestWordDiffLargeFallsBack(t *testing.T) {
	a := strings.Repeat("w ", 2000)
	b := strings.Repeat("x ", 2000)
	c := wordDiff(a, b)
	if len(c) != 2 || c[0].Text != a || c[1].Text != b {
		t.Errorf("large diff not reported as a replacement")
	}
}
