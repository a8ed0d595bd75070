package app_test

import (
	"context"
	"errors"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestSessionDestinationsHostileLayout: against a Company whose OpenAPI description is served at
// its origin's root, or lists poppy.json, the metadata, web pages, the description and the token
// endpoint as operations, the Session JWT still goes only to the request URLs the description
// describes (spec 5.2): every other URL of the Company, through the engine's Client.Do or the
// API client, is refused before anything is sent, and the real API keeps working.
func TestSessionDestinationsHostileLayout(t *testing.T) {
	for _, faults := range [][]string{
		{refcompany.FaultDescriptionAtRoot},
		{refcompany.FaultDescriptionProtocolURLs},
		{refcompany.FaultDescriptionAtRoot, refcompany.FaultDescriptionProtocolURLs},
	} {
		t.Run(strings.Join(faults, "+"), func(t *testing.T) {
			f := apptest.Start(t, apptest.Options{Faults: faults})
			co := f.Discover(t)
			s := f.Company
			ctx := context.Background()
			cl, err := f.Host.Engine().Client(ctx, co.Identifier, "")
			if err != nil {
				t.Fatal(err)
			}
			never := []struct{ method, url string }{
				{"GET", s.PoppyJSONURL()},
				{"GET", s.URL(refcompany.ShopHost, "/.well-known/oauth-protected-resource")},
				{"GET", s.URL(refcompany.AuthHost, "/.well-known/oauth-authorization-server")},
				{"POST", co.AuthorizationServer.TokenEndpoint},
				{"POST", co.AuthorizationServer.RevocationEndpoint},
				{"GET", s.Origin() + "/"},
				{"GET", s.URL(refcompany.ShopHost, "/poppy/browser-session")},
				{"GET", s.URL(refcompany.ShopHost, "/logo.png")},
				{"GET", s.URL(refcompany.ShopHost, "/poppy/excluded-tasks.json")},
				{"GET", s.URL(refcompany.ShopHost, "/account")},                // a web page nothing lists
				{"GET", s.URL(refcompany.ShopHost, "/api/not-described")},      // under the API's folder, not in the description
				{"GET", s.URL(refcompany.ShopHost, "/api/orders/ord_1/extra")}, // one segment more than /orders/{id}
			}
			ac, err := f.Host.Engine().APIClient(ctx, co.Identifier, "")
			if err != nil {
				t.Fatal(err)
			}
			described := apis.Select(co.Document.APIs).OpenAPI
			for _, a := range described {
				never = append(never, struct{ method, url string }{"GET", a.URL}) // the description document
			}
			for _, a := range described {
				d, err := ac.FetchOpenAPI(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				for _, op := range d.Operations {
					if p := op.Path; strings.HasPrefix(p, "/.well-known") || p == "/" || p == "/poppy/browser-session" ||
						op.ServerURL+p == a.URL || p == "/oauth/token" {
						if op.Unavailable == "" {
							t.Errorf("the description's operation %s %s%s is callable; it must be unavailable (spec 5.2)", op.Method, op.ServerURL, op.Path)
						}
					}
				}
			}
			s.ResetRequests()
			for _, n := range never {
				_, err := cl.Do(ctx, &transport.Request{Method: n.method, URL: n.url})
				if !errors.Is(err, transport.ErrNotSessionDestination) {
					t.Errorf("Client.Do %s %s: err = %v, want a refused Session destination", n.method, n.url, err)
				}
				_, err = ac.Send(ctx, &apis.Request{Method: n.method, URL: n.url})
				if !errors.Is(err, transport.ErrNotSessionDestination) {
					t.Errorf("apis Send %s %s: err = %v, want a refused Session destination", n.method, n.url, err)
				}
			}
			for _, r := range s.Requests() {
				if r.Header.Get("Poppy-Session") != "" {
					t.Errorf("%s %s%s received the Session header", r.Method, r.Host, r.Path)
				}
			}
			// The request URLs the description describes are destinations.
			res, err := ac.Send(ctx, &apis.Request{Method: http.MethodGet, URL: s.URL(refcompany.ShopHost, "/api/products")})
			if err != nil || res.Status != http.StatusOK {
				t.Fatalf("GET /api/products: %+v, %v", res, err)
			}
			if got := s.RequestsTo(refcompany.ShopHost, "/api/products"); len(got) != 1 || got[0].Header.Get("Poppy-Session") == "" {
				t.Fatalf("the described API did not get one signed request: %d", len(got))
			}
			dest, err := co.SessionDestinations()
			if err != nil {
				t.Fatal(err)
			}
			if !allows(dest, s.URL(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges")) || !allows(dest, s.URL(refcompany.ShopHost, "/poppy/conversations/c_1/events")) {
				t.Fatal("a described API path or a conversation route is not a destination")
			}
		})
	}
}

func allows(d *transport.Destinations, raw string) bool {
	u, err := neturl.Parse(raw)
	return err == nil && d.Allows(u)
}
