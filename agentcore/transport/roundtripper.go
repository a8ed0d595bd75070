package transport

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxRoundTripBody bounds the body of a request given to RoundTripper: it is read whole, once,
// so that each attempt can send it again.
const MaxRoundTripBody = 4 << 20

// RoundTripper is the pipeline (Send) as an http.RoundTripper, for a client that builds its own
// requests: the official MCP SDK's Streamable HTTP client (agentcore/apis). Each request it is
// given is one Send, so every attempt is checked and freshly signed, and the pipeline's policy
// for each answer applies (refresh, DPoP nonce, 429, session_ended, version_unsupported). The
// request's body is read once and each attempt is a new request without GetBody, so net/http
// never replays a single-use Session JWT. The headers wait at most Config.Timeout and the body
// streams for as long as the request's context allows (Request.Stream). A refusal at the
// Company's door (ProtocolError.Refused) comes back as the error; the client reads any other
// error status itself (a JSON-RPC error, an MCP session the server no longer knows).
func (c *SessionClient) RoundTripper() http.RoundTripper { return roundTripper{c} }

type roundTripper struct{ c *SessionClient }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxRoundTripBody+1))
		req.Body.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("transport: reading the body of %s %s failed: %w", req.Method, req.URL.Redacted(), err)
		case len(b) > MaxRoundTripBody:
			return nil, fmt.Errorf("transport: the body of %s %s is larger than %d bytes", req.Method, req.URL.Redacted(), MaxRoundTripBody)
		}
		body = b
	}
	resp, err := rt.c.Send(req.Context(), &Request{Method: req.Method, URL: req.URL.String(), Header: req.Header, Body: body, Stream: true})
	var pe *ProtocolError
	switch {
	case err == nil:
		return resp.Response, nil
	case resp != nil && errors.As(err, &pe) && !pe.Refused():
		return resp.Response, nil
	case resp != nil:
		drain(resp.Response)
	}
	return nil, err
}
