package webbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkCall measures one bridge call over loopback HTTP (JSON, auth checks, reflection)
// against the baseline of calling the same method directly and encoding its result.
func BenchmarkCall(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, "127.0.0.1:0", Config{Assets: testAssets, Bind: []any{&Calc{}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := &http.Client{}
	body := `{"name":"webbridge.Calc.Greet","args":[{"name":"Ada"}]}`
	httpCall := func(b *testing.B) {
		req, _ := http.NewRequest("POST", s.Origin()+callPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.AddCookie(&http.Cookie{Name: CookieName, Value: s.Token()})
		res, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	args := []json.RawMessage{json.RawMessage(`{"name":"Ada"}`)}
	dispatch := func(b *testing.B) {
		if _, _, err := s.call("webbridge.Calc.Greet", args); err != nil {
			b.Fatal(err)
		}
	}
	calc := &Calc{}
	direct := func(*testing.B) {
		var p Person
		_ = json.Unmarshal([]byte(`{"name":"Ada"}`), &p)
		r, _ := calc.Greet(p)
		_, _ = json.Marshal(callResult{Result: r})
	}
	benchratio.RunCPU(b, "bridge-http", "direct", httpCall, direct)
	benchratio.RunCPU(b, "bridge-dispatch-only", "direct", dispatch, direct)
}
