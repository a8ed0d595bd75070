package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
)

const jwt = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"

func TestJSON(t *testing.T) {
	tests := []struct {
		name, in string
		secret   string
		keep     string
	}{
		{"token field", `{"access_token":"AT-123","token_type":"Bearer"}`, "AT-123", "Bearer"},
		{"nested", `{"a":{"refresh_token":"RT-9"},"b":[{"code":"C-1"}]}`, "RT-9", `"a"`},
		{"jwt anywhere", `{"note":"` + jwt + `"}`, jwt, "note"},
		{"private jwk", `{"kty":"EC","d":"PRIV","x":"PUBX"}`, "PRIV", "PUBX"},
		{"form body", "grant_type=refresh_token&refresh_token=RT-7&client_assertion=" + jwt, "RT-7", "grant_type"},
		{"plain text", "error " + jwt, jwt, "error"},
		{"page with a hidden code", `<form method="post"><input type="hidden" name="code" value="bc_JOIN1"><input name="next" value="/cart"></form>`, "bc_JOIN1", `value="/cart"`},
		{"page, value first", `<input value='bc_JOIN2' type=hidden name=code>`, "bc_JOIN2", "type=hidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := string(JSON([]byte(tc.in)))
			if strings.Contains(out, tc.secret) {
				t.Fatalf("secret %q survived: %s", tc.secret, out)
			}
			if !strings.Contains(out, tc.keep) {
				t.Fatalf("non-secret %q lost: %s", tc.keep, out)
			}
		})
	}
}

func TestHeaderAndURL(t *testing.T) {
	h := http.Header{"Poppy-Session": {jwt}, "Authorization": {"Bearer AT"}, "Accept": {"application/json"}}
	out := Header(h)
	if out.Get("Poppy-Session") != Mask || out.Get("Authorization") != Mask || out.Get("Accept") != "application/json" {
		t.Fatalf("Header = %v", out)
	}
	if h.Get("Authorization") != "Bearer AT" {
		t.Fatal("Header modified its input")
	}
	u, _ := url.Parse("http://127.0.0.1:5555/callback?code=SECRETCODE&state=S1&iss=https%3A%2F%2Fauth.example")
	s := URL(u)
	if strings.Contains(s, "SECRETCODE") || strings.Contains(s, "S1") || !strings.Contains(s, "iss=") {
		t.Fatalf("URL = %s", s)
	}
}

func TestReplaceAttr(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: ReplaceAttr}))
	log.Debug("x", "refresh_token", "RT-LEAK", "note", "got "+jwt, "err", errors.New("bad "+jwt),
		"hdr", http.Header{"Cookie": {"sid=COOKIE"}}, "val", Secret("S-LEAK"))
	out := buf.String()
	for _, s := range []string{"RT-LEAK", jwt, "COOKIE", "S-LEAK"} {
		if strings.Contains(out, s) {
			t.Errorf("log contains %q: %s", s, out)
		}
	}
}

// FuzzJSON: a secret planted anywhere in any JSON shape (under a secret field name in any case,
// as a string or inside nested arrays or objects, or JWT-shaped under any name) never survives
// JSON, and the rest survives: the same object keys, array lengths, numbers, booleans and nulls,
// and strings without a JWT shape; only values under secret names (secretNames) are masked.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"access_token":"x"}`), uint16(0), uint8(0))
	f.Add([]byte("a=b&code=c"), uint16(1), uint8(1))
	f.Add([]byte(`{"a":[1,{"b":{"c":[true,null,"s"]}}],"private_jwk":{"kty":"EC"}}`), uint16(3), uint8(0x14))
	f.Add([]byte(`[[],[[{}]],"eyJ",2.5e3]`), uint16(2), uint8(0x21))
	f.Add([]byte(`{"x":{"y":[{"z":"keep"}]}}`), uint16(2), uint8(0x35))
	f.Fuzz(func(t *testing.T, doc []byte, where uint16, kind uint8) {
		const planted = "S3CRET-fuzz-planted"
		if bytes.Contains(doc, []byte(planted)) {
			t.Skip()
		}
		var v any
		if json.Unmarshal(doc, &v) != nil {
			v = string(doc)
		}
		names := []string{"access_token", "Refresh_Token", "id_token", "code", "AUTHORIZATION", "DPoP", "client_assertion", "private_key", "join_code", "password", "d", "State"}
		name := names[int(kind%16)%len(names)]
		var plant map[string]any
		switch kind / 16 % 4 {
		case 0:
			plant = map[string]any{name: planted}
		case 1:
			plant = map[string]any{name: []any{"x", []any{planted}}}
		case 2:
			plant = map[string]any{name: map[string]any{"d": planted}}
		default:
			plant = map[string]any{"note": "bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0." + planted}
		}
		in := plantAt(v, int(where), plant)
		b, err := json.Marshal(in)
		if err != nil {
			t.Skip()
		}
		out := JSON(b)
		if bytes.Contains(out, []byte(planted)) {
			t.Fatalf("the planted secret survived:\n in: %s\nout: %s", b, out)
		}
		var want, got any
		json.Unmarshal(b, &want)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("JSON in, not JSON out: %s -> %s", b, out)
		}
		sameShape(t, "", want, got, b, out)
	})
}

