package oauth

import (
	"encoding/json"
	"testing"
	"time"
)

// TestDeviceTiming: hostile expires_in and interval values (RFC 8628 §3.2) never give a zero or
// negative poll interval (a busy loop) or a countdown that wrapped around.
func TestDeviceTiming(t *testing.T) {
	for _, tc := range []struct {
		name                string
		expiresIn, interval json.Number
		wantExp, wantIV     time.Duration
		wantErr             bool
	}{
		{name: "spec example", expiresIn: "600", interval: "5", wantExp: 10 * time.Minute, wantIV: 5 * time.Second},
		{name: "interval absent", expiresIn: "600", wantExp: 10 * time.Minute, wantIV: 5 * time.Second},
		{name: "interval zero", expiresIn: "600", interval: "0", wantExp: 10 * time.Minute, wantIV: 5 * time.Second},
		{name: "interval negative", expiresIn: "600", interval: "-3", wantExp: 10 * time.Minute, wantIV: 5 * time.Second},
		{name: "interval fraction", expiresIn: "600", interval: "0.5", wantExp: 10 * time.Minute, wantIV: 5 * time.Second},
		{name: "interval overflows time.Duration", expiresIn: "600", interval: "9223372037", wantErr: true},
		{name: "interval beyond int64", expiresIn: "600", interval: "99999999999999999999", wantExp: 10 * time.Minute, wantIV: 5 * time.Second},
		{name: "interval longer than the code lives", expiresIn: "60", interval: "61", wantErr: true},
		{name: "expires_in overflows time.Duration", expiresIn: "9223372037", interval: "5", wantExp: maxDeviceExpiry, wantIV: 5 * time.Second},
		{name: "huge expires_in and interval", expiresIn: "9000000000000000000", interval: "9223372037", wantErr: true},
		{name: "expires_in missing", interval: "5", wantErr: true},
		{name: "expires_in zero", expiresIn: "0", wantErr: true},
		{name: "expires_in negative", expiresIn: "-600", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp, iv, err := deviceTiming(tc.expiresIn, tc.interval)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("deviceTiming(%q, %q) = %v, %v; want an error", tc.expiresIn, tc.interval, exp, iv)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if exp != tc.wantExp || iv != tc.wantIV {
				t.Fatalf("deviceTiming(%q, %q) = %v, %v; want %v, %v", tc.expiresIn, tc.interval, exp, iv, tc.wantExp, tc.wantIV)
			}
			if iv <= 0 || iv > exp {
				t.Fatalf("interval %v outside (0, %v]", iv, exp)
			}
		})
	}
}
