package conversation

import (
	"context"
	"log/slog"
	"sync"
)

// Streamer keeps one conversation's stream open until ctx ends or the conversation closes
// (spec 8.6); *Manager's Stream is one.
type Streamer interface {
	Stream(ctx context.Context, company, id string) error
}

// DefaultMaxFollowed is how many conversations Followers follows at once unless told otherwise.
const DefaultMaxFollowed = 8

// FollowersConfig configures [NewFollowers].
type FollowersConfig struct {
	// Context bounds every stream (the application's root context; nil: context.Background()).
	Context context.Context
	// Max bounds the conversations followed at once (0 or less: DefaultMaxFollowed).
	Max int
	// Logger receives the streams that stopped on an error (nil: discarded).
	Logger *slog.Logger
}

// Followers keeps a stream open on each conversation a reader is looking at (spec 8.6), so new
// events and text-delta pieces arrive as the Company sends them. At most Max conversations are
// followed at once: following one more stops the stream of the conversation followed least
// recently. A stream ends when its conversation is unfollowed, when Stop is called, when the
// configured context ends, or when the stream itself ends (the conversation closed, or an error
// the Manager does not retry); following the conversation again then opens a new one.
type Followers struct {
	ctx context.Context
	max int
	log *slog.Logger

	mu   sync.Mutex
	seq  int                  // follow calls so far: the recency of each follower
	subs map[string]*follower // by key(company, id)
}

type follower struct {
	cancel context.CancelFunc
	seq    int
}

// NewFollowers returns Followers that follow nothing yet.
func NewFollowers(cfg FollowersConfig) *Followers {
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMaxFollowed
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Followers{ctx: cfg.Context, max: cfg.Max, log: cfg.Logger, subs: map[string]*follower{}}
}

// Follow keeps a stream from s open on the conversation (company, id), or marks it as the most
// recently followed when it already has one. It returns at once; the stream runs on its own
// goroutine. After the configured context ended, it starts nothing.
func (f *Followers) Follow(s Streamer, company, id string) {
	k := key(company, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	if fl := f.subs[k]; fl != nil {
		fl.seq = f.seq
		return
	}
	if f.ctx.Err() != nil {
		return
	}
	for len(f.subs) >= f.max {
		f.evictLocked()
	}
	ctx, cancel := context.WithCancel(f.ctx)
	fl := &follower{cancel: cancel, seq: f.seq}
	f.subs[k] = fl
	go func() {
		defer func() {
			f.mu.Lock()
			if f.subs[k] == fl {
				delete(f.subs, k)
			}
			f.mu.Unlock()
			cancel()
		}()
		if err := s.Stream(ctx, company, id); err != nil && ctx.Err() == nil {
			f.log.Warn("conversation: following a conversation stopped", "company", company, "conversation", id, "err", err)
		}
	}()
}

// evictLocked stops the stream of the conversation followed least recently.
func (f *Followers) evictLocked() {
	oldK, oldest := "", 0
	for k, fl := range f.subs {
		if oldK == "" || fl.seq < oldest {
			oldK, oldest = k, fl.seq
		}
	}
	f.subs[oldK].cancel()
	delete(f.subs, oldK)
}

// Unfollow ends the stream of the conversation (company, id), if it has one.
func (f *Followers) Unfollow(company, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.subs[key(company, id)]; fl != nil {
		fl.cancel()
		delete(f.subs, key(company, id))
	}
}

// Stop ends every stream (at shutdown). Follow may be called again afterwards while the
// configured context is live.
func (f *Followers) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, fl := range f.subs {
		fl.cancel()
		delete(f.subs, k)
	}
}

// Len reports how many conversations have a stream open.
func (f *Followers) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// Following reports whether the conversation (company, id) has a stream open.
func (f *Followers) Following(company, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subs[key(company, id)] != nil
}
