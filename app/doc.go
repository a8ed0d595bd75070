// Package app is the running Poppydesk: the [Host] ([New] builds it; host.go is the composition
// root) and everything that lasts or runs for the window and the model. The window's services,
// bound to the window by Wails (and, in development builds, by the browser-testable bridge in
// [app/webbridge]), live apart in [app/fronts]: thin views over the Host, which this package does
// not import.
//
// The Host owns the state database, the secrets, the identity, the engine with its sign-in
// layer, the approval queue, the conversations, the controlled browsers and the model's MCP
// server, and exports what the window's services need as a small API, in files named for it: the
// sign-ins the user started (host_signin.go), the approval lists, badge and notifications
// (host_approvals.go, host_attention.go), the Companies with their accounts and excluded tasks
// and forgetting one (host_companies.go), which Companies the user can talk with
// (host_conversations.go), what the model's browser showed (host_browser.go), the exchange log and
// findings (host_inspector.go), the window's settings, Reset everything and the status line
// (host_window.go), developer mode (host_devmode.go), the identity (host_operator.go), and the
// demo with its example agent (demo.go). No protocol logic lives here (it lives in agentcore/).
// The Host announces changes on its [Relay] (the Event constants), with its own values.
//
// When the Host cannot act ([Host.Refusal]) it says why with a [Problem]: no keyring, a locked
// keyring, no identity, Reset everything ran, or a service belongs to no Host; every service
// answers with the Problem's words. Other errors that double as people's words are [Error]
// values: what failed, the cause, and what to do.
//
// The package also holds the application's lifecycle pieces, which have no Wails dependency:
//
//   - [Paths]: per-user directories (XDG Base Directory specification on Linux).
//   - [RotatingFile] and [NewLogger]: JSON logs with secrets masked by agentcore/redact
//     (docs/DESIGN.md invariant 5, spec 10.2), in a file rotated by size (5 MB, 3 old files). The
//     writer is hand-written (about 80 lines) because only size rotation is needed and a small
//     dependency-free writer is easier to audit than a general logging library.
//   - [Lifecycle]: the root context, cancelled on shutdown, and the in-flight work it waits for.
//   - [Emitter] and [Relay]: how the Host pushes events to the window, the same under Wails
//     (runtime.EventsEmit) and under the bridge (server-sent events).
package app
