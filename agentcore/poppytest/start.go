package poppytest

import "context"

// TB is the part of testing.TB that Start uses. *testing.T, *testing.B and *testing.F satisfy
// it. poppytest takes this interface rather than testing.TB because the product links poppytest
// for its demo (app/demo.go), and the testing package has no place in the product's binary; it
// is net/http/httptest's reason for taking no testing.TB, kept with a one-call fixture.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start builds the reference Company with opts, serves it on loopback and stops it at the end of
// the test (t.Cleanup); a Company that cannot start fails the test. It is New and Start in one
// call, for tests.
func Start(t TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("building the reference Company: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting the reference Company: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
