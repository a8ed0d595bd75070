package inspect_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

func harSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/har-1.2.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("har.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("har.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ValidateHAR validates b against the HAR 1.2 schema in testdata.
func validateHAR(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

func sampleExchanges() []store.Exchange {
	d := &inspect.Details{Cause: &inspect.Cause{Kind: "window", Name: "Companies.Discover"}, SID: "sid1",
		Findings: []inspect.Finding{inspect.NewFinding(inspect.RuleVersionDeprecation, "Deprecation: @1")}}
	return []store.Exchange{
		{ID: 1, At: time.Unix(1790900000, 0), Method: "GET", URL: "https://shop.localhost:8443/.well-known/poppy.json?a=b", Status: 200,
			RequestHeaders: http.Header{"Accept": {"application/json"}}, ResponseHeaders: http.Header{"Content-Type": {"application/json"}},
			ResponseBody: []byte(`{"protocol_version":"0.4"}`), Duration: 12 * time.Millisecond, Details: d.Marshal()},
		{ID: 2, At: time.Unix(1790900001, 0), Method: "POST", URL: "https://auth.shop.localhost:8443/token", Status: 0,
			RequestHeaders: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, RequestBody: []byte("grant_type=refresh_token&refresh_token=%5Bredacted%5D"),
			ResponseBody: []byte("dial tcp: refused")},
	}
}

func TestHARValidates(t *testing.T) {
	s := harSchema(t)
	b, err := inspect.HAR(sampleExchanges(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := validateHAR(t, s, b); err != nil {
		t.Fatalf("the HAR does not validate: %v\n%s", err, b)
	}
	// Control: the schema rejects an archive that breaks HAR 1.2 (an entry without timings).
	var m map[string]any
	json.Unmarshal(b, &m)
	delete(m["log"].(map[string]any)["entries"].([]any)[0].(map[string]any), "timings")
	bad, _ := json.Marshal(m)
	if err := validateHAR(t, s, bad); err == nil {
		t.Fatal("control: the schema accepted an entry without timings")
	}
	if !strings.Contains(string(b), "cause: window: Companies.Discover") {
		t.Error("the entry's comment does not name the cause")
	}
}

func TestCurl(t *testing.T) {
	ex := sampleExchanges()[1]
	got := inspect.Curl(ex)
	for _, want := range []string{"curl -X 'POST'", "-H 'Content-Type: application/x-www-form-urlencoded'", "--data-raw 'grant_type=refresh_token&refresh_token=%5Bredacted%5D'", "'https://auth.shop.localhost:8443/token'"} {
		if !strings.Contains(got, want) {
			t.Errorf("curl lacks %q:\n%s", want, got)
		}
	}
	if q := inspect.Curl(store.Exchange{Method: "GET", URL: "https://x/it's"}); !strings.Contains(q, `'https://x/it'\''s'`) {
		t.Errorf("quoting: %s", q)
	}
}
