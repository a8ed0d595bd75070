// Package app is the running Poppydesk: the [Host] ([New] builds it; host.go is the composition
// root) and the services the window talks to, bound to the window by Wails (and, in development
// builds, by the browser-testable bridge in [app/webbridge]).
//
// The window's services ([Fronts]: Shell, Approvals, SignIn, Companies, Conversations, Browser,
// Activity) are views over the Host: each holds only the *Host, and each exported method
// converts its arguments, calls the Host or one of its parts (the engine, the sign-in layer, the
// approval queue, the conversation manager…), and converts the result into values the window
// shows. What lasts and what runs belongs to the Host, in files named for it: the sign-ins the
// user started (host_signin.go), the approval badge and notifications (host_approvals.go), what
// the model's browser showed (host_browser.go), the demo and its example agent (demo.go),
// forgetting a Company ([Host.ForgetCompany]). When the engine does not run ([Host.Problem]),
// every service answers with the Problem's words. No service holds protocol logic (that lives in
// agentcore/). The window is the only place where a decision is taken (docs/DESIGN.md "Trust
// boundaries"; spec 10.1 "Text from a Company is never the User's approval or consent"), so only
// structs meant to be called by the window are bound, and every exported method of a bound struct
// is callable from it.
//
// The package also holds the application's lifecycle pieces, which have no Wails dependency:
//
//   - [Paths]: per-user directories (XDG Base Directory specification on Linux).
//   - [RotatingFile] and [NewLogger]: JSON logs with secrets masked by agentcore/redact
//     (docs/DESIGN.md invariant 5, spec 10.2), in a file rotated by size (5 MB, 3 old files). The
//     writer is hand-written (about 80 lines) because only size rotation is needed and a small
//     dependency-free writer is easier to audit than a general logging library.
//   - [Lifecycle]: the root context, cancelled on shutdown, and the in-flight work it waits for.
//   - [Emitter]: how services push events to the window, the same under Wails
//     (runtime.EventsEmit) and under the bridge (server-sent events).
package app
