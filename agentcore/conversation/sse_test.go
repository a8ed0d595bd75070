package conversation

import (
	"errors"
	"io"
	"testing"
)

// repeatReader yields rec over and over, up to limit bytes, then io.EOF; n counts what was read.
type repeatReader struct {
	rec        []byte
	off, limit int
	n          int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n >= r.limit {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && r.n < r.limit {
		c := copy(p[i:], r.rec[r.off:])
		if c > r.limit-r.n {
			c = r.limit - r.n
		}
		i += c
		r.n += c
		r.off = (r.off + c) % len(r.rec)
	}
	return i, nil
}

// TestSSEStreamBounded: one stream connection delivers at most maxSSEStream bytes, whatever the
// events are (text-delta pieces of a message that never arrives, keep-alive comments, events
// without data), so a Company can't make the engine hold unbounded pieces (spec 8.6); a stream
// within the bound ends normally.
func TestSSEStreamBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rec     string
		limit   int
		wantErr error
	}{
		{name: "endless text-delta pieces", rec: "event: text-delta\ndata: {\"message_id\":\"m\",\"text\":\"" + string(make([]byte, 1000)) + "\"}\n\n", limit: 2 * maxSSEStream, wantErr: errSSEStreamTooLong},
		{name: "endless comments", rec: ": keep-alive\r\n", limit: 2 * maxSSEStream, wantErr: errSSEStreamTooLong},
		{name: "endless events without data", rec: "id: e\nevent: x\n\n", limit: 2 * maxSSEStream, wantErr: errSSEStreamTooLong},
		{name: "a stream within the bound", rec: "data: {}\n\n", limit: 100000 * 10, wantErr: io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &repeatReader{rec: []byte(tc.rec), limit: tc.limit}
			r := newSSEReader(src)
			var err error
			for err == nil {
				_, err = r.Next()
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("stream ended with %v after %d bytes, want %v", err, src.n, tc.wantErr)
			}
			if src.n > maxSSEStream+64<<10+len(tc.rec) {
				t.Fatalf("read %d bytes, more than the bound %d", src.n, maxSSEStream)
			}
		})
	}
}
