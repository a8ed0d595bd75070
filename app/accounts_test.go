package app_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/app/apptest"
)

// TestAccountsOneTruth: the window and the model name the same signed-in accounts at a Company
// after sign-ins and sign-outs. An account signed out keeps its keyring bundle (its User ID is
// pairwise and kept, spec 5.1), so it is not signed in for either of them.
func TestAccountsOneTruth(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	c := f.Fronts().Companies
	e, err := c.Discover(f.Company.Domain)
	if err != nil {
		t.Fatal(err)
	}
	id := e.Company.Identifier
	model := f.Model(t, "accounts-test")
	window := func() []string {
		l, err := c.List("", 0)
		if err != nil || len(l.Companies) != 1 {
			t.Fatalf("the Companies screen: %+v, %v", l, err)
		}
		var out []string
		for _, a := range l.Companies[0].Accounts {
			out = append(out, a.Account)
		}
		slices.Sort(out)
		return out
	}
	modelSays := func(tool string, args map[string]any) []string {
		res, err := model.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var out struct {
			SignedIn  []string `json:"signed_in_accounts"`
			Companies []struct {
				Identifier string   `json:"identifier"`
				SignedIn   []string `json:"signed_in_accounts"`
			} `json:"companies"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %v in %s", tool, err, raw)
		}
		if tool == "list_companies" {
			for _, co := range out.Companies {
				if co.Identifier == id {
					return co.SignedIn
				}
			}
			t.Fatalf("list_companies does not list %s: %s", id, raw)
		}
		return out.SignedIn
	}
	check := func(step string, want ...string) {
		t.Helper()
		w, l, d := window(), modelSays("list_companies", nil), modelSays("describe_company", map[string]any{"company": id})
		if !slices.Equal(w, want) && !(len(w) == 0 && len(want) == 0) {
			t.Errorf("%s: the window shows %q, want %q", step, w, want)
		}
		if !slices.Equal(l, want) && !(len(l) == 0 && len(want) == 0) {
			t.Errorf("%s: list_companies tells the model %q, want %q", step, l, want)
		}
		if !slices.Equal(d, want) && !(len(d) == 0 && len(want) == 0) {
			t.Errorf("%s: describe_company tells the model %q, want %q", step, d, want)
		}
	}
	check("before any sign-in")
	f.SignIn(t, "personal", "orders:read")
	check("after one sign-in", "personal")
	if err := c.SignOut(id, "personal"); err != nil {
		t.Fatal(err)
	}
	check("after its sign-out")
	f.SignIn(t, "work", "orders:read")
	f.SignIn(t, "family", "orders:read")
	check("after two more sign-ins", "family", "work")
}
