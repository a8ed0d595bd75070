package operator

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sync"
)

// crtSigner computes RFC 9474 §4.3 BlindSign — RSASP1(sk, m) on the blinded message — with the
// Chinese remainder theorem, and checks every result before it leaves (RSAVP1(pk, s) == m), so
// that a computation fault never hands out a value that would reveal a prime factor.
//
// It is written here, over math/big, because no well-kept library offers it: circl's
// blindrsa.Signer exponentiates with d modulo n without CRT (about four times the work), and
// crypto/rsa, whose CRT arithmetic is constant-time, exposes no RSA operation on a raw value
// (every one of its functions pads its input first). The steps are those of Go's crypto/rsa
// before Go 1.20, which were math/big with CRT too, with base blinding (m·r^e for a random r,
// unblinded with r⁻¹), so the timing of math/big's variable-time arithmetic does not depend on
// the value a device sends; circl's signer blinds too. TestCRTSignerMatchesCircl checks it
// against circl's output and crypto/rsa's PSS verifier, TestRFC9474Vector against RFC 9474
// A.3, and TestCRTSignerFaultCheck breaks it on purpose.
type crtSigner struct {
	n, e               *big.Int
	p, q, dp, dq, qinv *big.Int
	nMinus1            *big.Int // n−1
	size               int      // the modulus in bytes
	random             io.Reader

	// The blinding pair (r^e, r⁻¹ mod n), squared after each use and drawn afresh every
	// blindingUses signatures, as OpenSSL's BN_BLINDING does: squaring keeps both halves
	// matching at the cost of two multiplications, where a fresh pair costs an inversion and an
	// exponentiation (about a tenth of a signature).
	mu        sync.Mutex
	blindE    *big.Int
	blindInv  *big.Int
	blindLeft int
}

// blindingUses is how many signatures one drawn blinding pair serves, squared each time.
const blindingUses = 32

// errFault is a signature that did not check: the computation went wrong (a hardware or
// memory fault, or a corrupted key). Nothing is returned with it.
var errFault = errors.New("the blind signature did not verify before it was returned (a computation fault); nothing was sent")

func newCRTSigner(k *rsa.PrivateKey) (*crtSigner, error) {
	if len(k.Primes) != 2 {
		return nil, fmt.Errorf("the RSA key has %d primes; an operator's key has two", len(k.Primes))
	}
	k.Precompute()
	if k.Precomputed.Dp == nil || k.Precomputed.Dq == nil || k.Precomputed.Qinv == nil {
		return nil, errors.New("the RSA key's CRT values cannot be computed")
	}
	s := &crtSigner{n: k.N, e: big.NewInt(int64(k.E)), p: k.Primes[0], q: k.Primes[1],
		dp: k.Precomputed.Dp, dq: k.Precomputed.Dq, qinv: k.Precomputed.Qinv, size: (k.N.BitLen() + 7) / 8, random: rand.Reader}
	s.nMinus1 = new(big.Int).Sub(s.n, big.NewInt(1))
	return s, nil
}

// errBlindedRange is a blinded message outside what a device's honest Blind produces.
type errBlindedRange struct{ why string }

func (e *errBlindedRange) Error() string { return e.why }

// checkBlinded says whether blinded is a value a device's RFC 9474 Blind can produce: exactly
// the modulus's length (§4.3 step 1 needs len(blind_msg) == modulus_len), below n (step 2,
// RSASP1's range), and none of 0, 1 and n−1, whose signatures are themselves (0 and 1) or
// ±1 and which only a broken or hostile device sends.
func (s *crtSigner) checkBlinded(blinded []byte) (*big.Int, error) {
	if len(blinded) != s.size {
		return nil, &errBlindedRange{fmt.Sprintf("blinded_msg must be %d bytes (the key's modulus length), base64url-encoded; it has %d", s.size, len(blinded))}
	}
	m := new(big.Int).SetBytes(blinded)
	switch {
	case m.Cmp(s.n) >= 0:
		return nil, &errBlindedRange{"blinded_msg is not below the key's modulus, so it is no blinded message for this key (RFC 9474 §4.3)"}
	case m.Sign() == 0 || m.Cmp(big.NewInt(1)) == 0 || m.Cmp(s.nMinus1) == 0:
		return nil, &errBlindedRange{"blinded_msg is 0, 1 or n−1, which no honest device's blinding produces"}
	}
	return m, nil
}

// BlindSign returns RSASP1(sk, blinded) as modulus-length bytes, after checkBlinded.
func (s *crtSigner) BlindSign(blinded []byte) ([]byte, error) {
	m, err := s.checkBlinded(blinded)
	if err != nil {
		return nil, err
	}
	rE, rInv, err := s.blinding()
	if err != nil {
		return nil, err
	}
	// c = m·r^e mod n: c^d = m^d·r, unblinded below.
	c := rE.Mul(rE, m)
	c.Mod(c, s.n)
	m1 := new(big.Int).Mod(c, s.p)
	m1.Exp(m1, s.dp, s.p)
	m2 := new(big.Int).Mod(c, s.q)
	m2.Exp(m2, s.dq, s.q)
	// Garner: sig = m2 + q·((m1 − m2)·qinv mod p).
	h := m1.Sub(m1, m2)
	h.Mul(h, s.qinv).Mod(h, s.p)
	sig := h.Mul(h, s.q).Add(h, m2)
	sig.Mul(sig, rInv).Mod(sig, s.n)
	// The fault check (RFC 9474 §4.3 step 4): s^e must give back m.
	if new(big.Int).Exp(sig, s.e, s.n).Cmp(m) != 0 {
		return nil, errFault
	}
	return sig.FillBytes(make([]byte, s.size)), nil
}

// blinding returns a pair (r^e, r⁻¹) mod n for one signature, the caller's to change.
func (s *crtSigner) blinding() (*big.Int, *big.Int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blindLeft == 0 {
		for {
			r, err := rand.Int(s.random, s.n)
			if err != nil {
				return nil, nil, fmt.Errorf("reading randomness: %w", err)
			}
			if rInv := new(big.Int).ModInverse(r, s.n); r.Sign() != 0 && rInv != nil {
				s.blindE, s.blindInv, s.blindLeft = r.Exp(r, s.e, s.n), rInv, blindingUses
				break
			}
		}
	} else {
		s.blindE.Mul(s.blindE, s.blindE).Mod(s.blindE, s.n)
		s.blindInv.Mul(s.blindInv, s.blindInv).Mod(s.blindInv, s.n)
	}
	s.blindLeft--
	return new(big.Int).Set(s.blindE), new(big.Int).Set(s.blindInv), nil
}
