package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// received is one request as an API of the reference Company received it.
type received struct {
	Method, Query, Body, Edit string
	SessionJTI, SID, HTM, HTU string
	AuthScheme, AuthToken     string
	DPoPJTI                   string
}

// echoAPI is an API of the reference Company (an OpenAPI description it lists in poppy.json,
// spec 7) that records every request as it arrives and answers 200, so a test sees on the
// Company's side what a Personal Agent put on the wire.
type echoAPI struct {
	mu   sync.Mutex
	got  []received
	base string
}

const echoDescription = `{"openapi": "3.0.3", "info": {"title": "Echo", "version": "1"},
 "paths": {"/items": {"post": {"operationId": "addItem", "responses": {"200": {"description": "ok"}}},
                      "get": {"operationId": "listItems", "responses": {"200": {"description": "ok"}}}}}}`

func startEcho(t *testing.T, s *refcompany.Server) *echoAPI {
	t.Helper()
	e := &echoAPI{base: s.Origin() + "/echo"}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{Method: r.Method, Query: r.URL.RawQuery, Body: string(body), Edit: r.Header.Get("X-Edit")}
		if sj := r.Header.Get("Poppy-Session"); sj != "" {
			c := poppytest.Claims(t, sj)
			rec.SessionJTI, _ = c["jti"].(string)
			rec.SID, _ = c["sid"].(string)
			rec.HTM, _ = c["htm"].(string)
			rec.HTU, _ = c["htu"].(string)
		}
		rec.AuthScheme, rec.AuthToken, _ = strings.Cut(r.Header.Get("Authorization"), " ")
		if p := r.Header.Get("DPoP"); p != "" {
			rec.DPoPJTI, _ = poppytest.Claims(t, p)["jti"].(string)
		}
		e.mu.Lock()
		e.got = append(e.got, rec)
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"echo": rec.Body})
	})
	if _, err := s.AddOpenAPI("/echo", []byte(echoDescription), "An echo of what arrives", h); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *echoAPI) received() []received {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]received(nil), e.got...)
}

