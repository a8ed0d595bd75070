package apis_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func (f *fixture) mcp(t *testing.T, c *apis.Client) *apis.MCPSession {
	t.Helper()
	sel := apis.Select(f.company.Document.APIs)
	if len(sel.MCP) != 1 || sel.MCP[0].URL != f.s.MCPURL() {
		t.Fatalf("selection = %+v", sel)
	}
	m, err := c.ConnectMCP(context.Background(), sel.MCP[0])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMCPExchange: tools with annotations; exchange_item returns the operation as an isError
// result, and the same call with the _meta approval is performed once (Operations 4, 6, 7); every
// HTTP request of the MCP transport carried the Session header (spec 5.2, 7).
func TestMCPExchange(t *testing.T) {
	f := newFixture(t)
	c := f.clientFor(t, f.session(t, "alice", opsV2), tokenRW)
	ctx := context.Background()
	f.s.ResetRequests()
	m := f.mcp(t, c)
	tools, err := m.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]apis.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	if s := byName["search_products"]; !s.Annotated || !s.ReadOnly || s.Destructive || s.OpenWorld {
		t.Fatalf("search_products = %+v", s)
	}
	if x := byName["exchange_item"]; !x.Annotated || x.ReadOnly || !x.Destructive || !strings.Contains(string(x.InputSchema), "replacement_sku") {
		t.Fatalf("exchange_item = %+v", x)
	}
	sr, err := m.CallTool(ctx, apis.ToolCall{Name: "search_products", Arguments: json.RawMessage(`{"query":"insulated"}`)})
	if err != nil || sr.IsError || !strings.Contains(string(sr.StructuredContent), "stormline-insulated-m") {
		t.Fatalf("search: %+v %v", sr, err)
	}
	call := apis.ToolCall{Name: "exchange_item", Arguments: json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)}
	first, err := m.CallTool(ctx, call)
	if err != nil || !first.IsError || !strings.Contains(first.Text, "approval") {
		t.Fatalf("first: %+v %v", first, err)
	}
	var sc struct {
		Operation operation `json:"operation"`
	}
	if err := json.Unmarshal(first.StructuredContent, &sc); err != nil || sc.Operation.OperationID == "" || sc.Operation.Revision == "" {
		t.Fatalf("structuredContent %s: %v", first.StructuredContent, err)
	}
	approved := first.Call.WithApproval(sc.Operation.OperationID, sc.Operation.Revision)
	done, err := m.CallTool(ctx, approved)
	if err != nil || done.IsError || !strings.Contains(string(done.StructuredContent), `"confirmed"`) {
		t.Fatalf("approved: %+v %v", done, err)
	}
	again, err := m.CallTool(ctx, approved)
	if err != nil || string(again.StructuredContent) != string(done.StructuredContent) {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if l := f.s.Ledger(); len(l) != 1 || l[0].Interface != refcompany.InterfaceMCP || l[0].Revision != sc.Operation.Revision {
		t.Fatalf("ledger = %+v", l)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := f.s.RequestsTo(refcompany.ShopHost, refcompany.MCPPath)
	methods := map[string]int{}
	for _, r := range reqs {
		methods[r.Method]++
		if r.Header.Get("Poppy-Session") == "" || r.Header.Get("Poppy-Version") == "" || r.Header.Get("Authorization") != "Bearer "+tokenRW {
			t.Fatalf("%s %s without the Session header or token: %v", r.Method, r.Path, r.Header)
		}
	}
	if methods["POST"] < 6 || methods["DELETE"] != 1 {
		t.Fatalf("MCP requests by method: %v", methods)
	}
}

// TestMCPRefusals: HTTP-level refusals of the MCP server are the transport's typed errors, and a
// Session without the extension gets an ordinary tool error (Operations 2, spec 7).
func TestMCPRefusals(t *testing.T) {
	ctx := context.Background()
	call := apis.ToolCall{Name: "exchange_item", Arguments: json.RawMessage(`{"order_id":"ord_7Hk2","item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}`)}
	t.Run("signed out: 401 challenge with resource_metadata", func(t *testing.T) {
		f := newFixture(t)
		m := f.mcp(t, f.client(t, f.session(t, "", opsV2)))
		defer m.Close()
		_, err := m.CallTool(ctx, call)
		var pe *transport.ProtocolError
		if !errors.As(err, &pe) || pe.Status != 401 || !pe.NeedsScopes() || !strings.HasSuffix(pe.ResourceMetadata, "/.well-known/oauth-protected-resource/mcp") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown token: continues signed out, the account's tool gets the challenge", func(t *testing.T) {
		f := newFixture(t)
		m := f.mcp(t, f.clientFor(t, f.session(t, "alice", opsV2), "tok-unknown"))
		defer m.Close()
		_, err := m.CallTool(ctx, call)
		var pe *transport.ProtocolError
		var so *transport.SignedOutError
		if !errors.As(err, &so) || !errors.As(err, &pe) || pe.Status != 401 || !pe.NeedsScopes() {
			t.Fatalf("err = %v; want the signed-out attempt's challenge, with why it went signed out (spec 5.5)", err)
		}
	})
	t.Run("extension not declared: ordinary tool error", func(t *testing.T) {
		f := newFixture(t)
		m := f.mcp(t, f.clientFor(t, f.session(t, "alice", nil), tokenRW))
		defer m.Close()
		res, err := m.CallTool(ctx, call)
		if err != nil || !res.IsError || res.StructuredContent != nil || !strings.Contains(res.Text, "operations") {
			t.Fatalf("res %+v err %v", res, err)
		}
		if len(f.s.Ledger()) != 0 {
			t.Fatal("performed")
		}
	})
}

func errorsAsCode(err error, code string) bool {
	var pe *transport.ProtocolError
	return errors.As(err, &pe) && pe.Code == code
}
