package operator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// record is one row of the operator's database or one line of its logs, as a curious operator
// reads it: named values.
type record struct {
	where  string
	values map[string]string
}

// signedJWT is a JWT a Company received, with its iat, and (for the test only) the device that
// asked for it.
type signedJWT struct {
	what, device string
	iat          int64
}

// link is what the curious operator found: a record tying a device to a time finer than an
// hour, near a JWT's iat.
type link struct {
	jwt    signedJWT
	device string
	at     int64
	via    []string
}

// curiousOperator plays an operator that holds the final JWTs (a Company shared them) and
// everything in its database and logs, and wants to know which device asked for each. It groups
// records that share a value — a device ID, a key, any string of 8 characters or more, or on
// PostgreSQL the transaction that wrote them (xmin) — and looks in every group that names a
// device for a time (Unix seconds in a row, the time of a log line) within an hour of a JWT's
// iat that is not a whole hour: a time finer than the quota windows, which count per device per
// UTC hour and day and so tell the hour by design.
func curiousOperator(records []record, devices []string, jwts []signedJWT) []link {
	// Union-find over records joined by a shared value.
	parent := make([]int, len(records))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	owner := map[string]int{}
	for i, r := range records {
		for k, v := range r.values {
			if k == "xmin" {
				v = "xmin:" + v
			} else if len(v) < 8 || isTime(v) {
				continue
			}
			if j, ok := owner[v]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[v] = i
			}
		}
	}
	groupDevices := map[int][]string{}
	groupWhere := map[int][]string{}
	for i, r := range records {
		g := find(i)
		groupWhere[g] = append(groupWhere[g], r.where)
		for _, v := range r.values {
			for _, d := range devices {
				if strings.Contains(v, d) {
					groupDevices[g] = append(groupDevices[g], d)
				}
			}
		}
	}
	var out []link
	for i, r := range records {
		g := find(i)
		if len(groupDevices[g]) == 0 {
			continue
		}
		for _, v := range r.values {
			t, ok := timeOf(v)
			if !ok || t%3600 == 0 {
				continue
			}
			for _, j := range jwts {
				if d := t - j.iat; d > -3600 && d < 3600 {
					out = append(out, link{jwt: j, device: groupDevices[g][0], at: t, via: groupWhere[g]})
				}
			}
		}
	}
	return out
}

// isTime says whether v reads as a Unix time in seconds or an RFC 3339 time.
func isTime(v string) bool { _, ok := timeOf(v); return ok }

func timeOf(v string) (int64, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 1e9 && n < 1e10 {
		return n, true
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.Unix(), true
	}
	return 0, false
}

// recordsOf reads Store.Dump's rows ("table col=value …") and JSON log lines.
func recordsOf(t *testing.T, rows []string, logs string) []record {
	t.Helper()
	var out []record
	for _, r := range rows {
		fields := strings.Fields(r)
		rec := record{where: "database table " + fields[0], values: map[string]string{}}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			rec.values[k] = v
		}
		out = append(out, rec)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		rec := record{where: "log line " + fmt.Sprint(m["msg"]), values: map[string]string{}}
		for k, v := range m {
			rec.values[k] = fmt.Sprint(v)
		}
		out = append(out, rec)
	}
	return out
}

// TestCuriousOperatorCannotNameTheDevice: three devices ask one operator for client assertions
// and delegations, on SQLite and on PostgreSQL. The curious operator (curiousOperator) then gets
// every final JWT and everything in the database (every row; on PostgreSQL with the transaction
// that wrote it) and the logs, and finds no record that ties a device to a time finer than its
// quota's hour. Controls: the same search finds the device in a replay-cache row of the shape
// that joined a device to a proof's second, and in a log line that names a device.
//
// The enrollment tokens are issued hours before the devices enroll, as an administrator hands
// them out: a token's own times are when the administrator made it, which this test does not
// pretend to hide (and on PostgreSQL a token's row shares its last transaction with its device's).
func TestCuriousOperatorCannotNameTheDevice(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			o := opts{clock: &refcompany.Clock{}, logs: &syncBuffer{}}
			if db == "postgres" {
				o.dsn = startPostgres(t)
			}
			inst := startOperator(t, o, "")
			var devs []*device
			var ids []string
			for range 3 {
				tok := "ppd_enroll_" + identity.NewID(32)
				if err := inst.store.AddEnrollToken(ctx, tok, time.Now().Add(-5*time.Hour), time.Now().Add(2*time.Hour), 1); err != nil {
					t.Fatal(err)
				}
				d := enrollDevice(t, inst, nil, tok, o.clock.Now)
				devs, ids = append(devs, d), append(ids, d.bundle.DeviceID)
			}
			var jwts []signedJWT
			for i := range 12 {
				d := devs[i%3]
				var tok string
				var err error
				if i%2 == 0 {
					tok, err = d.agent.ClientAssertion(ctx, "https://auth.shop.example")
				} else {
					priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
					tok, _, err = d.agent.Delegate(ctx, &priv.PublicKey, time.Hour)
				}
				if err != nil {
					t.Fatal(err)
				}
				payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
				var c struct {
					Iat int64 `json:"iat"`
				}
				if err := json.Unmarshal(payload, &c); err != nil || c.Iat == 0 {
					t.Fatalf("the JWT has no iat: %s", payload)
				}
				jwts = append(jwts, signedJWT{what: fmt.Sprintf("JWT %d", i), device: d.bundle.DeviceID, iat: c.Iat})
			}
			rows, err := inst.store.Dump(ctx)
			if err != nil {
				t.Fatal(err)
			}
			records := recordsOf(t, rows, o.logs.String())
			for _, l := range curiousOperator(records, ids, jwts) {
				t.Errorf("the operator ties device %s to %s, %d s from the iat of %s (asked by %s), through %v",
					l.device, time.Unix(l.at, 0).UTC().Format(time.RFC3339), l.at-l.jwt.iat, l.jwt.what, l.jwt.device, l.via)
			}

			// Controls: the scan reads the rows and the logs, and finds a device-to-second record.
			var sawDevice, sawSign bool
			for _, r := range records {
				sawDevice = sawDevice || strings.Contains(r.values["id"], ids[0])
				sawSign = sawSign || r.values["route"] == "sign"
			}
			if !sawDevice || !sawSign {
				t.Fatalf("control: the records hold no device row (%v) or no sign log line (%v)", sawDevice, sawSign)
			}
			j := jwts[0]
			for _, leak := range []record{
				{"the replay-cache row of a proof with its device", map[string]string{"device_id": ids[0], "jti": identity.NewID(16), "expires_at": strconv.FormatInt(j.iat+61, 10)}},
				{"a log line naming a device", map[string]string{"time": time.Unix(j.iat, 0).UTC().Format(time.RFC3339Nano), "msg": "signed", "device": ids[0]}},
			} {
				if got := curiousOperator(append(records[:len(records):len(records)], leak), ids, jwts); len(got) == 0 {
					t.Errorf("control: the curious operator does not find the device through %s", leak.where)
				}
			}
			t.Logf("%d JWTs of %d devices against %d records: no device tied to a time finer than an hour", len(jwts), len(ids), len(records))
		})
	}
}
