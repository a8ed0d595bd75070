// Package csp holds the window's Content-Security-Policy and the other security headers every
// response to the window carries, shared by the Wails asset server and the browser-testable
// bridge (docs/DESIGN.md invariant 4: no remote loads, no inline script, no eval).
package csp

import "net/http"

// Policy is the window's Content-Security-Policy. frontend/index.html carries the same policy
// in a meta tag without frame-ancestors (which browsers ignore in meta tags).
const Policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// Middleware adds the headers of [SetHeaders] to every response of next (used for the Wails
// asset server).
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

// DevPolicy is Policy with inline styles allowed, for the Vite dev server under `wails dev`
// only (it injects CSS as <style> elements). Release builds never use it.
const DevPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// DevMiddleware is Middleware with [DevPolicy].
func DevMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		w.Header().Set("Content-Security-Policy", DevPolicy)
		next.ServeHTTP(w, r)
	})
}

// SetHeaders sets the policy and the headers that go with it on h.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", Policy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}
