package operations

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

func TestCheckTerms(t *testing.T) {
	spec := mustParse(t, specOperation)
	specBody := json.RawMessage(`{ "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m" }`)
	tests := []struct {
		name string
		op   *Operation
		req  RequestFacts
		want []string // code + " " + term + " @ " + where
	}{
		{"spec API request agrees", spec, RequestFacts{Method: "POST", Path: "/orders/ord_7Hk2/exchanges", PathParams: map[string]string{"order_id": "ord_7Hk2"}, Body: specBody}, nil},
		{"spec MCP call agrees", spec, RequestFacts{Tool: "exchange_item", Arguments: json.RawMessage(`{ "order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m" }`)}, nil},
		{"sku differs in body", spec, RequestFacts{Body: json.RawMessage(`{"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-l"}`)},
			[]string{"term_differs /replacement_sku @ body /replacement_sku"}},
		{"nested field differs", spec, RequestFacts{Arguments: json.RawMessage(`{"exchange":{"lines":[{"item_id":"itm_9"}]}}`)},
			[]string{"term_differs /item_id @ arguments /exchange/lines/0/item_id"}},
		{"every place a field is sent, in the request's order", spec, RequestFacts{Body: json.RawMessage(`{"z":{"item_id":"itm_1"},"a":[{"item_id":"itm_2"}],"item_id":"itm_4Qa"}`)},
			[]string{"term_differs /item_id @ body /z/item_id", "term_differs /item_id @ body /a/0/item_id"}},
		{"escaped names", spec, RequestFacts{Body: json.RawMessage(`{"a/b":{"c~d":{"item_id":"itm_1"}}}`)},
			[]string{"term_differs /item_id @ body /a~1b/c~0d/item_id"}},
		{"path parameter differs", spec, RequestFacts{PathParams: map[string]string{"order_id": "ord_X"}},
			[]string{"term_differs /order_id @ path parameter order_id"}},
		{"query differs", spec, RequestFacts{Query: url.Values{"order_id": {"ord_7Hk2", "ord_8"}}},
			[]string{"term_differs /order_id @ query order_id"}},
		{"case matters", spec, RequestFacts{Body: json.RawMessage(`{"item_id":"ITM_4QA"}`)},
			[]string{"term_differs /item_id @ body /item_id"}},
		{"money object equal with number amount", spec, RequestFacts{Body: json.RawMessage(`{"price_difference":{"amount":70,"currency":"USD"}}`)}, nil},
		{"money object differs", spec, RequestFacts{Body: json.RawMessage(`{"price_difference":{"amount":"7.00","currency":"USD"}}`)},
			[]string{"term_differs /price_difference @ body /price_difference"}},
		{"intent agrees", spec, RequestFacts{Body: specBody, Intent: map[string]string{"Replacement SKU": " stormline-insulated-m ", "price-difference": "70", "order_id": "ord_7Hk2"}}, nil},
		{"intent differs", spec, RequestFacts{Intent: map[string]string{"replacement_sku": "stormline-insulated-s", "price_difference": "$70"}},
			[]string{"intent_differs /price_difference @ intent price_difference", "intent_differs /replacement_sku @ intent replacement_sku"}},
		{"intent not in terms", spec, RequestFacts{Intent: map[string]string{"color": "red"}},
			[]string{"intent_not_in_terms  @ intent color"}},
		{"terms absent", mustParse(t, `{"operation_id":"o","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`), RequestFacts{Body: specBody, Intent: map[string]string{"sku": "x"}},
			[]string{"terms_absent  @ ", "intent_not_in_terms  @ intent sku"}},
		{"amount not in summary", op(t, "r1", "Exchange the jacket for a small fee.", `{"fee":{"amount":"70.00","currency":"USD"}}`, "2026-10-08T12:20:00Z"), RequestFacts{},
			[]string{"amount_not_in_summary /fee/amount @ "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := CheckTerms(tt.op, tt.req)
			var got []string
			for _, w := range ws {
				got = append(got, w.Code+" "+w.Term+" @ "+w.Where)
				if w.Message == "" || !strings.HasSuffix(w.Message, ".") {
					t.Errorf("warning without a sentence: %+v", w)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestCheckTermsMessage(t *testing.T) {
	ws := CheckTerms(mustParse(t, specOperation), RequestFacts{Body: json.RawMessage(`{"replacement_sku":"stormline-insulated-l"}`)})
	if len(ws) != 1 {
		t.Fatalf("warnings = %+v", ws)
	}
	want := `The terms say replacement_sku is "stormline-insulated-m", but the request sent "stormline-insulated-l" in body /replacement_sku.`
	if ws[0].Message != want || string(ws[0].TermValue) != `"stormline-insulated-m"` || string(ws[0].RequestValue) != `"stormline-insulated-l"` {
		t.Errorf("warning = %+v", ws[0])
	}
}

func TestLooseEqual(t *testing.T) {
	n := func(s string) any { return json.Number(s) }
	tests := []struct {
		a, b any
		want bool
	}{
		{"70.00", n("70"), true},
		{n("70"), "70.00", true},
		{n("70.00"), n("70"), true},
		{n("7e1"), n("70"), true},
		{"70.00", "70", false}, // two strings: exact
		{"$70", n("70"), false},
		{"70,00", n("70"), false},
		{"+70", n("70"), false},
		{" 70", n("70"), false},
		{"7e1", n("70"), false}, // a string with an exponent is not a plain decimal
		{"70.01", n("70"), false},
		{"true", true, true},
		{true, "true", true},
		{"null", nil, true},
		{true, false, false},
		{nil, nil, true},
		{"abc", "abc", true},
		{"abc", "ABC", false},
		{map[string]any{"a": "1"}, map[string]any{"a": n("1.0")}, true},
		{map[string]any{"a": "1"}, map[string]any{"a": "1", "b": "2"}, false},
		{[]any{"a", n("1")}, []any{"a", "1"}, true},
		{[]any{"a"}, []any{"a", "b"}, false},
		{"a", []any{"a"}, false},
	}
	for _, tt := range tests {
		if got := looseEqual(tt.a, tt.b); got != tt.want {
			t.Errorf("looseEqual(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzCheckTerms(f *testing.F) {
	f.Add(`{"a":"1","m":{"amount":"70.00","currency":"USD"}}`, `{"a":1,"x":{"a":[1,{"a":"2"}]}}`, "a", "1.0")
	f.Add(`{}`, `[]`, "", "")
	f.Add(`{"n":1e999999}`, `{"n":"1"}`, "n", "1e5")
	f.Add(`{"a":"1"}`, `{}`, "b\u200b", "x\u202e")
	f.Fuzz(func(t *testing.T, terms, body, ik, iv string) {
		raw := `{"operation_id":"o","revision":"r","summary":"s 70.00","expires_at":"2026-10-08T12:20:00Z","terms":` + terms + `}`
		o, err := Parse(json.RawMessage(raw))
		if err != nil {
			return
		}
		for _, w := range CheckTerms(o, RequestFacts{Body: json.RawMessage(body), Query: url.Values{ik: {iv}}, Intent: map[string]string{ik: iv}}) {
			if w.Code == "" || w.Message == "" || strings.IndexFunc(w.Message, Invisible) >= 0 {
				t.Fatalf("bad warning %+v", w)
			}
		}
		o2 := *o
		o2.Terms = json.RawMessage(body)
		if len(body) > 0 && body[0] == '{' && json.Valid(o2.Terms) {
			_ = Diff(o, &o2)
		}
	})
}
