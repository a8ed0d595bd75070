package modelapi

// Which agent asked: the MCP client's name and version from its initialize request (MCP
// lifecycle, clientInfo) and the way it reached the socket, recorded per MCP session and carried
// with every request that can become an approval, so the window can say "Claude Code 2.1 via
// poppydesk mcp". A client names itself: the words are the client's claim, never verified, and
// never a reason to trust a request.

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ways a model's session reaches the socket (Client.Via).
const (
	// ViaRelay: through `poppydesk mcp`, the stdio relay an MCP client launches.
	ViaRelay = "poppydesk mcp"
	// ViaSocket: a client that connected to the socket itself.
	ViaSocket = "the model socket"
)

// maxClientText bounds each word of a client's self-description kept for the window.
const maxClientText = 80

// Client is the agent behind an MCP session, as it described itself in initialize.
type Client struct {
	Name, Version string
	// Via is how it reached Poppydesk ([ViaRelay], [ViaSocket]; "" when not known, as for a
	// session served in-process).
	Via string
}

// Label is the client in a few words, e.g. "Claude Code 2.1 via poppydesk mcp" ("" when the
// client gave no name).
func (c Client) Label() string {
	if c.Name == "" {
		return ""
	}
	s := c.Name
	if c.Version != "" {
		s += " " + c.Version
	}
	if c.Via != "" {
		s += " via " + c.Via
	}
	return s
}

type viaKey struct{}
type clientKey struct{}

// withVia records on a connection's context how the session reached the socket; the SDK's
// request contexts derive from it.
func withVia(ctx context.Context, via string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}

// withClient records the session's client on a tool call's context.
func withClient(ctx context.Context, ss *mcp.ServerSession) context.Context {
	c := Client{}
	c.Via, _ = ctx.Value(viaKey{}).(string)
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			name := p.ClientInfo.Title
			if name == "" {
				name = p.ClientInfo.Name
			}
			c.Name, c.Version = clientText(name), clientText(p.ClientInfo.Version)
		}
	}
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientFrom is the client of the tool call ctx belongs to (zero outside one).
func ClientFrom(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// clientText keeps a client's word printable, on one line and short.
func clientText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0xfeff {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if utf8.RuneCountInString(s) > maxClientText {
		s = string([]rune(s)[:maxClientText]) + "…"
	}
	return s
}
