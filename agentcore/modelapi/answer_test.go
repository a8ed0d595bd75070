package modelapi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
)

// TestServeAnswersBeforeClosing: when Serve stops (the window closes), every call a session has
// read gets its answer before the session closes, even when the answer is ready only after the
// stop began; the model never sees its connection end under a call.
func TestServeAnswersBeforeClosing(t *testing.T) {
	const calls = 16
	for round := range 5 {
		srv := mcp.NewServer(&mcp.Implementation{Name: "answers", Version: "1"}, nil)
		started, release := make(chan struct{}, calls), make(chan struct{})
		// The tool's answer exists only once the stop has begun, as a wait for the user's
		// decision ends when the window closes.
		mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			started <- struct{}{}
			<-release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ended"}}}, nil, nil
		})

		path := filepath.Join(t.TempDir(), "m.sock")
		if runtime.GOOS == "windows" {
			path = fmt.Sprintf(`\\.\pipe\poppydesk-answers-test-%d-%s`, round, filepath.Base(filepath.Dir(path)))
		}
		ctx, stop := context.WithCancel(context.Background())
		ln, err := modelapi.Listen(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			modelapi.Serve(ctx, ln, srv, nil)
		}()

		conn, err := modelapi.Dial(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "model", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, calls)
		for range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
				if err == nil && (len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "ended") {
					err = fmt.Errorf("answered %+v", res.Content)
				}
				errs <- err
			}()
		}
		for range calls {
			<-started
		}
		stop()
		close(release)
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if err != nil {
				failed++
				t.Errorf("round %d: a call in flight when Serve stopped got %v; want its answer", round, err)
			}
		}
		cs.Close()
		<-served
		if failed > 0 {
			return
		}
	}
}
