package inspect_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkDecoder measures what the exchange log's writer pays to decode and encode a signed
// request's details (a Session JWT with its delegation, an access token), with a Decoder that has
// seen the Session before, against decoding it afresh (Pending.Details), in CPU time.
func BenchmarkDecoder(b *testing.B) {
	x := newSignedExchanges(b)
	ctx := inspect.WithCause(context.Background(), inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	p := inspect.Defer(ctx, x.req, nil, http.Header{"Content-Type": {"application/json"}}, nil).(*inspect.Pending)
	var dec inspect.Decoder
	benchratio.RunCPU(b, "decoder", "fresh",
		func(b *testing.B) { dec.Details(p).Marshal() },
		func(b *testing.B) { p.Details().Marshal() })
}
