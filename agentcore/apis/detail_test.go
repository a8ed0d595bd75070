package apis_test

import (
	"context"
	"fmt"
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
	}{
		{"plain", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","properties":{"n":{"type":"integer"}}}`, ""},
		{"3.0 boolean bounds and nullable", "3.0.3", `{"type":"integer","minimum":1,"exclusiveMinimum":true}`, `{"$ref":"#/components/schemas/Widget"}`,
			`{"type":"object","nullable":true,"properties":{"n":{"type":"number","maximum":9,"exclusiveMaximum":false}},"discriminator":{"propertyName":"n"},"example":{"n":1}}`, ""},
		{"3.1 type list and numeric bound", "3.1.0", `{"type":["string","null"]}`, `{"$ref":"#/components/schemas/Widget"}`,
			`{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}},"$defs":{"x":{"type":"string"}}}`, ""},
		{"3.1 boolean bound", "3.1.0", `{"type":"integer","exclusiveMinimum":true}`, `{"type":"object"}`, `{}`, `the parameter "id", whose schema`},
		{"parameter type not a string", "3.0.3", `{"type":5}`, `{"type":"object"}`, `{}`, `the parameter "id", whose schema`},
		{"body properties not an object", "3.1.0", `{"type":"string"}`, `{"type":"object","properties":"n"}`, `{}`, "a request body whose schema"},
		{"component required not a list", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","required":"n"}`, `the component schema "Widget"`},
		{"nested items not a schema", "3.0.3", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","properties":{"l":{"type":"array","items":1}}}`, `the component schema "Widget"`},
		{"ref outside components", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Widget"}`, `{"type":"object","properties":{"o":{"$ref":"#/definitions/o"}}}`, `$ref "#/definitions/o"`},
		{"ref to another component", "3.0.3", `{"$ref":"#/components/parameters/id"}`, `{"type":"object"}`, `{}`, `$ref "#/components/parameters/id"`},
		{"ref to a missing schema", "3.1.0", `{"type":"string"}`, `{"$ref":"#/components/schemas/Gone"}`, `{}`, `the schema "Gone", which its components do not define`},
	}
	var db transport.DestinationsBuilder
	db.Prefix("https://shop.example/api")
	dest := db.Build()
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"openapi":%q,"info":{"title":"Shop API","version":"1"},"servers":[{"url":"/api"}],
"components":{"schemas":{"Widget":%s}},
"paths":{"/widgets/{id}":{"put":{"operationId":"putWidget","parameters":[{"name":"id","in":"path","required":true,"schema":%s}],
"requestBody":{"content":{"application/json":{"schema":%s}}},"responses":{"200":{"description":"ok"}}}}}}`, tc.version, tc.widget, tc.param, tc.body)
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
			case err == nil:
				t.Fatalf("described; want an error naming %s", tc.wantErr)
			case !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"putWidget"`) || !strings.Contains(err.Error(), "the Company must fix its description"):
				t.Fatalf("error %q, want one naming %s", err, tc.wantErr)
			}
		})
	}
}
