package transport_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestDestinationTemplates: an OpenAPI server joined with its path templates is a destination
// for exactly the URLs those templates describe (spec 5.2, OpenAPI 3.1 §4.8.8): an expression is
// one non-empty part of one segment; nothing below or beside the templates, no root prefix, and
// never a /.well-known/ path or an excluded URL, whatever the entries say.
func TestDestinationTemplates(t *testing.T) {
	var b transport.DestinationsBuilder
	for _, tpl := range []string{
		"https://api.example/v1/orders",
		"https://api.example/v1/orders/{id}",
		"https://api.example/v1/orders/{id}/exchanges",
		"https://api.example/v1/files/{name}.json",
		"https://api.example/v1/report.{format}",
		"https://api.example/v1/a%20b/{x}",
		"https://h.example/{anything}/{x}", // as hostile as a description gets: still two segments
	} {
		if err := b.Template(tpl); err != nil {
			t.Fatalf("Template(%s): %v", tpl, err)
		}
	}
	if err := b.Prefix("https://root.example/"); err != nil { // a prefix at the root names the root only
		t.Fatal(err)
	}
	if err := b.Exclude("https://api.example/v1/openapi.json"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://api.example/x", "https://{host}.example/x", "https://api.example/x/{open", "https://api.example/../x",
		"https://api.example/%2e%2e/{x}", "https://api.example/a%2Fb/{x}", "https://api.example/x?q=1", "https://api.example/a\\b"} {
		if err := b.Template(bad); err == nil {
			t.Errorf("Template(%s) accepted", bad)
		}
	}
	d := b.Build()
	tests := []struct {
		url  string
		want bool
	}{
		{"https://api.example/v1/orders", true},
		{"https://api.example/v1/orders?page=2", true},
		{"https://api.example/v1/orders/ord_7Hk2", true},
		{"https://api.example/v1/orders/ord%207", true},
		{"https://api.example/v1/orders/ord_7Hk2/exchanges", true},
		{"https://api.example/v1/orders/ord_7Hk2/returns", false},
		{"https://api.example/v1/orders/ord_7Hk2/exchanges/x", false},
		{"https://api.example/v1/orders/a/b/exchanges", false},
		{"https://api.example/v1/orders//exchanges", false}, // an expression is never empty
		{"https://api.example/v1/files/report.json", true},
		{"https://api.example/v1/files/.json", false},
		{"https://api.example/v1/files/report.xml", false},
		{"https://api.example/v1/report.csv", true},
		{"https://api.example/v1/report.", false},
		{"https://api.example/v1/a%20b/c", true},
		{"https://h.example/v1/secret", true}, // {anything}/{x}
		{"https://h.example/v1/secret/more", false},
		{"https://h.example/.well-known/poppy.json", false},
		{"https://api.example/v1/openapi.json", false},
		{"https://api.example/.well-known/poppy.json", false},
		{"https://api.example/.well-known/x", false},
		{"https://api.example/v1", false},
		{"https://api.example/", false},
		{"https://api.example/a/b/c", false},
		{"https://api.example/v1/orders/..", false},
		{"https://api.example/v1/orders/%2e%2e", false},
		{"https://api.example/v1/orders/a%2Fb", false},
		{"https://API.example:443/v1/orders/x", true},
		{"https://api.example:8443/v1/orders/x", false},
		{"https://other.example/v1/orders/x", false},
		{"https://root.example/", true},
		{"https://root.example", true},
		{"https://root.example/anything", false},
		{"https://root.example/.well-known/poppy.json", false},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Allows(u); got != tc.want {
			t.Errorf("Allows(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}
	for _, raw := range []string{"https://api.example/.well-known/poppy.json", "https://api.example/v1/openapi.json", "https://api.example/v1/../x"} {
		u, _ := url.Parse(raw)
		if !d.Refuses(u) {
			t.Errorf("Refuses(%s) = false", raw)
		}
	}
	if u, _ := url.Parse("https://api.example/v1/elsewhere/x/y"); d.Refuses(u) {
		t.Error("Refuses a URL only a new entry could allow")
	}
}

// TestDestinationTemplateWorstCase: a template with many expressions in one segment is matched
// without backtracking blow-up (a hostile description cannot make a destination check slow);
// testing.AllocsPerRun runs it enough to notice an exponential algorithm.
func TestDestinationTemplateWorstCase(t *testing.T) {
	var b transport.DestinationsBuilder
	if err := b.Template("https://api.example/" + strings.Repeat("{a}x", 40) + "y"); err != nil {
		t.Fatal(err)
	}
	d := b.Build()
	u, _ := url.Parse("https://api.example/" + strings.Repeat("x", 4000))
	testing.AllocsPerRun(10, func() {
		if d.Allows(u) {
			t.Fatal("matched")
		}
	})
}