// plantAt adds plant to the where-th object or array of v (in document order, modulo their
// number plus one; the last choice puts v and plant side by side in a new array).
func plantAt(v any, where int, plant map[string]any) any {
	var count func(any) int
	count = func(v any) int {
		n := 0
		switch t := v.(type) {
		case map[string]any:
			n++
			for _, e := range t {
				n += count(e)
			}
		case []any:
			n++
			for _, e := range t {
				n += count(e)
			}
		}
		return n
	}
	n := where % (count(v) + 1)
	if n == count(v) {
		return []any{v, plant}
	}
	var walk func(any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			if n == 0 {
				n = -1
				for k, e := range plant {
					t[k] = e
				}
				return t
			}
			n--
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t[k] = walk(t[k])
			}
		case []any:
			if n == 0 {
				n = -1
				return append(t, plant)
			}
			n--
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return v
	}
	return walk(v)
}

// sameShape checks that got is want with only the values under secret names (other than
// objects, which are searched) masked, and JWT-shaped strings changed.
func sameShape(t *testing.T, path string, want, got any, in, out []byte) {
	t.Helper()
	fail := func(what string) { t.Fatalf("at %q: %s\n in: %s\nout: %s", path, what, in, out) }
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			fail("an object lost or gained members")
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				fail("member " + k + " is gone")
			}
			if _, obj := wv.(map[string]any); secretNames[strings.ToLower(k)] && !obj {
				if gv != Mask {
					fail("the value under secret name " + k + " is not masked")
				}
				continue
			}
			sameShape(t, path+"/"+k, wv, gv, in, out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			fail("an array changed length")
		}
		for i := range w {
			sameShape(t, fmt.Sprintf("%s/%d", path, i), w[i], g[i], in, out)
		}
	case string:
		g, ok := got.(string)
		if !ok || !strings.Contains(w, "eyJ") && g != w {
			fail(fmt.Sprintf("the string %q became %v", w, got))
		}
	default:
		if got != want {
			fail(fmt.Sprintf("the value %v became %v", want, got))
		}
	}
}

// TestTextAndReplaceAttrPairs: Text masks secret name=value and "name": "value" pairs and JWT
// shapes in free text, and ReplaceAttr applies it to string and error attributes (invariant 5).
func TestTextAndReplaceAttrPairs(t *testing.T) {
	tests := []struct {
		name, in string
		leak     string // must not appear in the output
		keep     string // must still appear
	}{
		{"query code", "https://shop.example/cb?code=AUTHCODE1&x=1", "AUTHCODE1", "x=1"},
		{"query state", "the page's address changed to https://shop.example/cb?state=ST4TE&code=C0DE9", "ST4TE", "the page's address changed to https://shop.example/cb?"},
		{"json pair", `token endpoint said {"access_token": "AT-LEAK", "token_type": "Bearer"}`, "AT-LEAK", "Bearer"},
		{"form pair", "refresh_token=RT-LEAK2 refused", "RT-LEAK2", "refused"},
		{"join code", "https://shop.example/poppy/browser-session?join_code=JC-LEAK", "JC-LEAK", "browser-session"},
		{"jwt", "bad " + jwt, jwt, "bad "},
		{"plain", "nothing secret here: orders=3", "", "nothing secret here: orders=3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.in)
			if (tc.leak != "" && strings.Contains(got, tc.leak)) || !strings.Contains(got, tc.keep) {
				t.Fatalf("Text(%q) = %q", tc.in, got)
			}
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
			log.Info("x", "s", tc.in, "err", errors.New(tc.in), "wrapped", fmt.Errorf("calling: %w", errors.New(tc.in)))
			if out := buf.String(); tc.leak != "" && strings.Contains(out, tc.leak) {
				t.Fatalf("log leaks %q: %s", tc.leak, out)
			}
		})
	}
}
