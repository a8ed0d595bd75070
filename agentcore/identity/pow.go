package identity

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
)

// Proof of work at open enrollment. An operator that lets any device enroll asks each to spend
// a little CPU first, so one client cannot enroll thousands of devices (each with its own
// signature quota) for free; per-address and per-network limits do the rest. The operator
// advertises the difficulty in its configuration (OperatorConfig.EnrollPoW); [Enroll] solves it
// with the new device key and sends the answer in EnrollRequest.PoW.
//
// The work is bound to the operator's enroll endpoint and the device key's RFC 7638
// thumbprint, and an operator enrolls each key once, so one answer enrolls one device: the
// smallest decimal nonce such that SHA-256(PoWContext ‖ 0 ‖ endpoint ‖ 0 ‖ thumbprint ‖ 0 ‖
// nonce) starts with Bits zero bits. About 2^Bits hashes: 20 bits take a fraction of a second.

// PoWAlg names the proof of work above.
const PoWAlg = "sha256-leading-zero-bits"

// PoWContext separates these hashes from any other use of SHA-256.
const PoWContext = "poppydesk-enroll-pow"

// MaxEnrollPoWBits is the most work a device does to enroll (2^26 hashes, seconds on a
// laptop); an operator asking for more is refused with words.
const MaxEnrollPoWBits = 26

// OperatorPoW is the proof of work an operator asks of every enrollment.
type OperatorPoW struct {
	Alg  string `json:"alg"`  // PoWAlg
	Bits int    `json:"bits"` // leading zero bits of the hash
}

func powDigest(endpoint, thumbprint, nonce string) [32]byte {
	h := sha256.New()
	for _, part := range []string{PoWContext, endpoint, thumbprint} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write([]byte(nonce))
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func leadingZeros(d [32]byte) int {
	n := 0
	for i := 0; i < 32; i += 8 {
		w := binary.BigEndian.Uint64(d[i:])
		n += bits.LeadingZeros64(w)
		if w != 0 {
			break
		}
	}
	return n
}

// CheckEnrollPoW says whether nonce is a proof of work of at least want bits for the device key
// with thumbprint at the enroll endpoint.
func CheckEnrollPoW(endpoint, thumbprint, nonce string, want int) bool {
	if want <= 0 {
		return true
	}
	if nonce == "" || len(nonce) > 20 {
		return false
	}
	return leadingZeros(powDigest(endpoint, thumbprint, nonce)) >= want
}

// SolveEnrollPoW finds the proof of work of want bits, or stops when ctx ends.
func SolveEnrollPoW(ctx context.Context, endpoint, thumbprint string, want int) (string, error) {
	if want <= 0 {
		return "", nil
	}
	if want > MaxEnrollPoWBits {
		return "", fmt.Errorf("the operator asks for a proof of work of %d bits to enroll, which would keep this computer busy for a long time; "+
			"Poppydesk does at most %d bits. Ask the operator's administrator for an enrollment token, or use another operator", want, MaxEnrollPoWBits)
	}
	for n := uint64(0); ; n++ {
		if n%(1<<16) == 0 && ctx.Err() != nil {
			return "", errors.New("enrolling was stopped while Poppydesk computed the operator's proof of work")
		}
		nonce := strconv.FormatUint(n, 10)
		if leadingZeros(powDigest(endpoint, thumbprint, nonce)) >= want {
			return nonce, nil
		}
	}
}
