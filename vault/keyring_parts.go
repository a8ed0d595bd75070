package vault

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A value longer than its platform's item limit (keyring_platform.go) is kept in parts: the
// item itself then holds a manifest naming a slot ("a" or "b"), the number of parts and the
// SHA-256 of the whole encoded value, and the parts are items of their own named
// "_poppydesk_part:SLOT:I:NAME". A write puts the parts in the slot the current manifest does not
// name, then replaces the manifest in one keyring call, then deletes the old slot's parts. So a
// reader (or a crash at any step) sees the old value or the new one, never a mix: until the
// manifest is replaced the old manifest and its parts are untouched, and after it the new parts
// are complete. A crash can leave parts no manifest names; the next write of the item overwrites
// or deletes them, and Delete and DeleteAll remove them.
const (
	// partsPrefix starts a manifest. encodeValue never leaves a value starting with it as is.
	partsPrefix = "poppydesk-parts:"
	// reservedPrefix starts the names of the vault's own items (the index and parts), which
	// callers cannot use.
	reservedPrefix = "_poppydesk_"
	// partPrefix starts the name of a part.
	partPrefix = reservedPrefix + "part:"
	// maxParts bounds the parts of one value (MaxItemSize in base64 needs at most 35 parts of
	// the Windows limit).
	maxParts = 64
	// partMinSize is the smallest item limit the vault splits into parts for.
	partMinSize = 256
)

// layout is how an item's value is stored: slot 0 for one item, else the slot and count of its
// parts.
type layout struct {
	slot byte
	n    int
}

func partName(slot byte, i int, name string) string {
	return partPrefix + string(slot) + ":" + strconv.Itoa(i) + ":" + name
}

func otherSlot(slot byte) byte {
	if slot == 'a' {
		return 'b'
	}
	return 'a'
}

func checksum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func manifest(l layout, sum string) string {
	return partsPrefix + "1:" + string(l.slot) + ":" + strconv.Itoa(l.n) + ":" + sum
}

