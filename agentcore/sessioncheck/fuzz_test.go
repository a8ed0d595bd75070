package sessioncheck_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// FuzzVerify feeds arbitrary Poppy-Session, Poppy-Version and Poppy-Extensions values (and
// mutations of a valid Session JWT) to Verify: it must never panic, and must never accept a
// header it did not see signed.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	valid := fx.mint(fx.valid("GET", "/api/orders", ""))
	f.Add(valid, "0.4", `"operations";v="2"`)
	f.Add("", "", "")
	f.Add("a.b.c", "0.4", `"operations";v=`)
	f.Add("eyJhbGciOiJub25lIn0.e30.", "1.0", `?1, ("a" "b");v=2`)
	f.Add(valid[:len(valid)-3], "0.4.1", `"x";v="1";v="2"`)
	// A fresh Session JWT (its own jti) whose signature is another JWT's: everything but the
	// signature is valid.
	other, fresh := fx.mint(fx.valid("GET", "/api/orders", "")), fx.mint(fx.valid("GET", "/api/orders", ""))
	f.Add(fresh[:strings.LastIndexByte(fresh, '.')]+other[strings.LastIndexByte(other, '.'):], "0.4", `"operations";v="2"`)
	f.Fuzz(func(t *testing.T, jwt, version, ext string) {
		req, err := http.NewRequest("GET", fx.srv.URL+"/api/orders", nil)
		if err != nil {
			t.Skip()
		}
		req.TLS = nil
		req.Header["Poppy-Session"] = []string{jwt}
		req.Header["Poppy-Version"] = []string{version}
		req.Header["Poppy-Extensions"] = []string{ext}
		s, err := fx.ver.Verify(context.Background(), req, "", "")
		if err == nil && jwt != valid {
			// Only the one valid JWT can be accepted (once); anything else is a forgery.
			t.Fatalf("accepted an unsigned header: %q → %+v", jwt, s)
		}
	})
}
