package refcompany

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// The authorization server's pages: plain HTML forms, no script, served with Content-Type and a
// CSP that forbids script and framing (clickjacking, RFC 9700 §4.16).
var pages = template.Must(template.New("").Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{{.}} · Shop</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em}label{display:block;margin:.4em 0}</style></head><body>{{end}}

{{define "consent"}}{{template "head" "Sign in"}}
<h1>Sign in to Shop</h1>
<p><strong id="client">{{.Client}}</strong> asks for access to your Shop account.</p>
<form method="post" action="/oauth/authorize" id="consent">
<input type="hidden" name="request" value="{{.Request}}">
<label>Your Shop account <input type="email" name="account" id="account" value="alex@shop.example" required></label>
<label>Password <input type="password" name="password" id="password" value="demo-password"></label>
<fieldset><legend>Allow {{.Client}} to:</legend>
{{range .Scopes}}<label><input type="checkbox" name="scope" value="{{.Name}}" id="scope-{{.Name}}" checked> {{.Description}} <code>{{.Name}}</code></label>
{{end}}</fieldset>
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny" formnovalidate>Deny</button>
</form></body></html>{{end}}

{{define "device-entry"}}{{template "head" "Connect a device"}}
<h1>Connect a device to your Shop account</h1>
<form method="get" action="/device"><label>Code shown on your device <input name="user_code" id="user_code" autocomplete="off" required></label>
<button type="submit" id="continue">Continue</button></form></body></html>{{end}}

{{define "device-confirm"}}{{template "head" "Connect a device"}}
<h1>Connect {{.Client}}?</h1>
<p>Only continue if the code <strong id="code">{{.UserCode}}</strong> is the one {{.Client}} shows you now.</p>
<form method="post" action="/device" id="device">
<input type="hidden" name="user_code" value="{{.UserCode}}">
<label>Your Shop account <input type="email" name="account" id="account" value="alex@shop.example" required></label>
<fieldset><legend>Allow {{.Client}} to:</legend>
{{range .Scopes}}<label><input type="checkbox" name="scope" value="{{.Name}}" id="scope-{{.Name}}" checked> {{.Description}} <code>{{.Name}}</code></label>
{{end}}</fieldset>
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny" formnovalidate>Deny</button>
</form></body></html>{{end}}

{{define "message"}}{{template "head" .Title}}<h1>{{.Title}}</h1><p id="message">{{.Message}}</p></body></html>{{end}}
`))

type scopeView struct{ Name, Description string }

var scopeDescriptions = map[string]string{"orders:read": "See your orders and returns", "orders:write": "Return items and change orders"}

func scopeViews(scopes []string) []scopeView {
	out := make([]scopeView, 0, len(scopes))
	for _, s := range scopes {
		out = append(out, scopeView{s, scopeDescriptions[s]})
	}
	return out
}

// writePage serves a page. formTarget is an extra origin the page's form may lead to (the
// client's redirect URI, reached by a redirect after the POST: CSP form-action covers redirects).
func writePage(w http.ResponseWriter, status int, name string, data any, formTarget ...string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "+strings.Join(formTarget, " ")+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	pages.ExecuteTemplate(w, name, data)
}

func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	writePage(w, status, "message", map[string]string{"Title": "Sign-in problem", "Message": msg})
}

func (s *Server) consentPage(w http.ResponseWriter, id, client, redirectURI string, scopes []string) {
	var target []string
	if u, err := url.Parse(redirectURI); err == nil {
		target = append(target, u.Scheme+"://"+u.Host)
	}
	writePage(w, http.StatusOK, "consent", map[string]any{"Request": id, "Client": client, "Scopes": scopeViews(scopes)}, target...)
}

// devicePage is the verification page (RFC 8628 §3.3): opening it, even with user_code in the
// link, only shows what is asked; the person approves with a POST (spec 4.3).
func (s *Server) devicePage(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			s.errorPage(w, http.StatusBadRequest, "The form could not be read.")
			return
		}
		approve := r.PostForm.Get("decision") == "approve"
		if !s.approveDevice(r.PostForm.Get("user_code"), strings.TrimSpace(r.PostForm.Get("account")), approve, r.PostForm["scope"]) {
			s.errorPage(w, http.StatusBadRequest, "This code is unknown, expired or already used. Check the code on your device.")
			return
		}
		msg := "Done. You can return to your device."
		if !approve {
			msg = "You declined. The device did not get access."
		}
		writePage(w, http.StatusOK, "message", map[string]string{"Title": "Connect a device", "Message": msg})
		return
	}
	uc := r.URL.Query().Get("user_code")
	if uc == "" {
		writePage(w, http.StatusOK, "device-entry", nil)
		return
	}
	d := s.deviceByUserCode(uc)
	if d == nil {
		s.errorPage(w, http.StatusNotFound, "This code is unknown, expired or already used. Check the code on your device.")
		return
	}
	if s.fault(FaultDeviceLinkApproves) {
		s.approveDevice(uc, "device@shop.example", true, d.requested)
	}
	writePage(w, http.StatusOK, "device-confirm", map[string]any{"Client": d.clientName, "UserCode": strings.ToUpper(strings.TrimSpace(uc)), "Scopes": scopeViews(d.requested)})
}
