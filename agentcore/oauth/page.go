package oauth

import (
	"html/template"
	"net/http"
)

type pageKind int

const (
	pageSuccess pageKind = iota
	pageDeclined
	pageFailed
	pageExpired
	// pageStray answers a loopback request that is not the sign-in's answer (no or another
	// state): the sign-in goes on.
	pageStray
)

// The loopback page (spec 4.2): plain words, no code, no token, no script, a strict CSP.
var loopbackPage = template.Must(template.New("p").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Poppydesk sign-in</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}</style></head>
<body><h1>{{.Title}}</h1><p id="message">{{.Message}}</p><p>You can close this tab.</p></body></html>
`))

func writePage(w http.ResponseWriter, status int, kind pageKind, org, why string) {
	var title, msg string
	switch kind {
	case pageSuccess:
		title, msg = "Sign-in finished", "You signed in to "+org+". Poppydesk has what it needs; return to Poppydesk."
	case pageDeclined:
		title, msg = "Sign-in declined", "You declined the sign-in to "+org+". Poppydesk did not get access to your account."
	case pageExpired:
		title, msg = "Sign-in already ended", "This sign-in to "+org+" had already ended. Start it again in Poppydesk if you still want to sign in."
	case pageStray:
		title, msg = "Not a sign-in answer", "This address is where Poppydesk waits for the answer of a sign-in to "+org+", and this request was not that answer (it did not carry the sign-in's state), so it changed nothing. If you are signing in, finish on the Company's sign-in page."
	default:
		title, msg = "Sign-in did not finish", "The sign-in to "+org+" did not finish. "+why+" Poppydesk shows the details; start the sign-in again there if you want."
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	loopbackPage.Execute(w, struct{ Title, Message string }{title, msg})
}
