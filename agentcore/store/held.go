package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// HeldSecrets lists every secret value the secret store holds — the root keys, and for every
// Company and account its User ID, Agent ID, delegated and DPoP private keys and every access and
// refresh token, and the device's enrollment key — so that text leaving Poppydesk (a feedback
// report, spec 9.3, 10.2) can be cleaned of each of them. A private key is listed as its JSON and
// as each of its private members (d, p, q, dp, dq, qi, k). Values shorter than 8 characters are
// left out: no secret here is that short, and a short value would match ordinary words.
func HeldSecrets(ctx context.Context, s Secrets) ([]string, error) {
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if len(v) >= 8 {
				out = append(out, v)
			}
		}
	}
	addKey := func(raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		add(string(raw))
		var k map[string]any
		if json.Unmarshal(raw, &k) != nil {
			return
		}
		for _, m := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
			if v, ok := k[m].(string); ok {
				add(v)
			}
		}
	}
	root, err := s.LoadRoot(ctx)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("reading the root keys from the secret store: %w", err)
	default:
		for _, k := range root.Keys {
			addKey(k)
		}
	}
	pairs, err := s.Companies(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the accounts in the secret store: %w", err)
	}
	for _, p := range pairs {
		b, err := s.LoadCompany(ctx, p[0], p[1])
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading an account from the secret store: %w", err)
		}
		add(b.UserID, b.AgentID)
		for _, d := range b.Delegated {
			addKey(d.PrivateJWK)
		}
		addKey(b.DPoPKey)
		for _, t := range b.Tokens {
			add(t.AccessToken, t.RefreshToken)
		}
	}
	dev, err := s.LoadDevice(ctx)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("reading the device's enrollment from the secret store: %w", err)
	default:
		addKey(dev.PrivateJWK)
	}
	return out, nil
}
