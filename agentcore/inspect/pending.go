package inspect

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
)

// Pending is an exchange's raw material for [Decode], taken on the request path and decoded
// later, off it: the engine's exchange log decodes it in its writer, so a request pays only for
// a copy of its header, not for decoding its JWTs. It holds the request as sent (tokens
// included) in memory until [Pending.Details] runs, so it never prints or logs them: its String,
// GoString and LogValue say only what it is. It must never be stored or sent anywhere as it is.
type Pending struct {
	cause      Cause
	hasCause   bool
	req        *http.Request
	reqBody    []byte
	respHeader http.Header
	respBody   []byte
}

// Defer is transport.Config.Inspect that decodes nothing yet: it returns a *Pending (the
// cause from ctx, the request's method and URL and a copy of the request headers [decode]
// reads, decodedHeaders; the bodies and the response's header as given, which nothing changes
// after the exchange is reported).
func Defer(ctx context.Context, req *http.Request, reqBody []byte, respHeader http.Header, respBody []byte) any {
	p := &Pending{reqBody: reqBody, respHeader: respHeader, respBody: respBody}
	p.cause, p.hasCause = CauseOf(ctx)
	h := make(http.Header, len(decodedHeaders))
	for _, k := range decodedHeaders {
		if vs := req.Header[k]; len(vs) > 0 {
			h[k] = slices.Clone(vs)
		}
	}
	p.req = &http.Request{Method: req.Method, URL: req.URL, Header: h, Host: req.Host}
	return p
}

// decodedHeaders are the request headers decode and ExchangeFindings read (canonical keys), the
// only ones a Pending copies.
var decodedHeaders = [...]string{"Poppy-Session", "Poppy-Extensions", "Dpop", "Authorization", "Content-Type"}

// Details decodes the exchange as [Decode] does (nil when there is nothing to keep). It only
// reads p, so observers may call it concurrently.
func (p *Pending) Details() *Details {
	var fresh *Decoder // no cache: each call decodes everything
	return fresh.Details(p)
}

// decoderCache bounds a Decoder's cache: it is emptied when it holds this many segments.
const decoderCache = 64

// Decoder decodes Pending exchanges one after another, as Pending.Details does, keeping the
// segments that repeat from request to request: the headers of the Session JWTs and DPoP proofs
// (one per Session and key) and the whole of a delegation or an access token (one per Session
// or token). The claims of a Session JWT, a DPoP proof or a client assertion (a fresh jti
// each) are decoded every time. The cache is keyed by the segment's SHA-256, so it keeps no
// token, only the decoded form that is stored anyway, and holds at most decoderCache segments.
// The Details it returns may share maps with each other: read them (marshal them), never change
// them. A Decoder is for one goroutine; its zero value is ready.
type Decoder struct {
	segs map[[32]byte]*segment
}

// Details decodes p (nil when there is nothing to keep); a nil dec decodes every segment afresh.
func (dec *Decoder) Details(p *Pending) *Details {
	if p == nil || p.req == nil {
		return nil
	}
	return decode(dec, p.cause, p.hasCause, p.req, p.reqBody, p.respHeader, p.respBody)
}

// String hides the raw material.
func (p *Pending) String() string { return "inspect.Pending(not decoded yet)" }

// GoString: see String.
func (p *Pending) GoString() string { return p.String() }

// LogValue: see String.
func (p *Pending) LogValue() slog.Value { return slog.StringValue(p.String()) }
