package operations

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// TestExtensionsHeader: the declaration this package names is the one agentcore/headers writes
// for the extension in this version (spec 3.4, Operations 2).
func TestExtensionsHeader(t *testing.T) {
	got, err := headers.FormatExtensions([]headers.Extension{{Name: "operations", Version: Version}})
	if err != nil || got != ExtensionsHeader {
		t.Fatalf("headers.FormatExtensions = %q, %v; ExtensionsHeader is %q", got, err, ExtensionsHeader)
	}
}

func TestApprovalHeaderSpecExample(t *testing.T) {
	got, err := ApprovalHeader("exc_5Rt2", "1791487200-k3Jd9Qx2mW8v")
	if err != nil {
		t.Fatal(err)
	}
	if want := `operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`; got != want {
		t.Errorf("header = %s, want %s", got, want)
	}
	a, err := ParseApprovalHeader([]string{got})
	if err != nil || a != (Approval{"exc_5Rt2", "1791487200-k3Jd9Qx2mW8v"}) {
		t.Errorf("round trip = %+v, %v", a, err)
	}
}

func TestApprovalHeaderRefusesBadIDs(t *testing.T) {
	for _, tt := range []struct{ op, rev string }{{"", "r"}, {"o", ""}, {`a"b`, "r"}, {"o", "r\\"}, {"o", "r\u202E"}, {"o", strings.Repeat("r", 257)}} {
		if _, err := ApprovalHeader(tt.op, tt.rev); err == nil {
			t.Errorf("ApprovalHeader(%q, %q) accepted", tt.op, tt.rev)
		}
	}
}

func TestParseApprovalHeader(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   Approval
		ok     bool
	}{
		{"spec", []string{`operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`}, Approval{"exc_5Rt2", "1791487200-k3Jd9Qx2mW8v"}, true},
		{"reordered, no space", []string{`revision="r1",operation_id="o1"`}, Approval{"o1", "r1"}, true},
		{"unknown members ignored", []string{`operation_id="o", v=2, revision="r", note=?1`}, Approval{"o", "r"}, true},
		{"parameters ignored", []string{`operation_id="o";x=1, revision="r"`}, Approval{"o", "r"}, true},
		{"split over field lines", []string{`operation_id="o"`, `revision="r"`}, Approval{"o", "r"}, true},
		{"last duplicate wins (RFC 9651)", []string{`operation_id="a", operation_id="o", revision="r"`}, Approval{"o", "r"}, true},
		{"missing revision", []string{`operation_id="o"`}, Approval{}, false},
		{"missing operation_id", []string{`revision="r"`}, Approval{}, false},
		{"token not string", []string{`operation_id=o, revision="r"`}, Approval{}, false},
		{"inner list", []string{`operation_id=("o"), revision="r"`}, Approval{}, false},
		{"integer", []string{`operation_id="o", revision=1`}, Approval{}, false},
		{"boolean member", []string{`operation_id="o", revision`}, Approval{}, false},
		{"bad characters", []string{`operation_id="o.o", revision="r"`}, Approval{}, false},
		{"empty string", []string{`operation_id="", revision="r"`}, Approval{}, false},
		{"not a dictionary", []string{`"o", "r"`}, Approval{}, false},
		{"empty", nil, Approval{}, false},
		{"garbage", []string{`operation_id="o`}, Approval{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseApprovalHeader(tt.values)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if a != tt.want {
				t.Errorf("approval = %+v, want %+v", a, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), "Poppy-Approval") {
				t.Errorf("error does not name the header: %v", err)
			}
		})
	}
}

func FuzzParseApprovalHeader(f *testing.F) {
	f.Add(`operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`)
	f.Add(`revision="r";a=1, x=(1 2), operation_id="o"`)
	f.Add(`operation_id=:AAA=:, revision=@1`)
	f.Add(`operation_id="", revision=""`)
	f.Add(`operation_id="a b", revision="r/1"`)
	f.Fuzz(func(t *testing.T, v string) {
		a, err := ParseApprovalHeader([]string{v})
		if err != nil {
			return
		}
		if !headers.ValidID(a.OperationID) || !headers.ValidID(a.Revision) {
			t.Fatalf("accepted invalid IDs: %+v", a)
		}
		h, err := ApprovalHeader(a.OperationID, a.Revision)
		if err != nil {
			t.Fatalf("re-serialize %+v: %v", a, err)
		}
		b, err := ParseApprovalHeader([]string{h})
		if err != nil || b != a {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", a, h, b, err)
		}
	})
}

