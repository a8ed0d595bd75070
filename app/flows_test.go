package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// TestInspectorFlows: the timeline's exchanges grouped into flows for the sequence diagram: a
// sign-in is one flow holding every exchange the window's sign-in caused, oldest first, from
// Poppydesk to the issuer's host; the model's API call is a flow of its own to the shop's host,
// and the conversation started in the window is the newest flow.
func TestInspectorFlows(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read")
	co := f.Discover(t)
	ctx := inspect.WithCause(context.Background(), inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	ac, err := f.Host.Engine().APIClient(ctx, co.Identifier, "personal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Send(ctx, &apis.Request{Method: http.MethodGet, URL: f.Company.URL(refcompany.ShopHost, "/api/orders")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fronts().Conversations.Start(co.Identifier, "Which jacket is warmer?"); err != nil {
		t.Fatal(err)
	}
	in := f.Fronts().Inspector
	page, err := in.List(fronts.InspectorQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	byCause := map[string][]int64{}
	for _, r := range slices.Backward(page.Rows) {
		switch {
		case strings.HasPrefix(r.Cause, "window: SignIn"):
			byCause["sign-in"] = append(byCause["sign-in"], r.ID)
		case r.Cause == "model: call_api_operation":
			byCause["model"] = append(byCause["model"], r.ID)
		case strings.HasPrefix(r.Cause, "window: Conversations."):
			byCause["conversation"] = append(byCause["conversation"], r.ID)
		}
	}
	flows, err := in.Flows(0)
	if err != nil {
		t.Fatal(err)
	}
	find := func(kind string) fronts.InspectorFlow {
		t.Helper()
		for _, fl := range flows {
			if fl.Kind == kind {
				return fl
			}
		}
		t.Fatalf("no %s flow among %+v", kind, flows)
		return fronts.InspectorFlow{}
	}
	signIn, model := find(fronts.FlowSignIn), find(inspect.CauseModel)
	var got []int64
	for _, a := range signIn.Arrows {
		if a.From == 0 { // Poppydesk's own requests; a Company's fetch comes from "the Company"
			got = append(got, a.Exchange)
		}
	}
	if !slices.Equal(got, byCause["sign-in"]) || len(got) == 0 {
		t.Errorf("the sign-in flow's exchanges %v, the window's sign-in caused %v", got, byCause["sign-in"])
	}
	if signIn.Lanes[0] != "Poppydesk" || !strings.Contains(strings.Join(signIn.Lanes, " "), refcompany.AuthHost) {
		t.Errorf("sign-in lanes %v", signIn.Lanes)
	}
	var modelIDs []int64
	orders := 0
	for _, a := range model.Arrows {
		modelIDs = append(modelIDs, a.Exchange)
		if a.Label == "GET /api/orders" && a.Status == 200 && strings.HasPrefix(model.Lanes[a.To], refcompany.ShopHost+":") {
			orders++
		}
	}
	if orders != 1 {
		t.Errorf("the model's flow lacks its API call to the shop: %+v (lanes %v)", model.Arrows, model.Lanes)
	}
	if !slices.Equal(modelIDs, byCause["model"]) {
		t.Errorf("the model's flow %v, its exchanges %v", modelIDs, byCause["model"])
	}
	conv := find(fronts.FlowConversation)
	var convIDs []int64
	for _, a := range conv.Arrows {
		convIDs = append(convIDs, a.Exchange)
	}
	if !slices.Equal(convIDs, byCause["conversation"]) || len(convIDs) == 0 {
		t.Errorf("the conversation's flow %v, the window's conversation caused %v", convIDs, byCause["conversation"])
	}
	if flows[0].ID != conv.ID {
		t.Errorf("the newest flow is %q, not the conversation", flows[0].Title)
	}
}
