// Package webbridge serves the Poppydesk window's frontend over HTTP on 127.0.0.1 with the same
// Go services the desktop window binds, so that the real frontend can be driven by a headless
// Chromium in end-to-end tests (the "browser-testable mode").
//
// The page gets /bridge/shim.js, a small script (a file, so the strict Content-Security-Policy
// holds) that defines what Wails defines in the desktop window: window.go.<package>.<Struct>.
// <Method>(...) returning promises, and window.runtime.EventsOn / EventsOnMultiple / EventsOnce /
// EventsOff / EventsEmit. Calls go to POST /bridge/call, which calls the exported methods of the
// registered structs by reflection with the same rules as Wails (JSON arguments; results T,
// (T, error) or error); events from Go arrive over server-sent events on /bridge/events. The
// frontend does not know which of the two it runs in.
//
// The bridge can call every method the window can, so it is guarded like the window:
//
//   - It listens only on 127.0.0.1, on a port chosen at start.
//   - A random one-time first-load token (256 bits) must be presented as ?token= on the first
//     page load; it is traded once for a separate random cookie value (HttpOnly,
//     SameSite=Strict) and the server redirects to the same URL without it; presenting the token
//     again is refused. Every later request, including each bridge call, must carry the cookie.
//     Secrets are compared in constant time.
//   - Any request whose Host header is not exactly 127.0.0.1:PORT, or whose Origin header (when
//     present) is not exactly http://127.0.0.1:PORT, or whose Sec-Fetch-Site says cross-site
//     or same-site, is refused (DNS rebinding and cross-site requests).
//   - Bridge calls must be POST with Content-Type application/json, so a cross-origin page
//     cannot send one without a CORS preflight, which is never answered.
//   - Every response carries the window's Content-Security-Policy and nosniff headers.
//
// The package is compiled into development and test builds only: the poppydesk command imports
// it from a file with the build constraint !production, and `wails build` adds the production
// tag, so release binaries have no code that could open it.
package webbridge