func TestApprovalMeta(t *testing.T) {
	m, err := ApprovalMeta(Approval{"exc_5Rt2", "1791487200-k3Jd9Qx2mW8v"})
	if err != nil {
		t.Fatal(err)
	}
	// The params of the spec's tools/call example.
	params := map[string]any{"name": "exchange_item", "arguments": map[string]any{"order_id": "ord_7Hk2"}, "_meta": m}
	got, _ := json.Marshal(params["_meta"])
	if want := `{"personalagentprotocol.org/approval":{"operation_id":"exc_5Rt2","revision":"1791487200-k3Jd9Qx2mW8v"}}`; string(got) != want {
		t.Errorf("_meta = %s, want %s", got, want)
	}
	a, ok, err := ApprovalFromMeta(got)
	if !ok || err != nil || a.OperationID != "exc_5Rt2" {
		t.Errorf("ApprovalFromMeta = %+v %v %v", a, ok, err)
	}
	for _, tt := range []struct {
		meta    string
		ok, err bool
	}{
		{`{}`, false, false},
		{`{"progressToken":1}`, false, false},
		{`{"personalagentprotocol.org/approval":{"operation_id":"o"}}`, true, true},
		{`{"personalagentprotocol.org/approval":"o"}`, true, true},
		{`{"personalagentprotocol.org/approval":{"operation_id":"o","revision":"r/1"}}`, true, true},
	} {
		_, ok, err := ApprovalFromMeta(json.RawMessage(tt.meta))
		if ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("ApprovalFromMeta(%s) = ok %v err %v", tt.meta, ok, err)
		}
	}
	if _, err := ApprovalMeta(Approval{"o", ""}); err == nil {
		t.Error("ApprovalMeta accepted an empty revision")
	}
}

func TestApprovalExtensions(t *testing.T) {
	ext, err := ApprovalExtensions(Approval{"exc_5Rt2", "1791487200-k3Jd9Qx2mW8v"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"operations":{"approval":{"operation_id":"exc_5Rt2","revision":"1791487200-k3Jd9Qx2mW8v"}}}`; string(ext) != want {
		t.Errorf("extensions = %s, want %s", ext, want)
	}
	a, ok, err := ApprovalFromExtensions(ext)
	if !ok || err != nil || a.Revision != "1791487200-k3Jd9Qx2mW8v" {
		t.Errorf("round trip = %+v %v %v", a, ok, err)
	}
	// An operation is not an approval, and text never is.
	if _, ok, _ := ApprovalFromExtensions(json.RawMessage(`{"operations":{"operation":{"operation_id":"o"}}}`)); ok {
		t.Error("an operation was read as an approval")
	}
}

func TestDigest(t *testing.T) {
	base := mustParse(t, specOperation)
	d := Digest(base)
	if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Fatalf("digest = %s", d)
	}
	same := []string{
		// whitespace and key order of terms, and the zone of expires_at, don't matter
		`{"expires_at":"2026-10-08T19:20:00Z","terms":{"price_difference":{"currency":"USD","amount":"70.00"},"replacement_sku":"stormline-insulated-m","item_id":"itm_4Qa","order_id":"ord_7Hk2"},"summary":"Exchange the Stormline Jacket (M) on order ord_7Hk2 for the Stormline Insulated Jacket (M), for $70.00 more, charged to the card used for the order.","revision":"1791487200-k3Jd9Qx2mW8v","operation_id":"exc_5Rt2","extra":1}`,
	}
	for _, raw := range same {
		if got := Digest(mustParse(t, raw)); got != d {
			t.Errorf("digest of an equivalent operation differs")
		}
	}
	mod := func(f func(o *Operation)) string {
		o := *base
		f(&o)
		return Digest(&o)
	}
	for name, got := range map[string]string{
		"operation_id": mod(func(o *Operation) { o.OperationID = "exc_5Rt3" }),
		"revision":     mod(func(o *Operation) { o.Revision += "x" }),
		"summary":      mod(func(o *Operation) { o.Summary += " " }),
		"expires_at":   mod(func(o *Operation) { o.ExpiresAt = o.ExpiresAt.Add(time.Second) }),
		"terms":        mod(func(o *Operation) { o.Terms = json.RawMessage(`{"order_id":"ord_7Hk2"}`) }),
		"no terms":     mod(func(o *Operation) { o.Terms = nil }),
		"number text":  mod(func(o *Operation) { o.Terms = json.RawMessage(strings.Replace(string(o.Terms), `"70.00"`, `70.00`, 1)) }),
		// Field boundaries: moving text between fields changes the digest.
		"boundary": mod(func(o *Operation) { o.OperationID, o.Revision = "exc_5Rt21791487200", "-k3Jd9Qx2mW8v" }),
	} {
		if got == d {
			t.Errorf("changing %s does not change the digest", name)
		}
	}
}
