package headers_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

func TestExtensions(t *testing.T) {
	ops := headers.Extension{Name: "operations", Version: "2"}
	links := headers.Extension{Name: "links", Version: "1"}
	for _, tc := range []struct {
		name string
		exts []headers.Extension
		want string
		bad  bool
	}{
		{"none", nil, "", false},
		{"one", []headers.Extension{ops}, `"operations";v="2"`, false},
		{"two, in order", []headers.Extension{ops, links}, `"operations";v="2", "links";v="1"`, false},
		{"no version", []headers.Extension{{Name: "operations"}}, "", true},
		{"no name", []headers.Extension{{Version: "2"}}, "", true},
		{"twice", []headers.Extension{ops, {Name: "operations", Version: "3"}}, "", true},
		{"not ASCII", []headers.Extension{{Name: "opérations", Version: "2"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := headers.FormatExtensions(tc.exts)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("FormatExtensions = %q, %v; want %q (error %v)", got, err, tc.want, tc.bad)
			}
			if tc.bad {
				return
			}
			if back := headers.ParseExtensions([]string{got}); !slices.Equal(back, tc.exts) {
				t.Fatalf("ParseExtensions(%q) = %v; want %v", got, back, tc.exts)
			}
		})
	}
}

func TestParseExtensions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   []headers.Extension
	}{
		{"absent", nil, nil},
		{"does not parse: nothing declared", []string{`"operations";v="2", (`}, nil},
		{"a token, not a String", []string{`operations;v="2"`}, nil},
		{"v is not a String", []string{`"operations";v=2`}, nil},
		{"no v", []string{`"operations"`}, nil},
		{"an inner list", []string{`("operations");v="2"`}, nil},
		{"other parameters are ignored", []string{`"operations";v="2";x=1`}, []headers.Extension{{Name: "operations", Version: "2"}}},
		{"two field lines", []string{`"operations";v="2"`, `"links";v="1"`}, []headers.Extension{{Name: "operations", Version: "2"}, {Name: "links", Version: "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := headers.ParseExtensions(tc.values); !slices.Equal(got, tc.want) {
				t.Fatalf("ParseExtensions(%q) = %v; want %v", tc.values, got, tc.want)
			}
		})
	}
	if !headers.Declares([]string{`"links";v="1", "operations";v="2"`}, "operations", "2") {
		t.Error("Declares misses operations;v=2")
	}
	if headers.Declares([]string{`"operations";v="1"`}, "operations", "2") {
		t.Error("Declares takes version 1 for version 2")
	}
}

func TestApproval(t *testing.T) {
	v, err := headers.FormatApproval("exc_5Rt2", "1791487200-k3Jd9Qx2mW8v")
	if err != nil || v != `operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"` {
		t.Fatalf("FormatApproval = %q, %v", v, err)
	}
	for _, tc := range []struct {
		name         string
		values       []string
		op, rev, bad string
	}{
		{"the spec's example", []string{v}, "exc_5Rt2", "1791487200-k3Jd9Qx2mW8v", ""},
		{"unknown members are ignored", []string{`x=1, revision="r1", operation_id="o1";p=2`}, "o1", "r1", ""},
		{"split over two field lines", []string{`operation_id="o1"`, `revision="r1"`}, "o1", "r1", ""},
		{"no revision", []string{`operation_id="o1"`}, "", "", "no revision member"},
		{"a token, not a String", []string{`operation_id=o1, revision="r1"`}, "", "", "not a String"},
		{"an inner list", []string{`operation_id=("o1"), revision="r1"`}, "", "", "Inner List"},
		{"not a Dictionary", []string{`"o1"`}, "", "", "not an RFC 9651 Dictionary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, rev, err := headers.ParseApproval(tc.values)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("ParseApproval(%q) = %q, %q, %v; want an error saying %q", tc.values, op, rev, err, tc.bad)
				}
				return
			}
			if err != nil || op != tc.op || rev != tc.rev {
				t.Fatalf("ParseApproval(%q) = %q, %q, %v", tc.values, op, rev, err)
			}
		})
	}
	if _, _, err := headers.ParseApproval(nil); !errors.Is(err, headers.ErrNoApproval) {
		t.Fatalf("no header: %v", err)
	}
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		v            string
		major, minor int
		ok           bool
	}{
		{"0.4", 0, 4, true}, {"1.12", 1, 12, true}, {"0.4.1", 0, 0, false}, {"+0.4", 0, 0, false}, {"0.-4", 0, 0, false},
		{"-0.4", 0, 0, false}, {"0.", 0, 0, false}, {".4", 0, 0, false}, {"04", 0, 0, false}, {"", 0, 0, false}, {"0.4 ", 0, 0, false},
		{"1_0.1", 0, 0, false}, {"70000.1", 0, 0, false},
	} {
		ma, mi, ok := headers.ParseVersion(tc.v)
		if ok != tc.ok || ma != tc.major || mi != tc.minor {
			t.Errorf("ParseVersion(%q) = %d, %d, %v", tc.v, ma, mi, ok)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"0.4", "0.4", true}, {"0.4", "0.3", false}, {"1.0", "1.3", true}, {"1.0", "2.0", false}, {"0.4", "x", false}} {
		if got := headers.Compatible(tc.a, tc.b); got != tc.want {
			t.Errorf("Compatible(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
	if !headers.Newer("0.5", "0.4") || headers.Newer("0.4", "1.0") {
		t.Error("Newer")
	}
}

// TestValidID: the characters and lengths of the IDs of spec 8.2.
func TestValidID(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{"exc_5Rt2", true}, {"1791487200-k3Jd9Qx2mW8v", true}, {"-", true}, {"_", true},
		{"", false}, {"a=", false}, {"a+b", false}, {"a/b", false}, {"a\u202Eb", false}, {"a\x00", false},
		{strings.Repeat("Z", 256), true}, {strings.Repeat("Z", 257), false},
	} {
		if got := headers.ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}
