package operator

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"errors"
	"math/big"
	"testing"

	"github.com/cloudflare/circl/blindsign/blindrsa"
)

// TestCRTSignerMatchesCircl: for 2048- and 3072-bit keys and random messages blinded by circl's
// client, the CRT signer's blind signature is byte for byte circl's (RSASP1 has one answer), it
// unblinds with circl's Finalize, and the signature verifies with crypto/rsa's own PSS verifier
// as PS384 — an implementation that shares no code with either signer.
func TestCRTSignerMatchesCircl(t *testing.T) {
	for _, bits := range []int{2048, 3072} {
		priv, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		crt, err := newCRTSigner(priv)
		if err != nil {
			t.Fatal(err)
		}
		client, err := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, &priv.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		ref := blindrsa.NewSigner(priv)
		for i := range 8 {
			msg := make([]byte, 40+i)
			rand.Read(msg)
			blinded, state, err := client.Blind(rand.Reader, msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := crt.BlindSign(blinded)
			if err != nil {
				t.Fatalf("%d bits: %v", bits, err)
			}
			want, err := ref.BlindSign(blinded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bits, message %d: the CRT blind signature differs from circl's", bits, i)
			}
			sig, err := client.Finalize(state, got)
			if err != nil {
				t.Fatalf("circl's Finalize refuses the CRT signature: %v", err)
			}
			h := sha512.Sum384(msg)
			if err := rsa.VerifyPSS(&priv.PublicKey, crypto.SHA384, h[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}); err != nil {
				t.Fatalf("crypto/rsa does not verify the unblinded signature as PS384: %v", err)
			}
		}
	}
}

// TestCRTSignerRange: RFC 9474 §4.3's input check and the trivial values, with their words;
// values just inside the range are signed.
func TestCRTSignerRange(t *testing.T) {
	priv, _ := rsa.GenerateKey(rand.Reader, 2048)
	s, err := newCRTSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	val := func(x *big.Int) []byte { return x.FillBytes(make([]byte, 256)) }
	n := priv.N
	nm1, nm2 := new(big.Int).Sub(n, big.NewInt(1)), new(big.Int).Sub(n, big.NewInt(2))
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 2048), big.NewInt(1))
	for _, tc := range []struct {
		name string
		in   []byte
		want string // "" : signed
	}{
		{"short", make([]byte, 255), "must be 256 bytes"},
		{"long", make([]byte, 257), "must be 256 bytes"},
		{"n", val(n), "not below the key's modulus"},
		{"2^2048-1", val(max), "not below the key's modulus"},
		{"0", val(big.NewInt(0)), "0, 1 or n−1"},
		{"1", val(big.NewInt(1)), "0, 1 or n−1"},
		{"n-1", val(nm1), "0, 1 or n−1"},
		{"2", val(big.NewInt(2)), ""},
		{"n-2", val(nm2), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.BlindSign(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want))):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCRTSignerFaultCheck: a fault in one half of the CRT (here a corrupted dq, as a bit flip
// in memory would make) gives a value whose gcd with n is a prime factor; the signer's check
// catches it and returns nothing.
func TestCRTSignerFaultCheck(t *testing.T) {
	priv, _ := rsa.GenerateKey(rand.Reader, 2048)
	s, err := newCRTSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, &priv.PublicKey)
	blinded, _, _ := client.Blind(rand.Reader, []byte("a signing input"))
	if _, err := s.BlindSign(blinded); err != nil {
		t.Fatal(err)
	}
	s.dq = new(big.Int).Xor(s.dq, big.NewInt(1<<10))
	sig, err := s.BlindSign(blinded)
	if !errors.Is(err, errFault) || sig != nil {
		t.Fatalf("with a faulty dq: %x, %v; want no signature and the fault error", sig, err)
	}
}
