package apis_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestDescriptionProvesDestinationBeforeSigning: an API whose description was not readable at
// discovery (served only afterwards) has no Session destinations in the discovered Company; a
// request to one of its URLs reads the description first, without the Session header, and only
// then is signed and sent (spec 5.2: no request carries the header before its destination is
// proven). A URL that no description describes is refused, and the description is read only
// once for such refusals.
func TestDescriptionProvesDestinationBeforeSigning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := poppytest.Start(t, refcompany.Options{})
	late := s.URL(refcompany.OtherHost, "/late/openapi.json")
	s.EditPoppyJSON(func(doc map[string]any) {
		doc["apis"] = append(doc["apis"].([]any), map[string]any{"type": "openapi", "url": late, "description": "served late"})
	})
	tr := poppytest.Transport(t, s, nil)
	disc, err := discovery.New(discovery.Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	co, err := disc.Discover(ctx, s.Domain) // the late description answers 404 now
	if err != nil {
		t.Fatal(err)
	}
	if co.DescriptionErrors[late] == "" {
		t.Fatalf("the late description was readable at discovery: %+v", co.Described)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/late/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "late", "version": "1"},
			"servers": []any{map[string]any{"url": "/late"}},
			"paths":   map[string]any{"/things/{id}": map[string]any{"get": map[string]any{"operationId": "getThing", "responses": map[string]any{"200": map[string]any{"description": "ok"}}}}}})
	})
	mux.HandleFunc("/late/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) })
	s.AddHost(refcompany.OtherHost, mux)

	agent, err := s.NewTestAgent(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := agent.Sessions.Open(ctx, co.Identifier, session.Options{Version: co.Version})
	if err != nil {
		t.Fatal(err)
	}
	dest, err := co.SessionDestinations()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := tr.Session(transport.SessionConfig{Signer: sess, Destinations: dest, Version: co.Version})
	if err != nil {
		t.Fatal(err)
	}
	c, err := apis.New(apis.Config{Session: sc, Described: apis.NewDescribed(co)})
	if err != nil {
		t.Fatal(err)
	}
	s.ResetRequests()
	res, err := c.Send(ctx, &apis.Request{Method: http.MethodGet, URL: s.URL(refcompany.OtherHost, "/late/things/t1")})
	if err != nil || res.Status != http.StatusOK {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	reqs := s.RequestsTo(refcompany.OtherHost, "")
	if len(reqs) != 2 || reqs[0].Path != "/late/openapi.json" || reqs[0].Header.Get("Poppy-Session") != "" ||
		reqs[1].Path != "/late/things/t1" || reqs[1].Header.Get("Poppy-Session") == "" {
		for _, r := range reqs {
			t.Logf("%s %s session=%v", r.Method, r.Path, r.Header.Get("Poppy-Session") != "")
		}
		t.Fatal("want the description read unsigned, then the request signed")
	}
	s.ResetRequests()
	for range 2 {
		_, err = c.Send(ctx, &apis.Request{Method: http.MethodGet, URL: s.URL(refcompany.OtherHost, "/late/secret/a/b")})
		if !errors.Is(err, transport.ErrNotSessionDestination) {
			t.Fatalf("an undescribed URL: err = %v", err)
		}
	}
	if n := len(s.RequestsTo(refcompany.OtherHost, "")); n != 0 {
		t.Fatalf("%d requests for refused URLs (the description was already read this run)", n)
	}
}
