package webbridge

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed shim.js
var shimTemplate string

// buildShim fills the manifest of bound methods into the shim. The manifest is JSON, which is
// a valid JavaScript literal; names are Go identifiers, so nothing needs escaping.
func buildShim(manifest map[string]map[string][]string) ([]byte, error) {
	b, err := json.Marshal(manifest)
	if err != nil {
		return nil, fmt.Errorf("encoding the bridge manifest failed: %w", err)
	}
	const marker = "/*MANIFEST*/{}"
	if !strings.Contains(shimTemplate, marker) {
		return nil, fmt.Errorf("the bridge shim template has no manifest marker")
	}
	return []byte(strings.Replace(shimTemplate, marker, string(b), 1)), nil
}
