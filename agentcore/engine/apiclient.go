package engine

import (
	"context"

	"github.com/poppydesk/poppydesk/agentcore/apis"
)

// APIs is the agentcore/apis Client of this Client's Session, as [Engine.APIClient] returns it.
// Kept for callers written against it (agentcore/modelapi); new code uses Engine.APIClient.
func (c *Client) APIs() (*apis.Client, error) { return c.apiClient() }

// AccessToken returns the account's access token for rawURL ("" when signed out), as
// [Client.TokenFunc] does. Kept for callers written against it; never log, store or return it to
// the model (docs/DESIGN.md invariant 5).
func (c *Client) AccessToken(ctx context.Context, rawURL string) (string, error) {
	return c.TokenFunc(rawURL)(ctx)
}
