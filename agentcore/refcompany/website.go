package refcompany

import (
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// The reference Company's small website (spec 6 step 4): pages a joined browser browses as the
// Session. Every page shows who the visitor is (id="visitor", with data-session, data-account
// and data-scopes for tests), so a test can see whether the browser is the Session and signed in:
//
//	GET  /account                    who the visitor is
//	GET  /orders                     the account's orders (needs orders:read)
//	GET  /orders/{id}                one order, with the exchange form (form name "exchange")
//	POST /orders/{id}/exchange       exchange an item (needs orders:write; a visible
//	                                 "Missing scope" message names the scope otherwise)
//	GET  /login, POST /login         the website's own login (no protocol: the step-3 table)
//	POST /logout                     signs the browser out on the website (ends the Session's
//	                                 sign-in in this browser, spec 6)
//
// A Session cookie the website no longer knows (ForgetWebSessions, or expired) is cleared on
// the next request, so the Personal Agent sees that the website no longer recognizes the
// Session and joins again (spec 6).
//
// HTML is served with a Content-Type header and written with html/template, so Company content
// in it is escaped.

// WebExchange is an exchange made on the website.
type WebExchange struct {
	Account, OrderID, ItemID, ReplacementSKU string
}

// WebExchanges lists the exchanges made on the website.
func (s *Server) WebExchanges() []WebExchange {
	b := s.browser()
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.exchanges)
}

// isBrowserSitePath reports whether the browser-session endpoint or the website serves p.
func isBrowserSitePath(p string) bool {
	switch {
	case p == BrowserSessionPath, p == BrowserSessionPath+"/authorize":
		return true
	case p == "/account", p == "/orders", p == "/login", p == "/logout", strings.HasPrefix(p, "/orders/"):
		return true
	}
	return false
}

// visitor is who a website request comes from.
type visitor struct {
	session  *webSession // nil: not the Session
	account  string      // "" not logged in
	scopes   []string    // the Session's scopes when signed in through it
	ownLogin bool        // logged in through the website's own login (scopes don't apply)
}

func (v visitor) can(scope string) bool { return v.ownLogin || slices.Contains(v.scopes, scope) }

func (s *Server) visitorOf(r *http.Request) visitor {
	var v visitor
	b := s.browser()
	now := s.now()
	if ck, err := r.Cookie(SessionCookie); err == nil {
		b.mu.Lock()
		ws := b.sessions[ck.Value]
		if ws != nil && !now.Before(ws.expires) {
			delete(b.sessions, ck.Value)
			ws = nil
		}
		b.mu.Unlock()
		if ws != nil {
			v.session = ws
			// The cookie stops acting for the account when the User signs out (spec 6).
			if ws.account != "" && s.signInLive(ws) {
				v.account, v.scopes = ws.account, slices.Clone(ws.scopes)
				return v
			}
		}
	}
	if ck, err := r.Cookie(LoginCookie); err == nil {
		b.mu.Lock()
		acct := b.logins[ck.Value]
		b.mu.Unlock()
		if acct != "" {
			v.account, v.ownLogin = acct, true
		}
	}
	return v
}

