package inspect

import (
	"context"
	"log/slog"
	"net/http"
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
// cause from ctx and a copy of the request's method, URL and header; the bodies and the
// response's header as given, which nothing changes after the exchange is reported).
func Defer(ctx context.Context, req *http.Request, reqBody []byte, respHeader http.Header, respBody []byte) any {
	p := &Pending{reqBody: reqBody, respHeader: respHeader, respBody: respBody}
	p.cause, p.hasCause = CauseOf(ctx)
	p.req = &http.Request{Method: req.Method, URL: req.URL, Header: req.Header.Clone(), Host: req.Host}
	return p
}

// Details decodes the exchange as [Decode] does (nil when there is nothing to keep). It only
// reads p, so observers may call it concurrently.
func (p *Pending) Details() *Details {
	if p == nil || p.req == nil {
		return nil
	}
	return decode(p.cause, p.hasCause, p.req, p.reqBody, p.respHeader, p.respBody)
}

// String hides the raw material.
func (p *Pending) String() string { return "inspect.Pending(not decoded yet)" }

// GoString: see String.
func (p *Pending) GoString() string { return p.String() }

// LogValue: see String.
func (p *Pending) LogValue() slog.Value { return slog.StringValue(p.String()) }
