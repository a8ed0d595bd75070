package session

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendClaims: the claims a Session JWT carries are byte for byte what encoding/json writes
// for them (the fixed claims are encoded once per Session, the others per request; strings that
// need escaping go through encoding/json), whatever the URL, method or IDs hold.
func FuzzAppendClaims(f *testing.F) {
	f.Add("https://agent.example/agent.json", "https://auth.example", "sid_1", "usr_1", "", "GET", "https://api.example/v1/orders", int64(1790900000), "jti_1", "")
	f.Add("https://agent.example/agent.json", "https://auth.example", "sid_1", "usr_1", "agt", "POST", "https://例え.jp/a\"b\\c<d>&\u2028", int64(-1), "j", "ath")
	f.Fuzz(func(t *testing.T, iss, aud, sid, sub, agent, htm, htu string, iat int64, jti, ath string) {
		s := &Session{}
		for range 2 { // the second call uses the cached fixed claims
			c := sessionClaims{Iss: iss, Aud: aud, Sid: sid, Sub: sub, AgentID: agent, Htm: htm, Htu: htu, Iat: iat, Jti: jti, Ath: ath}
			got, err := s.appendClaims(nil, &c)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("appendClaims = %s\nencoding/json = %s", got, want)
			}
		}
		// Another User ID (or client_id) is never signed with the cached claims.
		c := sessionClaims{Iss: iss, Aud: aud, Sid: sid, Sub: sub + "x", AgentID: agent, Htm: htm, Htu: htu, Iat: iat, Jti: jti, Ath: ath}
		got, _ := s.appendClaims(nil, &c)
		if want, _ := json.Marshal(c); !bytes.Equal(got, want) {
			t.Fatalf("after a change of sub: %s, want %s", got, want)
		}
	})
}