// TestInspectorResend: in developer mode a recorded request, edited (method kept, query, a
// header and the body changed), is sent again and the Company receives the edit signed anew: a
// Session JWT with a new jti for the new URL, the account's token with a new DPoP proof, never
// the log's masked values; the new exchange is on the timeline linked to the original, opened
// beside it.
func TestInspectorResend(t *testing.T) {
	f := apptest.Start(t, apptest.Options{DPoP: true})
	echo := startEcho(t, f.Company)
	f.SignIn(t, "personal", "orders:read")
	co := f.Discover(t)
	ctx := inspect.WithCause(context.Background(), inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	ac, err := f.Host.Engine().APIClient(ctx, co.Identifier, "personal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Send(ctx, &apis.Request{Method: http.MethodPost, URL: echo.base + "/items", Body: []byte(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	in := f.Fronts().Inspector
	page, err := in.List(fronts.InspectorQuery{Search: "/echo/items"})
	if err != nil {
		t.Fatal(err)
	}
	if !page.Resend || len(page.Rows) != 1 {
		t.Fatalf("resend offered %v; rows %+v", page.Resend, page.Rows)
	}
	orig, err := in.Entry(page.Rows[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	// The window's editor starts from the stored request: its headers as the log holds them
	// (secrets masked), edited.
	hs := append([]fronts.InspectorHeader{{Name: "X-Edit", Value: "yes"}}, orig.RequestHeaders...)
	res, err := in.Resend(fronts.InspectorResend{Of: orig.Row.ID, Method: "POST", URL: echo.base + "/items?q=2", Headers: hs, Body: `{"n":2}`})
	if err != nil {
		t.Fatal(err)
	}
	got := echo.received()
	if len(got) != 2 {
		t.Fatalf("the Company received %d requests, want 2: %+v", len(got), got)
	}
	first, again := got[0], got[1]
	if again.Body != `{"n":2}` || again.Query != "q=2" || again.Edit != "yes" || again.Method != "POST" {
		t.Errorf("the Company received %+v, not the edit", again)
	}
	if again.SessionJTI == "" || again.SessionJTI == first.SessionJTI {
		t.Errorf("Session JWT jti %q again, %q first: not a fresh Session JWT", again.SessionJTI, first.SessionJTI)
	}
	if again.HTM != "POST" || again.HTU != echo.base+"/items" || again.SID != first.SID {
		t.Errorf("the new Session JWT signs %s %s in %s, want POST %s/items in %s", again.HTM, again.HTU, again.SID, echo.base, first.SID)
	}
	if again.AuthScheme != "DPoP" || again.AuthToken != first.AuthToken || again.DPoPJTI == "" || again.DPoPJTI == first.DPoPJTI {
		t.Errorf("authorization again %s (DPoP jti %q), first %s (DPoP jti %q): want the account's token with a new DPoP proof",
			again.AuthScheme, again.DPoPJTI, first.AuthScheme, first.DPoPJTI)
	}
	for _, r := range []string{again.AuthToken, again.Body, again.Edit} {
		if strings.Contains(r, "[redacted]") {
			t.Errorf("a masked value of the log was sent: %+v", again)
		}
	}
	// The new exchange: on the timeline, linked to the original, opened with the Company's answer.
	if res.Refused != "" || res.Entry.Row.Status != 200 || res.Entry.Row.ResendOf != orig.Row.ID || !strings.Contains(res.Entry.ResponseBody, `"echo"`) {
		t.Errorf("resent = %+v", res)
	}
	if res.Entry.Row.Cause != "window: Inspector.Resend" || res.Entry.Row.SID != first.SID {
		t.Errorf("the new exchange's cause %q, Session %q", res.Entry.Row.Cause, res.Entry.Row.SID)
	}
	page, _ = in.List(fronts.InspectorQuery{Search: "/echo/items"})
	linked := 0
	for _, r := range page.Rows {
		if r.ResendOf == orig.Row.ID && r.ID == res.Entry.Row.ID {
			linked++
		}
	}
	if linked != 1 {
		t.Errorf("the timeline does not link the resend to exchange %d: %+v", orig.Row.ID, page.Rows)
	}
}

// TestInspectorResendRefusals: each reason a resend is not sent, or is refused, comes in words,
// and nothing reaches the Company when Poppydesk refuses.
func TestInspectorResendRefusals(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	echo := startEcho(t, f.Company)
	f.SignIn(t, "personal", "orders:read")
	co := f.Discover(t)
	ac, err := f.Host.Engine().APIClient(context.Background(), co.Identifier, "personal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Send(context.Background(), &apis.Request{Method: http.MethodGet, URL: echo.base + "/items"}); err != nil {
		t.Fatal(err)
	}
	in := f.Fronts().Inspector
	idOf := func(suffix string) int64 {
		t.Helper()
		page, err := in.List(fronts.InspectorQuery{Search: suffix})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Rows {
			if strings.HasSuffix(r.URL, suffix) {
				return r.ID
			}
		}
		t.Fatalf("no exchange of %s: %+v", suffix, page.Rows)
		return 0
	}
	items, poppyJSON := idOf("/echo/items"), idOf("/.well-known/poppy.json")
	tests := []struct {
		name string
		r    fronts.InspectorResend
		want []string
	}{
		{"no Session", fronts.InspectorResend{Of: poppyJSON, Method: "GET", URL: f.Company.Origin() + "/.well-known/poppy.json"},
			[]string{"without a Session header", "Nothing was sent"}},
		{"not a Session destination", fronts.InspectorResend{Of: items, Method: "GET", URL: "https://elsewhere.localhost/items"},
			[]string{"did not send it", "not one of the Company's Session destinations"}},
		{"masked header", fronts.InspectorResend{Of: items, Method: "GET", URL: echo.base + "/items", Headers: []fronts.InspectorHeader{{Name: "Cookie", Value: "[redacted]"}}},
			[]string{"Cookie", "masked", "Nothing was sent"}},
		{"approval", fronts.InspectorResend{Of: items, Method: "GET", URL: echo.base + "/items", Headers: []fronts.InspectorHeader{{Name: "Poppy-Approval", Value: `operation_id="x", revision="1"`}}},
			[]string{"Poppy-Approval", "own dialog"}},
		{"not a method", fronts.InspectorResend{Of: items, Method: "GE T", URL: echo.base + "/items"},
			[]string{"not an HTTP method"}},
		{"gone", fronts.InspectorResend{Of: 1 << 40, Method: "GET", URL: echo.base + "/items"},
			[]string{"no longer in the log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(echo.received())
			_, err := in.Resend(tt.r)
			if err == nil {
				t.Fatal("sent")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := len(echo.received()); n != before {
				t.Errorf("the Company received %d requests", n-before)
			}
		})
	}
	// The Company refusing is its answer, shown in words beside the original.
	res, err := in.Resend(fronts.InspectorResend{Of: items, Method: "GET", URL: f.Company.URL(refcompany.ShopHost, "/api/orders/ord_none")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entry.Row.Status != 404 || res.Entry.Row.ResendOf != items || !strings.Contains(res.Refused, "The Company refused it: HTTP 404") {
		t.Errorf("refused = %+v", res)
	}
	t.Logf("the Company's refusal as shown: %s", res.Refused)

	// Outside developer mode, the Inspector offers no resend and refuses one.
	plain := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Developer = app.Developer{} }})
	page, err := plain.Fronts().Inspector.List(fronts.InspectorQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Resend {
		t.Error("resend offered outside developer mode")
	}
	if _, err := plain.Fronts().Inspector.Resend(fronts.InspectorResend{Of: 1, Method: "GET", URL: echo.base + "/items"}); err == nil || !strings.Contains(err.Error(), "developer mode") {
		t.Errorf("outside developer mode: %v", err)
	}
}

// TestInspectorResendStatefulChannels: an exchange with the Company's MCP server (a tools/call)
// or its Company Agent (a conversation's message) is not sent again: each belongs to a session
// Poppydesk's client holds (the MCP session's Mcp-Session-Id and never-reused JSON-RPC ids; the
// conversation's message ids and order), so the Inspector refuses in words naming why and what
// to do instead, as typed and with the URL edited to it, and the Company receives nothing.
func TestInspectorResendStatefulChannels(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read")
	co := f.Discover(t)
	cs := f.Model(t, "test")
	callToolRaw(t, cs, modelapi.ToolCallMCPTool, map[string]any{"company": f.Company.Domain, "account": "personal", "tool": "search_products", "arguments": map[string]any{"query": "lamp"}})
	callToolRaw(t, cs, "start_conversation", map[string]any{"company": f.Company.Domain, "text": "Is the lamp in stock?"})
	if err := f.Host.Engine().FlushExchanges(context.Background()); err != nil {
		t.Fatal(err)
	}
	var mcpURL string
	for _, a := range co.Channels.APIs {
		if a.Type == "mcp" {
			mcpURL = a.URL
		}
	}
	agent, _ := co.AgentEndpoint()
	in := f.Fronts().Inspector
	page, err := in.List(fronts.InspectorQuery{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	// The newest exchange of each channel whose request body holds want.
	find := func(base, want string) fronts.InspectorEntry {
		t.Helper()
		for _, r := range page.Rows {
			if r.Method != http.MethodPost || !strings.HasPrefix(r.URL, base) {
				continue
			}
			e, err := in.Entry(r.ID)
			if err == nil && strings.Contains(e.RequestBody, want) {
				return e
			}
		}
		t.Fatalf("no POST to %s with %s in the log: %+v", base, want, page.Rows)
		return fronts.InspectorEntry{}
	}
	call, message := find(mcpURL, `"tools/call"`), find(agent, "lamp")
	toItems := f.Company.URL(refcompany.ShopHost, "/api/products")
	tests := []struct {
		name string
		of   fronts.InspectorEntry
		url  string
		want []string
	}{
		{"MCP tools/call as it was", call, call.Row.URL, []string{"MCP server", "Mcp-Session-Id", "JSON-RPC id", "call_mcp_tool", "Nothing was sent"}},
		{"MCP tools/call edited to an API", call, toItems, []string{"MCP server"}},
		{"conversation message as it was", message, message.Row.URL, []string{"conversation with the Company Agent", "retry", "Nothing was sent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			posts := func() (n int) {
				for _, r := range f.Company.Requests() {
					if r.Method == http.MethodPost && (strings.HasSuffix(tt.of.Row.URL, r.Path) || strings.HasSuffix(tt.url, r.Path)) {
						n++
					}
				}
				return n
			}
			before := posts()
			_, err := in.Resend(fronts.InspectorResend{Of: tt.of.Row.ID, Method: "POST", URL: tt.url, Headers: tt.of.RequestHeaders, Body: tt.of.RequestBody})
			if err == nil {
				t.Fatal("sent")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := posts() - before; n != 0 {
				t.Errorf("the Company received %d POSTs to %s or %s", n, tt.of.Row.URL, tt.url)
			}
		})
	}
}
