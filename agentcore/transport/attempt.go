package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// build is step 3 of Send: the HTTP request of one attempt, built from the URL step 1 checked
// (no second parse), with Poppy-Version and Poppy-Extensions (spec 3.4), the token (Bearer, or
// DPoP with a fresh proof through Hooks.Authorize; spec 4.5, RFC 9449) and, last, a fresh
// Session JWT whose ath covers that token (spec 5.2). Its context bounds the exchange (cancel).
func (c *SessionClient) build(ctx context.Context, a *attempt) (*http.Request, context.CancelFunc, error) {
	c.mu.Lock()
	signer, version, exts := c.signer, c.version, c.exts
	c.mu.Unlock()
	var cancel context.CancelFunc
	if a.req.Stream {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithTimeout(ctx, c.t.cfg.Timeout)
	}
	req := a.req
	hr := (&http.Request{Method: methodOf(req.Method), URL: a.u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, len(req.Header)+4), Host: a.u.Host}).WithContext(ctx)
	if req.Body != nil {
		hr.Body, hr.ContentLength = io.NopCloser(bytes.NewReader(req.Body)), int64(len(req.Body))
		if len(req.Body) == 0 {
			hr.Body = http.NoBody
		}
	}
	// No automatic replay by net/http with the same single-use Session JWT (spec 5.2): GetBody
	// stays nil, so only this pipeline decides to send again, each attempt freshly signed.
	for k, vs := range req.Header {
		hr.Header[k] = vs
	}
	// One-element slices made once per value: net/http only reads them, and a signer replaces
	// them rather than changing them.
	hr.Header["Poppy-Version"] = c.headerValue(version)
	if exts != "" {
		hr.Header["Poppy-Extensions"] = c.headerValue(exts)
	} else {
		delete(hr.Header, "Poppy-Extensions")
	}
	hr.Header.Del("Authorization")
	hr.Header.Del("DPoP")
	switch {
	case a.token != "" && c.hooks.Authorize != nil:
		if err := c.hooks.Authorize(ctx, hr, a.token); err != nil {
			cancel()
			return nil, nil, fmt.Errorf("transport: putting the access token on %s %s failed: %w", hr.Method, redact.URL(a.u), err)
		}
	case a.token != "":
		hr.Header.Set("Authorization", "Bearer "+a.token)
	}
	if err := signer.SignRequest(ctx, hr, a.token); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("transport: signing the Session header of %s %s failed: %w", hr.Method, redact.URL(a.u), err)
	}
	return hr, cancel, nil
}

// exchange is step 4 of Send: one HTTP exchange through the guard (HTTPS only, the address
// policy, observed), not through an http.Client: the pipeline follows no redirect and bounds the
// exchange itself, so the Client's redirect machinery and header copies would only cost time on
// every signed request. Without Request.Stream the attempt's context bounds the whole exchange,
// body included, by Config.Timeout; with it, a timer bounds the wait for the headers and the
// body streams under the caller's context. Closing the body ends the attempt's context.
func (c *SessionClient) exchange(ctx context.Context, hr *http.Request, cancel context.CancelFunc, a *attempt) (*http.Response, error) {
	limit := c.t.cfg.Timeout
	var headers *time.Timer
	if a.req.Stream {
		headers = time.AfterFunc(limit, cancel)
	}
	resp, err := c.t.guard.roundTrip(hr, a.req.Body)
	headersLate := headers != nil && !headers.Stop() && ctx.Err() == nil
	switch {
	case headersLate:
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &TimeoutError{URL: redact.URL(a.u), Limit: limit}
	case err != nil:
		cancel()
		if !a.req.Stream && ctx.Err() == nil && errors.Is(hr.Context().Err(), context.DeadlineExceeded) {
			return nil, &TimeoutError{URL: redact.URL(a.u), Limit: limit}
		}
		return nil, &url.Error{Op: urlOp(hr.Method), URL: redact.URL(a.u), Err: err}
	}
	body := &cancelBody{ReadCloser: resp.Body, ctx: hr.Context(), cancel: cancel, url: a.u, limit: limit}
	if a.req.Stream {
		body.limit = 0 // the caller's bound, not the pipeline's
	}
	resp.Body = body
	return resp, nil
}

func methodOf(m string) string {
	if m == "" {
		return http.MethodGet
	}
	return m
}

// urlOp is the Op of a *url.Error for method, as net/http.Client writes it ("Get", "Post").
func urlOp(method string) string {
	return method[:1] + strings.ToLower(method[1:])
}

// cancelBody ends an attempt's context when its response body is closed, and reports a body cut
// by the end of the exchange's deadline as a *TimeoutError (limit > 0), or by the caller's
// context as its error: net/http may report such a cut as io.EOF, which would pass a truncated
// body for a complete one.
type cancelBody struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
	url    *url.URL
	limit  time.Duration
}

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ctx.Err() != nil {
		if b.limit > 0 && errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
			return n, &TimeoutError{URL: redact.URL(b.url), Limit: b.limit}
		}
		return n, b.ctx.Err()
	}
	return n, err
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// drain reads what is left of an answer the caller does not read (a little of it, so the
// connection can serve the next request) and closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}
