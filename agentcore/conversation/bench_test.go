package conversation_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

const benchEvents = 2000

// BenchmarkStreamEvents measures how many events per second the engine handles from a fast SSE
// stream of the reference Company (parse, skip-handled check, transcript, cursor saves), against
// the baseline of plain JSON decoding of the same events' data in the same run.
func BenchmarkStreamEvents(b *testing.B) {
	f := newFixture(b, fixtureOptions{})
	ctx := context.Background()
	v, err := f.m.Start(ctx, conversation.Start{Company: f.company, Text: "Hi"})
	if err != nil {
		b.Fatal(err)
	}
	id := v.ConversationID
	rec0, err := f.store.GetConversation(ctx, f.company, id)
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(f.s.AgentMessageIDs(id)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the Company Agent's greeting never finished")
		}
	}
	if err := f.s.AgentBurst(id, benchEvents); err != nil {
		b.Fatal(err)
	}
	total := f.s.AgentEventCount(id)
	logger := slog.New(slog.DiscardHandler)

	// The baseline: the same stream's bytes, read once, then only JSON-decoded per event.
	cl, err := f.e.Client(ctx, f.company, "")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	resp, err := cl.Do(sctx, &transport.Request{Method: http.MethodGet, URL: rec0ep(b, rec0) + "/" + id + "/events",
		Header: http.Header{"Accept": {"text/event-stream"}}})
	if err != nil {
		b.Fatal(err)
	}
	var raw bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(resp.Body, &raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var datas [][]byte
	for sc.Scan() && len(datas) < total {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.HasPrefix(d, `{"created_at`) || ok && strings.Contains(d, `"type"`) {
			datas = append(datas, []byte(d))
		}
	}
	cancel()
	resp.Body.Close()
	streamAll := func(b *testing.B) {
		st := store.NewMemoryConversations()
		st.PutConversation(ctx, rec0)
		var n atomic.Int64
		sctx, cancel := context.WithCancel(ctx)
		m, _ := conversation.New(conversation.Config{Engine: f.e, Store: st, Logger: logger, OnUpdate: func(u conversation.Update) {
			if u.Kind == conversation.UpdateEntry && n.Add(1) >= int64(total) {
				cancel()
			}
		}})
		m.Stream(sctx, f.company, id)
		cancel()
		if n.Load() < int64(total) {
			b.Fatalf("handled %d of %d events", n.Load(), total)
		}
	}
	decodeAll := func(b *testing.B) {
		for _, d := range datas {
			var ev map[string]any
			if err := json.Unmarshal(d, &ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchratio.RunCPU(b, "engine", "json-decode", streamAll, decodeAll)
}

func rec0ep(b *testing.B, r store.Conversation) string {
	var st struct {
		Endpoint string `json:"endpoint"`
	}
	if err := json.Unmarshal([]byte(r.State), &st); err != nil || st.Endpoint == "" {
		b.Fatalf("no endpoint in %s", r.State)
	}
	return st.Endpoint
}
