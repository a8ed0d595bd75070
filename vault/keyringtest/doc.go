// Package keyringtest holds the vault's tests against a REAL Secret Service (spec 10.2: secrets
// stay in the OS keyring) and the canary test that no secret reaches a file. It has no code of
// its own. It is a package apart because go-keyring's MockInit switches a whole test binary to
// the mock; nothing here calls it.
//
// Run with a throwaway gnome-keyring: `bash scripts/with-keyring.sh go test ./vault/...`. Without
// a reachable Secret Service the tests skip, unless POPPYDESK_REQUIRE_KEYRING=1 (set by that
// script) turns the skip into a failure.
package keyringtest
