package identity

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
)

// Handler serves the client metadata document at client_id's path, the JWKS at jwks_uri's path
// and, when logo_uri is on the same host, a logo at its path (spec 4.1). It is used by the demo
// and tests (host agent.localhost on the reference Company's listener); a real deployment
// publishes the files written by `poppydesk identity export`. Routing by host is the caller's job.
func (a *Agent) Handler(log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	paths := map[string]string{}
	if u, err := url.Parse(a.meta.ClientID); err == nil {
		paths[u.EscapedPath()] = "metadata"
	}
	if u, err := url.Parse(a.meta.JWKSURI); err == nil {
		paths[u.EscapedPath()] = "jwks"
	}
	cid, _ := url.Parse(a.meta.ClientID)
	if u, err := url.Parse(a.meta.LogoURI); err == nil && cid != nil && u.Host == cid.Host {
		if _, taken := paths[u.EscapedPath()]; !taken {
			paths[u.EscapedPath()] = "logo"
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what, ok := paths[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET and HEAD are allowed here", http.StatusMethodNotAllowed)
			return
		}
		var body []byte
		var err error
		ctype := "application/json"
		switch what {
		case "metadata":
			body, err = a.MetadataJSON()
		case "jwks":
			body, err = a.JWKSJSON(r.Context())
		case "logo":
			body, ctype = logoPNG(), "image/png"
		}
		if err != nil {
			log.ErrorContext(r.Context(), "identity: cannot serve "+what, "err", err)
			http.Error(w, "the Personal Agent's keys are not available right now", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

var logoOnce = sync.OnceValue(func() []byte {
	// A 64×64 poppy-red disc on transparent ground: a real PNG, generated so the repository
	// needs no binary asset.
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			dx, dy := x-32, y-32
			if dx*dx+dy*dy <= 28*28 {
				img.Set(x, y, color.NRGBA{R: 0xe2, G: 0x2b, B: 0x2b, A: 0xff})
			}
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
})

func logoPNG() []byte { return logoOnce() }

// DefaultLogoPNG is the logo published at logo_uri when no other is configured: a 64×64 PNG.
func DefaultLogoPNG() []byte { return append([]byte(nil), logoOnce()...) }
