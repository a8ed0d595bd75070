package app

// Company and operator logos, fetched by Poppydesk itself for the window.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Logo returns the logo at logoURI (a Company's organization.logo_uri, spec 3.1) as a data: URL
// the window may show, fetched through the engine's transport; an error when it cannot be
// shown, and then the window shows its placeholder.
func (h *Host) Logo(ctx context.Context, logoURI string) (string, error) {
	if h == nil || h.logo == nil {
		return "", errors.New("no logo is fetched while the engine does not run")
	}
	return h.logo.Fetch(ctx, logoURI)
}

// logoFetcher turns a Company's logo_uri into a data: URL the window may show. The window's
// Content-Security-Policy forbids remote loads (docs/DESIGN.md invariant 4), so Poppydesk fetches the
// logo itself through the engine's safe transport (HTTPS only, address policy, no redirects:
// spec 3) and passes the bytes. Only raster images are accepted (PNG, JPEG, GIF, WebP, checked
// by both Content-Type and content sniffing), up to maxLogoBytes; SVG is refused because it is
// a document that can reference other resources. Anything else leaves the placeholder.
// Results (and failures) are cached per URL for the run.
type logoFetcher struct {
	client *http.Client
	mu     sync.Mutex
	cache  map[string]logoResult
}

type logoResult struct {
	url string
	err error
}

// maxLogoBytes bounds a logo.
const maxLogoBytes = 256 << 10

// newLogoFetcher returns a logoFetcher over client (transport.Transport's NoRedirectClient).
func newLogoFetcher(client *http.Client) *logoFetcher {
	return &logoFetcher{client: client, cache: map[string]logoResult{}}
}

var logoTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Fetch returns the logo at logoURI as a data: URL.
func (l *logoFetcher) Fetch(ctx context.Context, logoURI string) (string, error) {
	l.mu.Lock()
	r, ok := l.cache[logoURI]
	l.mu.Unlock()
	if ok {
		return r.url, r.err
	}
	u, err := l.fetch(ctx, logoURI)
	if ctx.Err() == nil {
		l.mu.Lock()
		l.cache[logoURI] = logoResult{u, err}
		l.mu.Unlock()
	}
	return u, err
}

func (l *logoFetcher) fetch(ctx context.Context, logoURI string) (string, error) {
	u, err := transport.CheckURL(logoURI)
	if err != nil {
		return "", fmt.Errorf("logo_uri is not an HTTPS URL (spec 3.1): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", strings.Join(logoTypes, ", "))
	resp, err := l.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetching the logo failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the logo answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLogoBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the logo failed: %w", err)
	}
	if len(body) > maxLogoBytes {
		return "", fmt.Errorf("the logo is larger than %d bytes", maxLogoBytes)
	}
	declared, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sniffed := http.DetectContentType(body)
	if !slices.Contains(logoTypes, declared) || sniffed != declared {
		return "", fmt.Errorf("the logo is not a PNG, JPEG, GIF or WebP image (declared %q, content looks like %q)", declared, sniffed)
	}
	var b bytes.Buffer
	b.WriteString("data:" + declared + ";base64,")
	b.WriteString(base64.StdEncoding.EncodeToString(body))
	return b.String(), nil
}
