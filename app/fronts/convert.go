package fronts

// Conversions every service uses: Company text made visible, times and JSON as text, and the
// window's action named as the cause of what it asks the engine for.

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/operations"
)

// visible is operations.Visible with a fast path for printable ASCII, which has no invisible
// or direction-changing character (most terms, URLs and IDs).
func visible(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return operations.Visible(s)
		}
	}
	return s
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// jsonText shows JSON data indented, with invisible characters made visible; anything that is
// not JSON is shown as it is.
func jsonText(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return visible(string(raw))
	}
	return visible(b.String())
}

// nonNilStrings is s, or an empty list for nil (JSON [] rather than null).
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// windowCause marks ctx with the window's action that called into it: the outermost exported
// method of this package among the callers ("Companies.Discover"), so the exchanges it causes
// name it in the Inspector.
func windowCause(ctx context.Context) context.Context {
	name := "window"
	pcs := make([]uintptr, 8)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		fr, more := frames.Next()
		fn := fr.Function
		if i := strings.LastIndex(fn, "/"); i >= 0 {
			fn = fn[i+1:]
		}
		if rest, ok := strings.CutPrefix(fn, "fronts.(*"); ok {
			typ, method, _ := strings.Cut(rest, ").")
			if method != "" && method[0] >= 'A' && method[0] <= 'Z' {
				name = typ + "." + method
			}
		}
		if !more {
			break
		}
	}
	return inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseWindow, Name: name})
}