// parseManifest reads a stored string: ok is false for a value stored in one item.
func parseManifest(s string) (l layout, sum string, ok bool, err error) {
	rest, ok := strings.CutPrefix(s, partsPrefix)
	if !ok {
		return layout{}, "", false, nil
	}
	f := strings.Split(rest, ":")
	if len(f) != 4 || f[0] != "1" || (f[1] != "a" && f[1] != "b") {
		return layout{}, "", true, fmt.Errorf("its manifest %q is not one this build of Poppydesk writes", s)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 1 || n > maxParts {
		return layout{}, "", true, fmt.Errorf("its manifest %q names %q parts", s, f[2])
	}
	return layout{slot: f[1][0], n: n}, f[3], true, nil
}

// splitUTF8 cuts s into pieces of at most size bytes at rune boundaries, so that each piece is
// valid UTF-8 text for keyrings that store text.
func splitUTF8(s string, size int) []string {
	var out []string
	for len(s) > size {
		n := size
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// canSplit reports whether values on this Keyring's platform can need parts.
func (k *Keyring) canSplit() bool {
	n, err := itemLimit(k.platform, k.service, "")
	return err != nil || n < maxEncodedSize
}

// readItem reads item name and, for a manifest, its parts. It runs under the item's lock.
func (k *Keyring) readItem(name string) (string, layout, error) {
	s, err := k.backend.Get(k.service, name)
	if err != nil {
		return "", layout{}, err
	}
	l, sum, ok, err := parseManifest(s)
	if !ok {
		return s, layout{}, nil
	}
	if err != nil {
		return "", layout{}, k.partsError(name, err)
	}
	var b strings.Builder
	for i := range l.n {
		p, err := k.backend.Get(k.service, partName(l.slot, i, name))
		if isNotFound(err) {
			return "", layout{}, k.partsError(name, fmt.Errorf("part %d of %d (item %q) is missing", i+1, l.n, partName(l.slot, i, name)))
		}
		if err != nil {
			return "", layout{}, err
		}
		b.WriteString(p)
	}
	if checksum(b.String()) != sum {
		return "", layout{}, k.partsError(name, fmt.Errorf("its %d parts do not add up to the value its manifest names", l.n))
	}
	return b.String(), l, nil
}

func (k *Keyring) partsError(name string, err error) error {
	return &badValueError{fmt.Errorf("keyring item %q of service %q is kept in parts, and %w; something other than this Poppydesk changed its keyring items. Sign in to that Company again, or reset Poppydesk (`poppydesk reset`)", name, k.service, err)}
}

// currentLayout is how item name is stored now: from the cache, or read from the keyring on
// platforms where values can be in parts. It runs under the item's lock.
func (k *Keyring) currentLayout(name string) (layout, error) {
	k.mu.Lock()
	c, ok := k.cache[name]
	k.mu.Unlock()
	if ok || !k.canSplit() {
		return c.layout, nil
	}
	s, err := k.backend.Get(k.service, name)
	if isNotFound(err) {
		return layout{}, nil
	}
	if err != nil {
		return layout{}, err
	}
	l, _, _, err := parseManifest(s)
	if err != nil {
		return layout{}, k.partsError(name, err)
	}
	return l, nil
}

// writeItem stores enc as item name, in parts when it exceeds the platform's item limit, and
// returns the new layout. old is the current layout. It runs under the item's lock.
func (k *Keyring) writeItem(name, enc string, old layout) (layout, error) {
	limit, err := itemLimit(k.platform, k.service, name)
	if err != nil {
		return layout{}, err
	}
	if len(enc) <= limit {
		if err := k.backend.Set(k.service, name, enc); err != nil {
			return layout{}, err
		}
		k.dropParts(name, old.slot, 0)
		return layout{}, nil
	}
	slot := otherSlot(old.slot)
	size, err := itemLimit(k.platform, k.service, partName(slot, maxParts-1, name))
	if err != nil {
		return layout{}, err
	}
	parts := splitUTF8(enc, size)
	if len(parts) > maxParts {
		return layout{}, fmt.Errorf("keyring item %q needs %d parts of %d bytes in the %s, more than the %d Poppydesk writes; nothing was stored", name, len(parts), size, keyringName(k.platform), maxParts)
	}
	for i, p := range parts {
		if err := k.backend.Set(k.service, partName(slot, i, name), p); err != nil {
			return layout{}, err
		}
	}
	l := layout{slot: slot, n: len(parts)}
	if err := k.backend.Set(k.service, name, manifest(l, checksum(enc))); err != nil {
		return layout{}, err
	}
	k.dropParts(name, old.slot, 0)
	k.dropParts(name, slot, len(parts))
	return l, nil
}

// dropParts deletes the parts of item name in slot from index from on, until one is absent.
// Failures are logged: a part left behind is overwritten or deleted later.
func (k *Keyring) dropParts(name string, slot byte, from int) {
	if slot == 0 {
		return
	}
	for i := from; i < maxParts; i++ {
		err := k.backend.Delete(k.service, partName(slot, i, name))
		if isNotFound(err) {
			return
		}
		if err != nil {
			k.log.Warn("keyring: could not delete a part no longer used; it is deleted at the next write or reset", "item", name, "part", i, "err", err)
			return
		}
	}
}

// errTooBig is the error of a value above MaxItemSize.
func errTooBig(name string, size int) error {
	return fmt.Errorf("keyring item %q: the value is %d bytes, more than the %d bytes Poppydesk keeps per item in the OS keyring, so it was not stored and the previous value is unchanged; "+
		"the usual cause is a Company issuing unusually large tokens: %w", name, size, MaxItemSize, ErrValueTooBig)
}

// ErrValueTooBig is matched by the error of a value that Poppydesk does not store because it is
// larger than MaxItemSize.
var ErrValueTooBig = errors.New("value too big for the OS keyring")
