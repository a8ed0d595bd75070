package inspect

import (
	"context"
	"encoding/json"
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
// them. [Decoder.Encode] keeps the JSON encoding of the segments it keeps as well, so that what
// repeats is neither decoded nor encoded again. A Decoder is for one goroutine; its zero value
// is ready.
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

// Encode is dec.Details(p).Marshal(), byte for byte, with the encoding of the segments dec keeps
// made once (nil when there is nothing to keep).
func (dec *Decoder) Encode(p *Pending) json.RawMessage {
	d := dec.Details(p)
	if d.Empty() {
		return nil
	}
	b, err := appendDetails(make([]byte, 0, 2048), d)
	if err != nil {
		return d.Marshal()
	}
	return b
}

// appendDetails appends d's JSON as json.Marshal writes it (the fields of Details and Token in
// order, empty ones left out as their omitempty says), taking a token's kept segments' encodings
// as they are.
func appendDetails(b []byte, d *Details) ([]byte, error) {
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	value := func(v any) error {
		enc, err := json.Marshal(v)
		b = append(b, enc...)
		return err
	}
	if d.Cause != nil {
		field("cause")
		if err := value(d.Cause); err != nil {
			return nil, err
		}
	}
	if d.SID != "" {
		field("sid")
		if err := value(d.SID); err != nil {
			return nil, err
		}
	}
	if len(d.Tokens) > 0 {
		field("tokens")
		b = append(b, '[')
		for i, t := range d.Tokens {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendToken(b, &t); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(d.Findings) > 0 {
		field("findings")
		if err := value(d.Findings); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendToken appends t's JSON as json.Marshal writes it.
func appendToken(b []byte, t *Token) ([]byte, error) {
	where, err := json.Marshal(t.Where)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `{"where":`...), where...)
	for _, f := range []struct {
		name string
		m    map[string]any
		kept *segment
	}{{`,"header":`, t.Header, t.header}, {`,"claims":`, t.Claims, t.claims}} {
		if len(f.m) == 0 {
			continue
		}
		var enc []byte
		if f.kept != nil {
			enc = f.kept.json()
		}
		if enc == nil {
			if enc, err = json.Marshal(f.m); err != nil {
				return nil, err
			}
		}
		b = append(append(b, f.name...), enc...)
	}
	if t.Note != "" {
		note, err := json.Marshal(t.Note)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"note":`...), note...)
	}
	return append(b, '}'), nil
}

// String hides the raw material.
func (p *Pending) String() string { return "inspect.Pending(not decoded yet)" }

// GoString: see String.
func (p *Pending) GoString() string { return p.String() }

// LogValue: see String.
func (p *Pending) LogValue() slog.Value { return slog.StringValue(p.String()) }
