package apis_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

var benchDoc = []byte(`{"openapi":"3.1.0","info":{"title":"Shop API","version":"1"},"servers":[{"url":"/api"}],
"components":{"securitySchemes":{"shop":{"type":"oauth2","flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize","tokenUrl":"https://a/token","scopes":{"orders:read":"Read","orders:write":"Write"}}}}}},
"paths":{"/orders":{"get":{"operationId":"listOrders","security":[{"shop":["orders:read"]}],"responses":{"200":{"description":"ok"}}}},
"/orders/{id}":{"get":{"operationId":"getOrder","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"security":[{"shop":["orders:read"]}],"responses":{"200":{"description":"ok"}}}},
"/orders/{id}/exchanges":{"post":{"operationId":"exchangeItem","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"security":[{"shop":["orders:write"]}],
"requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","properties":{"item_id":{"type":"string"},"replacement_sku":{"type":"string"}}}}}},"responses":{"201":{"description":"ok"}}}}}}`)

// BenchmarkParseOpenAPI reads a description with kin-openapi and lists its operations, against
// the baseline of a plain encoding/json decode of the same bytes.
func BenchmarkParseOpenAPI(b *testing.B) {
	var db transport.DestinationsBuilder
	db.Prefix("https://shop.example/api")
	dest := db.Build()
	ctx := context.Background()
	benchratio.Run(b, "ParseOpenAPI", "json.Unmarshal", func(b *testing.B) {
		if _, err := apis.ParseOpenAPI(ctx, "https://shop.example/api/openapi.json", benchDoc, dest); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		var v map[string]any
		if err := json.Unmarshal(benchDoc, &v); err != nil {
			b.Fatal(err)
		}
	})
}
