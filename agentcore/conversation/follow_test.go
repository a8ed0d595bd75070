package conversation_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
)

// fakeStreams is a Streamer whose streams stay open until their context ends or the test ends
// them (the Company closed the conversation).
type fakeStreams struct {
	mu      sync.Mutex
	open    map[string]int // conversation → streams open now
	started map[string]int // conversation → streams started
	ends    map[string]chan struct{}
}

func newFakeStreams() *fakeStreams {
	return &fakeStreams{open: map[string]int{}, started: map[string]int{}, ends: map[string]chan struct{}{}}
}

func (s *fakeStreams) Stream(ctx context.Context, _, id string) error {
	s.mu.Lock()
	s.open[id]++
	s.started[id]++
	end := s.ends[id]
	if end == nil {
		end = make(chan struct{})
		s.ends[id] = end
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.open[id]--
		s.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-end:
		return nil
	}
}

// end ends id's open stream by itself, as when the conversation closed.
func (s *fakeStreams) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.ends[id]; ch != nil {
		close(ch)
		delete(s.ends, id)
	}
}

// openNow lists the conversations with a stream open, sorted.
func (s *fakeStreams) openNow() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, n := range s.open {
		if n > 0 {
			out = append(out, id)
		}
		if n > 1 {
			out = append(out, id+" (twice)")
		}
	}
	slices.Sort(out)
	return out
}

func (s *fakeStreams) startedOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[id]
}

// eventually waits until ok holds (streams start and stop on their own goroutines).
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFollowers: streams follow the conversations being read (spec 8.6), at most Max at once,
// the least recently followed stopping first; unfollowing, Stop and the context end them; a
// stream that ended by itself is opened again by the next Follow.
func TestFollowers(t *testing.T) {
	const co = "https://auth.shop.example"
	type step struct {
		op, id string // follow, unfollow, end (the stream ends by itself), stop, cancel (the context)
	}
	for _, tc := range []struct {
		name    string
		max     int
		steps   []step
		want    []string       // conversations followed, sorted
		started map[string]int // streams started per conversation
	}{
		{"one stream per conversation", 2, []step{{"follow", "a"}, {"follow", "a"}, {"follow", "b"}},
			[]string{"a", "b"}, map[string]int{"a": 1, "b": 1}},
		{"the least recently followed stops first", 2, []step{{"follow", "a"}, {"follow", "b"}, {"follow", "c"}},
			[]string{"b", "c"}, map[string]int{"a": 1, "b": 1, "c": 1}},
		{"following again makes it the most recent", 2, []step{{"follow", "a"}, {"follow", "b"}, {"follow", "a"}, {"follow", "c"}},
			[]string{"a", "c"}, map[string]int{"a": 1, "b": 1, "c": 1}},
		{"an evicted conversation is followed again with a new stream", 1, []step{{"follow", "a"}, {"follow", "b"}, {"follow", "a"}},
			[]string{"a"}, map[string]int{"a": 2, "b": 1}},
		{"unfollow", 3, []step{{"follow", "a"}, {"follow", "b"}, {"unfollow", "a"}, {"unfollow", "x"}},
			[]string{"b"}, map[string]int{"a": 1, "b": 1}},
		{"a stream that ended is opened again", 3, []step{{"follow", "a"}, {"end", "a"}, {"follow", "a"}},
			[]string{"a"}, map[string]int{"a": 2}},
		{"stop ends every stream", 3, []step{{"follow", "a"}, {"follow", "b"}, {"stop", ""}},
			nil, map[string]int{"a": 1, "b": 1}},
		{"follow after stop", 3, []step{{"follow", "a"}, {"stop", ""}, {"follow", "a"}},
			[]string{"a"}, map[string]int{"a": 2}},
		{"the context ends every stream, and nothing starts after", 3, []step{{"follow", "a"}, {"cancel", ""}, {"follow", "b"}},
			nil, map[string]int{"a": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := newFakeStreams()
			f := conversation.NewFollowers(conversation.FollowersConfig{Context: ctx, Max: tc.max})
			defer f.Stop()
			for _, st := range tc.steps {
				switch st.op {
				case "follow":
					had, n := f.Following(co, st.id), s.startedOf(st.id)
					f.Follow(s, co, st.id)
					if !had && ctx.Err() == nil {
						eventually(t, st.id+" has a new stream", func() bool { return s.startedOf(st.id) == n+1 })
					}
				case "unfollow":
					f.Unfollow(co, st.id)
				case "end":
					s.end(st.id)
					eventually(t, st.id+" is no longer followed", func() bool { return !f.Following(co, st.id) })
				case "stop":
					f.Stop()
				case "cancel":
					cancel()
					eventually(t, "every stream ended", func() bool { return f.Len() == 0 })
				}
				if f.Len() > tc.max {
					t.Fatalf("after %s %s: %d followed, more than Max %d", st.op, st.id, f.Len(), tc.max)
				}
			}
			eventually(t, "the open streams are the followed ones", func() bool { return slices.Equal(s.openNow(), tc.want) })
			var following []string
			for _, id := range []string{"a", "b", "c", "x"} {
				if f.Following(co, id) {
					following = append(following, id)
				}
			}
			if !slices.Equal(following, tc.want) || f.Len() != len(tc.want) {
				t.Errorf("following %v (Len %d), want %v", following, f.Len(), tc.want)
			}
			for id, n := range tc.started {
				if got := s.startedOf(id); got != n {
					t.Errorf("%d streams started for %s, want %d", got, id, n)
				}
			}
		})
	}
}
