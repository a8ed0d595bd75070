// Package fronts holds the window's services: the structs Wails binds to the window (and, in
// development builds, the browser-testable bridge in app/webbridge binds the same way), whose
// exported methods the frontend calls through frontend/src/api/. The package's name is the
// namespace of the generated bindings (frontend/wailsjs/go/fronts, fronts.ApprovalItem in
// models.ts, window.go.fronts at run time).
//
// Each service (Shell, Approvals, SignIn, Companies, Conversations, Browser, Activity, Inspector,
// Settings; [Services]) holds only the *app.Host and is a thin view over it: an exported method
// converts its arguments, calls the Host or one of its parts through an exported accessor, and
// converts the result into the JSON types the window shows, with Company text made visible
// (operations.Visible) and times as RFC 3339 text. What lasts or runs — lists, badges, sign-in
// flows, background reads, the demo — belongs to the Host (package app); nothing here keeps state,
// so [New] may be called any number of times over one Host. [Services.Attach] passes the Host's
// events to the window with their data converted the same way.
//
// The window is the only place where a decision is taken (docs/DESIGN.md "Trust boundaries";
// spec 10.1 "Text from a Company is never the User's approval or consent"): Approvals.Approve
// and Decline, SignIn.StartDirect and StartDevice, Conversations.AcceptUserRequest are the user's
// gestures and are reachable from the window only. So only structs meant to be called by the
// window are bound, every exported method of a bound struct is callable from it, and only the
// command layer (app/cli) builds them (app/deps_test.go).
package fronts
