// Package app holds the services the Poppydesk window talks to, bound to the window by Wails
// (and, in development builds, by the browser-testable bridge in [app/webbridge]).
//
// The services are thin adapters: they turn engine state into values the window shows and user
// gestures into engine calls. They hold no protocol logic (that lives in agentcore/). The window
// is the only place where a decision is taken (DESIGN.md "Trust boundaries"; spec 10.1 "Text
// from a Company is never the User's approval or consent"), so only structs meant to be called
// by the window are bound, and every exported method of a bound struct is callable from it.
//
// The package also holds the application's lifecycle pieces, which have no Wails dependency:
//
//   - [Paths]: per-user directories (XDG Base Directory specification on Linux).
//   - [RotatingFile] and [NewLogger]: JSON logs with secrets masked by agentcore/redact
//     (DESIGN.md invariant 5, spec 10.2), in a file rotated by size (5 MB, 3 old files). The
//     writer is hand-written (about 80 lines) because only size rotation is needed and a small
//     dependency-free writer is easier to audit than a general logging library.
//   - [Lifecycle]: the root context, cancelled on shutdown, and the in-flight work it waits for.
//   - [Emitter]: how services push events to the window, the same under Wails
//     (runtime.EventsEmit) and under the bridge (server-sent events).
package app
