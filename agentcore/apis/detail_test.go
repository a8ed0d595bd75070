package apis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestDetailChecksSchemas: describing an operation in full checks the schemas of its parameters
// and request body and the component schemas they reach: a keyword of the wrong JSON type or a
// $ref to anything but one of components.schemas is the Company's error, named with the
// operation and the schema; what OpenAPI 3.0 and 3.1 each allow is accepted.
func TestDetailChecksSchemas(t *testing.T) {
	tests := []struct {
		name    string
		version string
		param   string // the schema of the path parameter id
		body    string // the request body's schema
		widget  string // components.schemas.Widget, which body references
		wantErr string // "" when the operation is described
		// more are further components.schemas (",name:schema..."), and wantNames the
		// components the description lists, in order, when they are given.
		more      string
		wantNames []string
	}{
		{name: "plain", version: "3.1.0", param: `{"type":"string"}`, body: `{"$ref":"#/components/schemas/Widget"}`, widget: `{"type":"object","properties":{"n":{"type":"integer"}}}`,
			wantNames: []string{"Widget"}},
		{name: "breadth-first in written order", version: "3.1.0", param: `{"type":"string"}`,
			body:   `{"type":"object","properties":{"z":{"$ref":"#/components/schemas/Zed"},"w":{"$ref":"#/components/schemas/Widget"},"again":{"$ref":"#/components/schemas/Zed"}}}`,
			widget: `{"type":"object","properties":{"p":{"$ref":"#/components/schemas/Part"}}}`, more: `,"Zed":{"type":"string"},"Part":{"type":"integer"}`,
			wantNames: []string{"Zed", "Widget", "Part"}},
		{name: "reference-like text is not a reference", version: "3.0.3", param: `{"type":"string"}`, body: `{"$ref":"#/components/schemas/Widget"}`,
			widget:    `{"type":"object","description":"not \"#/components/schemas/Gone\"","example":"#/components/schemas/Gone","default":{"$ref":"#/components/schemas/Gone"},"properties":{"e":{"enum":["#/components/schemas/Gone"]}}}`,
			wantNames: []string{"Widget"}},
		{name: "reference into a component", version: "3.1.0", param: `{"type":"string"}`, body: `{"$ref":"#/components/schemas/Widget/properties/n"}`,
			widget: `{"type":"object","properties":{"n":{"type":"integer"}}}`, wantNames: []string{"Widget"}},
		{name: "reference to no component", version: "3.1.0", param: `{"type":"string"}`, body: `{"$ref":"#/components/schemas/"}`, widget: `{}`,
			wantErr: `$ref "#/components/schemas/"`},
		{"3.0 boolean bounds and nullable", "3.0.3", `{"type":"integer","minimum":1,"exclusiveMinimum":true}`, `{"$ref":"#/components/schemas/Widget"}`,
			`{"type":"object","nullable":true,"properties":{"n":{"type":"number","maximum":9,"exclusiveMaximum":false}},"discriminator":{"propertyName":"n"},"example":{"n":1}}`, "", "", nil},
		{"3.1 type list and numeric bound", "3.1.0", `{"type":["string","null"]}`, `{"$ref":"#/components/schemas/Widget"}`,
			`{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}},"$defs":{"x":{"type":"string"}}}`, "", "", nil},
		{"3.1 boolean bound", "3.1.0", `{"type":"integer","exclusiveMinimum":true}`, `{"type":"object"}`, `{}`, `the parameter "id", whose schema`, "", nil},
		{"parameter type not a string", "3.0.3", `{"type":5}`, `{"type":"object"}`, `{}`, `the parameter "id", whose schema`, "", nil},
		{"body properties not an object", "3.1.0", `{"type":"string"}`, `{"type":"object","properties":"n"}`, `{}`, "a request body whose schema", "", nil},
		{"component required not a list", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","required":"n"}`, `the component schema "Widget"`, "", nil},
		{"nested items not a schema", "3.0.3", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","properties":{"l":{"type":"array","items":1}}}`, `the component schema "Widget"`, "", nil},
		{"ref outside components", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","properties":{"o":{"$ref":"#/definitions/o"}}}`, `$ref "#/definitions/o"`, "", nil},
		{"ref to another component", "3.0.3", `{"$ref":"#/components/parameters/id"}`, `{"type":"object"}`, `{}`, `$ref "#/components/parameters/id"`, "", nil},
		{"ref to a missing schema", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Gone"}`, `{}`, `the schema "Gone", which its components do not define`, "", nil},
	}
	var db transport.DestinationsBuilder
	db.Prefix("https://shop.example/api")
	dest := db.Build()
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"openapi":%q,"info":{"title":"Shop API","version":"1"},"servers":[{"url":"/api"}],
"components":{"schemas":{"Widget":%s%s}},
"paths":{"/widgets/{id}":{"put":{"operationId":"putWidget","parameters":[{"name":"id","in":"path","required":true,"schema":%s}],
"requestBody":{"content":{"application/json":{"schema":%s}}},"responses":{"200":{"description":"ok"}}}}}}`, tc.version, tc.widget, tc.more, tc.param, tc.body)
			d, err := apis.ParseOpenAPI(ctx, "https://shop.example/api/openapi.json", []byte(doc), dest)
			if err != nil {
				t.Fatal(err)
			}
			det, err := d.Detail(ctx, "putWidget")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "":
				if det.Operation.ID != "putWidget" {
					t.Fatalf("detail %+v", det)
				}
				if tc.wantNames != nil && !slices.Equal(det.SchemaNames, tc.wantNames) {
					t.Fatalf("schemas %q, want %q", det.SchemaNames, tc.wantNames)
				}
			case err == nil:
				t.Fatalf("described; want an error naming %s", tc.wantErr)
			case !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"putWidget"`) || !strings.Contains(err.Error(), "the Company must fix its description"):
				t.Fatalf("error %q, want one naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestDetailAfterCancel: a description cut short by its caller's cancellation is not kept as the
// operation's detail; the next call describes it.
func TestDetailAfterCancel(t *testing.T) {
	doc := `{"openapi":"3.1.0","info":{"title":"Shop API","version":"1"},"servers":[{"url":"/api"}],
"components":{"schemas":{"Widget":{"type":"object"}}},
"paths":{"/widgets":{"post":{"operationId":"postWidget","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Widget"}}}},"responses":{"200":{"description":"ok"}}}}}}`
	var db transport.DestinationsBuilder
	db.Prefix("https://shop.example/api")
	d, err := apis.ParseOpenAPI(context.Background(), "https://shop.example/api/openapi.json", []byte(doc), db.Build())
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Detail(cancelled, "postWidget"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
	det, err := d.Detail(context.Background(), "postWidget")
	if err != nil || !slices.Equal(det.SchemaNames, []string{"Widget"}) {
		t.Fatalf("after a cancelled call: %v, %+v", err, det)
	}
}
