package refcompany

import (
	"slices"
	"strings"
	"testing"
)

// TestParseApprovalHeader: Poppy-Approval is an RFC 9651 Dictionary with operation_id and
// revision Strings (agentcore/headers reads it); unknown members are ignored, and the reference
// Company also refuses empty Strings (Operations 6).
func TestParseApprovalHeader(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    *approvalRef
		wantErr string
	}{
		{"absent", nil, nil, ""},
		{"spec example", []string{`operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`}, &approvalRef{"exc_5Rt2", "1791487200-k3Jd9Qx2mW8v"}, ""},
		{"unknown members ignored", []string{`revision="r1", later=?1, operation_id="exc_1"`}, &approvalRef{"exc_1", "r1"}, ""},
		{"split over two lines", []string{`operation_id="exc_1"`, `revision="r1"`}, &approvalRef{"exc_1", "r1"}, ""},
		{"token instead of String", []string{`operation_id=exc_1, revision="r1"`}, nil, "not a String"},
		{"missing revision", []string{`operation_id="exc_1"`}, nil, "no revision member"},
		{"empty revision", []string{`operation_id="exc_1", revision=""`}, nil, "non-empty Strings"},
		{"not a dictionary", []string{`"exc_1"`}, nil, "not an RFC 9651 Dictionary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseApprovalHeader(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

// TestOperationFaultsKnown: the operation faults can be switched on by name.
func TestOperationFaultsKnown(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range operationFaults {
		if !slices.Contains(Faults, f) {
			t.Fatalf("%s missing from Faults", f)
		}
		if err := s.SetFault(f, true); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.ActiveFaults(); len(got) != len(operationFaults) {
		t.Fatalf("active = %v", got)
	}
}

func FuzzParseApprovalHeader(f *testing.F) {
	f.Add(`operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`)
	f.Add(`a=1;b=2, operation_id=("x")`)
	f.Fuzz(func(t *testing.T, v string) {
		a, err := parseApprovalHeader([]string{v})
		if err == nil && a != nil && (a.OperationID == "" || a.Revision == "") {
			t.Fatalf("accepted an incomplete approval from %q", v)
		}
	})
}
