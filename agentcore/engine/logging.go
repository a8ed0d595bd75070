package engine

import (
	"context"
	"log/slog"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// redactingHandler applies redact.ReplaceAttr to every attribute (inside groups too, after
// resolving LogValuers) and masks JWT-shaped text in the message, before the wrapped handler
// sees the record. The engine wraps whatever handler it is given, so a caller that forgot
// ReplaceAttr in its HandlerOptions still gets no secret in its log (docs/DESIGN.md invariant 5).
type redactingHandler struct{ h slog.Handler }

func newRedactingLogger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(redactingHandler); ok {
		return l
	}
	return slog.New(redactingHandler{h: l.Handler()})
}

func (r redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redact.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(nil, a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = redactAttr(nil, a)
	}
	return redactingHandler{h: r.h.WithAttrs(out)}
}

func (r redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{h: r.h.WithGroup(name)}
}

func redactAttr(groups []string, a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() == slog.KindGroup && !redact.IsSecretName(a.Key) {
		members := a.Value.Group()
		out := make([]slog.Attr, len(members))
		for i, m := range members {
			out[i] = redactAttr(append(groups, a.Key), m)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	}
	return redact.ReplaceAttr(groups, a)
}
