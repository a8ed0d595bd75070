package identity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Export writes agent.json (the client metadata document) and jwks.json (the public key set)
// into dir, for the User to publish at client_id and jwks_uri (spec 4.1), and logo.png when
// logo_uri is the default one next to client_id. It returns the paths written. The files
// contain no secret.
func (a *Agent) Export(ctx context.Context, dir string) ([]string, error) {
	meta, err := a.MetadataJSON()
	if err != nil {
		return nil, err
	}
	jwks, err := a.JWKSJSON(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output folder: %w", err)
	}
	var written []string
	for _, f := range []struct {
		name string
		data []byte
	}{{"agent.json", append(meta, '\n')}, {"jwks.json", append(jwks, '\n')}, {"logo.png", logoPNG()}} {
		if f.name == "logo.png" && !a.defaultLogo {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return written, fmt.Errorf("writing %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}
