package store

import (
	"context"
	"encoding/json"
	"time"
)

// KV is a store of secret items: the OS keyring in production (vault.Keyring). Values are opaque
// bytes. Get returns an error matching fs.ErrNotExist when the item is absent. Set replaces the
// whole value atomically. Names lists every item this application stored; DeleteAll removes them.
// Every call must be bounded by a timeout and by ctx.
type KV interface {
	Get(ctx context.Context, name string) ([]byte, error)
	Set(ctx context.Context, name string, value []byte) error
	Delete(ctx context.Context, name string) error
	Names(ctx context.Context) ([]string, error)
	DeleteAll(ctx context.Context) error
}

// BundleVersion is the current format version of the JSON values kept in the keyring.
const BundleVersion = 1

// RootBundle is the self-operated operator's root key material (spec 4.1, 5.2). One keyring item.
type RootBundle struct {
	Version int `json:"v"`
	// Keys are private JWKs (JSON), newest first. The first one signs new delegations and
	// client assertions; older ones stay published in the JWKS until their delegations expire.
	Keys []json.RawMessage `json:"keys"`
	// Created is when the newest key was generated.
	Created time.Time `json:"created"`
}

// DelegatedKey is one delegated P-256 key with its delegation (spec 5.2, Delegated keys).
// It signs Session JWTs for exactly one User ID.
type DelegatedKey struct {
	PrivateJWK json.RawMessage `json:"private_jwk"`
	Thumbprint string          `json:"kid"`
	Delegation string          `json:"delegation"` // compact JWT
	NotAfter   time.Time       `json:"not_after"`  // delegation exp
}

// Token is one access/refresh token set for a resource (spec 4.4, 4.5, 4.7).
type Token struct {
	Resource     string    `json:"resource"` // "" for https://{organization.domain}
	AccessToken  string    `json:"access_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"` // Bearer or DPoP
	RefreshToken string    `json:"refresh_token,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitempty"`
}

// CompanyBundle is everything secret Poppydesk holds for one (Company identifier, account).
// Account "" is the signed-out identity of the User at that Company. One keyring item, so that
// opening a Company costs one Secret Service round trip.
type CompanyBundle struct {
	Version      int             `json:"v"`
	UserID       string          `json:"user_id"`
	AgentID      string          `json:"agent_id,omitempty"`
	Delegated    []DelegatedKey  `json:"delegated,omitempty"` // newest last
	DPoPKey      json.RawMessage `json:"dpop_key,omitempty"`  // private JWK
	Tokens       []Token         `json:"tokens,omitempty"`
	AccountLabel string          `json:"account_label,omitempty"` // what the user calls the account
}

// DeviceBundle is this device's enrollment with a remote operator that signs blindly (spec
// 10.7, RFC 9474): the operator's published identity, its endpoints, and the device key that
// authenticates the device's requests to it. One keyring item; at most one enrollment at a time.
type DeviceBundle struct {
	Version int `json:"v"`
	// Operator is the operator's base URL, e.g. https://operator.example.
	Operator string `json:"operator"`
	// DeviceID names this device at the operator.
	DeviceID string `json:"device_id"`
	// PrivateJWK is the device's P-256 private key (JSON).
	PrivateJWK json.RawMessage `json:"private_jwk"`
	// ClientID and JWKSURI are the operator's published identity (spec 4.1), ClientName its
	// client_name; SignEndpoint is where blind signatures are asked for.
	ClientID     string `json:"client_id"`
	ClientName   string `json:"client_name,omitempty"`
	JWKSURI      string `json:"jwks_uri"`
	SignEndpoint string `json:"sign_endpoint"`
	// Enrolled is when the device enrolled.
	Enrolled time.Time `json:"enrolled"`
}

// Secrets keeps secret bundles. Implementations must be safe for concurrent use, must make each
// write atomic per item (a reader sees the old bundle or the new one, never a mix or nothing),
// and must bound every call with a timeout so a locked or absent keyring cannot hang the caller.
type Secrets interface {
	LoadRoot(ctx context.Context) (*RootBundle, error)
	SaveRoot(ctx context.Context, b *RootBundle) error

	LoadCompany(ctx context.Context, company, account string) (*CompanyBundle, error)
	// UpdateCompany reads the bundle (an empty one with Version set if none exists), calls fn,
	// and stores the result atomically. If fn returns an error nothing is stored.
	UpdateCompany(ctx context.Context, company, account string, fn func(*CompanyBundle) error) (*CompanyBundle, error)
	DeleteCompany(ctx context.Context, company, account string) error
	// Companies lists the (company, account) pairs that have a bundle.
	Companies(ctx context.Context) ([][2]string, error)

	// LoadDevice reads this device's enrollment with a remote operator (ErrNotFound without
	// one); SaveDevice replaces it; DeleteDevice removes it (no error when there is none).
	LoadDevice(ctx context.Context) (*DeviceBundle, error)
	SaveDevice(ctx context.Context, b *DeviceBundle) error
	DeleteDevice(ctx context.Context) error

	// Reset deletes every item Poppydesk keeps ("reset Poppydesk").
	Reset(ctx context.Context) error
}