var sitePageTmpl = template.Must(template.New("site").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Shop</title></head>
<body>
<nav><a href="/account">Account</a> <a href="/orders">Orders</a> <a href="/login">Log in</a></nav>
<p id="visitor" data-session="{{if .V.Session}}yes{{else}}no{{end}}" data-account="{{.V.Account}}" data-scopes="{{.Scopes}}">
{{- if .V.Session}}This browser is the Personal Agent's Session. {{else}}This browser is not a Personal Agent's Session. {{end -}}
{{- if .V.OwnLogin}}Logged in as {{.V.Account}} through the website's own login.{{else if .V.Account}}Signed in as {{.V.Account}} with scopes {{.Scopes}}.{{else}}Not signed in.{{end -}}
</p>
<h1>{{.Title}}</h1>
{{if .Error}}<p class="error" role="alert" id="error">{{.Error}}</p>{{end}}
{{if .Message}}<p class="notice" id="message">{{.Message}}</p>{{end}}
{{range .Orders}}<p class="order"><a href="/orders/{{.ID}}">Order {{.ID}}</a>: {{.Status}}</p>{{end}}
{{with .Order}}<p>Order {{.ID}}: {{.Status}}</p>
<ul>{{range .Items}}<li>{{.ID}}: {{.SKU}}{{if .ExchangedFor}} (exchanged for {{.ExchangedFor}}){{end}}</li>{{end}}</ul>
<form name="exchange" id="exchange" method="post" action="/orders/{{.ID}}/exchange">
<label>Item <input name="item_id" type="text"></label>
<label>Replacement <input name="replacement_sku" type="text"></label>
<button type="submit">Request exchange</button>
</form>{{end}}
{{if .Login}}<form name="login" id="login" method="post" action="/login">
<label>Account <input name="account" type="text"></label>
<button type="submit">Log in</button>
</form>{{end}}
{{if .V.Account}}<form name="logout" id="logout" method="post" action="/logout"><button type="submit">Log out</button></form>{{end}}
</body></html>`))

type sitePage struct {
	Title, Error, Message string
	V                     struct {
		Session  bool
		Account  string
		OwnLogin bool
	}
	Scopes string
	Orders []*order
	Order  *order
	Login  bool
}

func (s *Server) renderSite(w http.ResponseWriter, status int, v visitor, p sitePage) {
	p.V.Session, p.V.Account, p.V.OwnLogin = v.session != nil, v.account, v.ownLogin
	p.Scopes = strings.Join(v.scopes, " ")
	if v.ownLogin {
		p.Scopes = ""
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	w.WriteHeader(status)
	sitePageTmpl.Execute(w, p)
}

func (s *Server) webError(w http.ResponseWriter, status int, msg string) {
	s.renderSite(w, status, visitor{}, sitePage{Title: "Error", Error: msg})
}

// accountOrders lists the orders of account, by ID.
func (s *Server) accountOrders(account string) []*order {
	st := s.ops()
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*order
	for _, o := range st.orders {
		if o.Account == account {
			cp := *o
			cp.Items = nil
			for _, it := range o.Items {
				c := *it
				cp.Items = append(cp.Items, &c)
			}
			out = append(out, &cp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// missingScope is the visible message of spec 6 "The cookie": it names the missing scope so the
// Personal Agent can ask for it.
func missingScope(scope, what string) string {
	return "Missing scope: " + scope + ". Sign in again with the scope " + scope + " to " + what + "."
}

// clearUnknownSession clears a Session cookie the website no longer knows (forgotten with
// ForgetWebSessions, or expired): the website then visibly no longer recognizes the Session,
// and the Personal Agent, which sees its cookie gone, joins again (spec 6 "join again ... when
// the website no longer recognizes the Session").
func (s *Server) clearUnknownSession(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(SessionCookie)
	if err != nil {
		return
	}
	b := s.browser()
	now := s.now()
	b.mu.Lock()
	ws := b.sessions[ck.Value]
	b.mu.Unlock()
	if ws == nil || !now.Before(ws.expires) {
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
}

func (s *Server) serveWebsite(w http.ResponseWriter, r *http.Request) {
	s.clearUnknownSession(w, r)
	v := s.visitorOf(r)
	p := r.URL.Path
	switch {
	case p == "/account":
		s.renderSite(w, http.StatusOK, v, sitePage{Title: "Your account"})
	case p == "/login" && r.Method == http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		acct := strings.TrimSpace(r.PostFormValue("account"))
		if acct == "" {
			s.renderSite(w, http.StatusBadRequest, v, sitePage{Title: "Log in", Error: "Enter an account name.", Login: true})
			return
		}
		val := randID(24)
		b := s.browser()
		b.mu.Lock()
		b.logins[val] = acct
		b.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: val, Path: "/", MaxAge: 3600, Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/account", http.StatusSeeOther)
	case p == "/login":
		s.renderSite(w, http.StatusOK, v, sitePage{Title: "Log in", Login: true})
	case p == "/logout" && r.Method == http.MethodPost:
		// Signing out on the website ends the Session's sign-in in this browser (spec 6); the
		// cookie keeps the browser in the Session, signed out.
		b := s.browser()
		b.mu.Lock()
		if v.session != nil {
			v.session.account, v.session.scopes, v.session.grant, v.session.token = "", nil, "", ""
		}
		if ck, err := r.Cookie(LoginCookie); err == nil {
			delete(b.logins, ck.Value)
		}
		b.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/account", http.StatusSeeOther)
	case p == "/orders":
		switch {
		case v.account == "":
			s.renderSite(w, http.StatusUnauthorized, v, sitePage{Title: "Orders", Error: "Sign in to see your orders."})
		case !v.can("orders:read"):
			s.renderSite(w, http.StatusForbidden, v, sitePage{Title: "Orders", Error: missingScope("orders:read", "see your orders")})
		default:
			s.renderSite(w, http.StatusOK, v, sitePage{Title: "Orders", Orders: s.accountOrders(v.account)})
		}
	case strings.HasPrefix(p, "/orders/"):
		rest := strings.TrimPrefix(p, "/orders/")
		id, action, _ := strings.Cut(rest, "/")
		if v.account == "" {
			s.renderSite(w, http.StatusUnauthorized, v, sitePage{Title: "Order", Error: "Sign in to see your orders."})
			return
		}
		var o *order
		for _, x := range s.accountOrders(v.account) {
			if x.ID == id {
				o = x
			}
		}
		if o == nil {
			s.renderSite(w, http.StatusNotFound, v, sitePage{Title: "Order", Error: "There is no such order in your account."})
			return
		}
		switch {
		case action == "" && r.Method == http.MethodGet:
			if !v.can("orders:read") {
				s.renderSite(w, http.StatusForbidden, v, sitePage{Title: "Order " + id, Error: missingScope("orders:read", "see your orders")})
				return
			}
			s.renderSite(w, http.StatusOK, v, sitePage{Title: "Order " + id, Order: o})
		case action == "exchange" && r.Method == http.MethodPost:
			r.Body = http.MaxBytesReader(w, r.Body, 4096)
			item, sku := r.PostFormValue("item_id"), r.PostFormValue("replacement_sku")
			if !v.can("orders:write") {
				s.renderSite(w, http.StatusForbidden, v, sitePage{Title: "Order " + id, Error: missingScope("orders:write", "exchange items"), Order: o})
				return
			}
			if o.item(item) == nil || catalog[sku].SKU == "" {
				s.renderSite(w, http.StatusBadRequest, v, sitePage{Title: "Order " + id, Error: "Choose an item of this order and a replacement from the catalog.", Order: o})
				return
			}
			b := s.browser()
			b.mu.Lock()
			b.exchanges = append(b.exchanges, WebExchange{Account: v.account, OrderID: id, ItemID: item, ReplacementSKU: sku})
			b.mu.Unlock()
			s.renderSite(w, http.StatusOK, v, sitePage{Title: "Order " + id, Message: "Exchange requested: " + item + " for " + sku + ".", Order: o})
		default:
			s.renderSite(w, http.StatusNotFound, v, sitePage{Title: "Not found", Error: "There is no such page."})
		}
	default:
		s.renderSite(w, http.StatusNotFound, v, sitePage{Title: "Not found", Error: "There is no such page."})
	}
}

// BrowserRequestsCarryingTokens returns the requests a browser sent (they carry Sec-Fetch-Mode,
// which only browsers send) that contain any access or refresh token this Company issued or
// accepts, in a header, the query or the body. The access token must never reach the browser
// (spec 6, 10.6), so this is empty.
func (s *Server) BrowserRequestsCarryingTokens() []Request {
	var secrets []string
	s.mu.Lock()
	for t := range s.tokens {
		secrets = append(secrets, t)
	}
	s.mu.Unlock()
	a := s.auth()
	a.mu.Lock()
	for rt := range a.grants {
		secrets = append(secrets, rt)
	}
	for at := range a.atInfo {
		secrets = append(secrets, at)
	}
	a.mu.Unlock()
	var out []Request
	for _, r := range s.Requests() {
		if r.Header.Get("Sec-Fetch-Mode") == "" {
			continue
		}
		var all strings.Builder
		for k, vs := range r.Header {
			all.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
		}
		all.WriteString(r.Query + "\n")
		all.Write(r.Body)
		text := all.String()
		for _, sec := range secrets {
			if sec != "" && strings.Contains(text, sec) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}
