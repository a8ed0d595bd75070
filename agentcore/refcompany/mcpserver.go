package refcompany

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where the reference Company's MCP server is mounted on the shop host.
const MCPPath = "/mcp"

// ApprovalMetaKey is the _meta key of an approval in an MCP tool call (Operations 6).
const ApprovalMetaKey = "personalagentprotocol.org/approval"

// MCPURL is https://shop.localhost:PORT/mcp, the MCP server's url in poppy.json (spec 7).
func (s *Server) MCPURL() string { return s.URL(ShopHost, MCPPath) }

// mcpResourceMetadata is the MCP server's protected resource metadata URL (RFC 9728 §3.1).
func (s *Server) mcpResourceMetadata() string {
	return s.URL(ShopHost, "/.well-known/oauth-protected-resource"+MCPPath)
}

// mcpCaller is the verified caller of one MCP HTTP request.
type mcpCaller struct {
	p        *protected
	declared bool // "operations";v="2" declared (Operations 2)
}

// serveMCP is the MCP server (official Go SDK, Streamable HTTP). Every HTTP request of the MCP
// transport is a Session destination: it is verified like the API (spec 5.3, 7) before the SDK
// sees it, and the verified caller is handed to tool handlers through the request's Poppy-Session
// value, which is unique per request (its jti).
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	rm := s.mcpResourceMetadata()
	p, ok := s.protect(w, r, rm)
	if !ok {
		return
	}
	// A call of exchange_item needs the account: MCP authorization answers at the HTTP level
	// (spec 7 "MCP servers", RFC 9728 §5.1).
	if r.Method == http.MethodPost && r.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == "exchange_item" {
			if !needScope(w, p, "orders:write", "", rm) {
				return
			}
		}
	}
	st := s.ops()
	st.mcpOnce.Do(func() { st.mcp = s.newMCPHandler() })
	key := r.Header.Get("Poppy-Session")
	st.mu.Lock()
	st.calls[key] = mcpCaller{p: p, declared: declares(r, "operations", "2")}
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		delete(st.calls, key)
		st.mu.Unlock()
	}()
	st.mcp.ServeHTTP(w, r)
}

func (s *Server) newMCPHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop-reference-company", Version: "1"}, &mcp.ServerOptions{Logger: s.log})
	f := false
	srv.AddTool(&mcp.Tool{
		Name:        "search_products",
		Description: "Search the shop's products by name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words to look for in product names"}}}`),
		Annotations: &mcp.ToolAnnotations{Title: "Search products", ReadOnlyHint: true, OpenWorldHint: &f},
	}, s.toolSearch)
	t := true
	srv.AddTool(&mcp.Tool{
		Name:        "exchange_item",
		Description: "Exchange an item of an order for another product. Needs the user's approval (Operations extension v2).",
		InputSchema: json.RawMessage(`{"type":"object","required":["order_id","item_id","replacement_sku"],"properties":{"order_id":{"type":"string"},"item_id":{"type":"string"},"replacement_sku":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{Title: "Exchange an item", DestructiveHint: &t, OpenWorldHint: &f},
	}, s.toolExchange)
	// The listener serves only the reference Company's dev host names, so the SDK's DNS rebinding
	// guard (which admits only the literal "localhost" Host) is replaced by Host routing.
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true, Logger: s.log})
}

func (s *Server) toolSearch(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return toolError("arguments must be an object with a string query"), nil
		}
	}
	q := strings.ToLower(in.Query)
	var found []any
	var names []string
	for _, sku := range []string{"stormline-m", "stormline-insulated-m", "stormline-insulated-l", "trail-socks"} {
		p := catalog[sku]
		if q == "" || strings.Contains(strings.ToLower(p.Name), q) {
			found = append(found, map[string]any{"sku": p.SKU, "name": p.Name, "price": map[string]any{"amount": money(p.Cents), "currency": "USD"}})
			names = append(names, p.Name)
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "Found: " + strings.Join(names, ", ")}},
		StructuredContent: map[string]any{"products": found},
	}, nil
}

func (s *Server) toolExchange(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	st := s.ops()
	var key string
	if req.Extra != nil {
		key = req.Extra.Header.Get("Poppy-Session")
	}
	st.mu.Lock()
	c, ok := st.calls[key]
	st.mu.Unlock()
	if !ok {
		return toolError("this tool needs a verified Poppy Session (spec 5.3)"), nil
	}
	if !c.declared && !s.operationsRegardless() { // the faults: hostile.go
		// Operations 2: a tool that needs the extension returns an ordinary tool error.
		return toolError(`exchange_item needs the user's approval through the operations extension: declare "operations";v="2" in Poppy-Extensions, or exchange the item on the shop's website`), nil
	}
	var ask exchangeAsk
	if err := json.Unmarshal(req.Params.Arguments, &ask); err != nil || ask.OrderID == "" || ask.ItemID == "" || ask.ReplacementSKU == "" {
		return toolError("arguments must be an object with order_id, item_id and replacement_sku strings"), nil
	}
	var appr *approvalRef
	if v, ok := req.Params.Meta[ApprovalMetaKey]; ok {
		b, _ := json.Marshal(v)
		var a struct {
			OperationID string `json:"operation_id"`
			Revision    string `json:"revision"`
		}
		if json.Unmarshal(b, &a) != nil || a.OperationID == "" || a.Revision == "" {
			return toolError(`_meta "` + ApprovalMetaKey + `" must be an object with operation_id and revision strings (Operations 6)`), nil
		}
		appr = &approvalRef{OperationID: a.OperationID, Revision: a.Revision}
	}
	out := st.exchange(c.p.Caller, InterfaceMCP, ask, appr)
	switch out.kind {
	case outNeedApproval:
		// Operations 4 (MCP): isError, the operation in structuredContent, the summary as text.
		return &mcp.CallToolResult{
			IsError:           true,
			Content:           []mcp.Content{&mcp.TextContent{Text: "Not done yet. This needs the user's approval: " + out.op.Summary}},
			StructuredContent: map[string]any{"operation": out.op},
		}, nil
	case outInProgress:
		// Operations 7: not a failure; the work has not finished.
		return &mcp.CallToolResult{
			IsError:           true,
			Content:           []mcp.Content{&mcp.TextContent{Text: "The exchange is being performed. Call the tool again with the same approval in a second."}},
			StructuredContent: map[string]any{"status": "in_progress", "retry_after": 1},
		}, nil
	case outChallenge:
		return toolError("sign in to the account this exchange belongs to (orders:write), then call again"), nil
	case outFailed:
		return toolError(out.code + ": " + out.desc), nil
	default: // performed now, or earlier (the same response)
		var sc map[string]any
		json.Unmarshal(out.result, &sc)
		msg, _ := sc["message"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, StructuredContent: sc}, nil
	}
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
