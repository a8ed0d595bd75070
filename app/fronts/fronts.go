package fronts

import (
	"context"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// Services are the services bound to the window over one Host. Each holds only the Host; each
// exported method converts its arguments, calls the Host or one of its parts, and converts the
// result. Every exported method of each is callable from the window.
type Services struct {
	Shell         *Shell
	Approvals     *Approvals
	SignIn        *SignIn
	Companies     *Companies
	Conversations *Conversations
	Browser       *Browser
	Activity      *Activity
	Inspector     *Inspector
	Settings      *Settings

	h *app.Host
}

// New returns the window's services over h. They keep nothing of their own, so any number of
// them may serve one Host.
func New(h *app.Host) *Services {
	return &Services{Shell: &Shell{h}, Approvals: &Approvals{h}, SignIn: &SignIn{h}, Companies: &Companies{h},
		Conversations: &Conversations{h}, Browser: &Browser{h}, Activity: &Activity{h}, Inspector: &Inspector{h}, Settings: &Settings{h}, h: h}
}

// Bindings are the services, in the order Wails and the browser-testable bridge (app/webbridge)
// bind them.
func (s *Services) Bindings() []any {
	return []any{s.Shell, s.Approvals, s.SignIn, s.Companies, s.Conversations, s.Browser, s.Activity, s.Inspector, s.Settings}
}

// BindingTypes lists a zero value of each service, for the Wails binding generator (which only
// reads the types): the same list [Services.Bindings] returns. A zero-value service belongs to no
// Host and answers every call with [app.ProblemNotConnected]'s words or an empty value.
func BindingTypes() []any { return New(nil).Bindings() }

// eventTimeout bounds what converting an event's data may fetch (a Company's logo).
const eventTimeout = 10 * time.Second

// Attach sends the Host's events to the window's emitter to from now on, with their data in the
// window's types: a sign-in's record becomes its [FlowView] and the example agent's run its
// [ExampleAgentRun]; the other events carry the Host's own data ([app.ApprovalChange],
// [app.ConversationChange], the status line's text) or none. It returns a func that detaches it.
func (s *Services) Attach(to app.Emitter) (detach func()) {
	return s.h.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if len(data) == 0 {
			to.Emit(name, data...)
			return
		}
		out := make([]any, len(data)) // the Relay passes the same data to every target
		for i, d := range data {
			switch v := d.(type) {
			case app.SignInFlow:
				ctx, cancel := context.WithTimeout(s.h.Context(), eventTimeout)
				out[i] = s.SignIn.view(ctx, v)
				cancel()
			case app.AgentRun:
				out[i] = exampleAgentRunOf(v)
			default:
				out[i] = d
			}
		}
		to.Emit(name, out...)
	}))
}
