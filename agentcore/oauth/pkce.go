package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// newVerifier returns a PKCE code verifier: 32 random bytes, base64url without padding, 43
// characters (RFC 7636 §4.1).
func newVerifier() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms (Go 1.24+ panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// challengeS256 is the S256 code challenge of verifier (RFC 7636 §4.2).
func challengeS256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
