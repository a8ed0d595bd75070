package inspect

import "context"

// Kinds of [Cause].
const (
	CauseModel  = "model"  // a tool call of the model (agentcore/modelapi)
	CauseWindow = "window" // an action of the user in the window
	CauseEngine = "engine" // the engine's own work: start-up, resumption, refresh
	CauseCheck  = "check"  // a probe of `poppydesk check` (agentcore/conformance)
	// CauseCompany is a request a Company sent to Poppydesk: its fetch of the client metadata
	// and keys that developer mode serves on loopback (spec 4.1).
	CauseCompany = "company"
)

// Cause is what made a request: who (Kind) and what (Name, such as the tool
// "call_api_operation" or the window's "Companies.Discover"), with an optional Detail.
type Cause struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
	// Resends is the exchange of the log this request sends again, edited by a Company
	// developer in the Inspector (0 for any other request): the timeline links the two.
	Resends int64 `json:"resends,omitempty"`
}

// String is "kind: name".
func (c Cause) String() string {
	if c.Name == "" {
		return c.Kind
	}
	return c.Kind + ": " + c.Name
}

type causeKey struct{}

// WithCause returns ctx carrying c; an inner cause replaces an outer one.
func WithCause(ctx context.Context, c Cause) context.Context {
	return context.WithValue(ctx, causeKey{}, c)
}

// CauseOf returns the cause ctx carries.
func CauseOf(ctx context.Context) (Cause, bool) {
	c, ok := ctx.Value(causeKey{}).(Cause)
	return c, ok
}
