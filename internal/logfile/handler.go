package logfile

import (
	"context"
	"log/slog"

	"github.com/weavehq/weave/internal/textcap"
)

// Bounded wraps h so that a record's message and each of its string (and
// error) values are at most limit bytes: a plugin's runaway message, or a
// hook's 100 MB reason, is logged as its start and a note of the cut.
func Bounded(h slog.Handler, limit int) slog.Handler { return bounded{h, limit} }

type bounded struct {
	h     slog.Handler
	limit int
}

func (b bounded) Enabled(ctx context.Context, l slog.Level) bool { return b.h.Enabled(ctx, l) }

func (b bounded) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, textcap.Cap(r.Message, b.limit), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(b.attr(a))
		return true
	})
	return b.h.Handle(ctx, out)
}

func (b bounded) WithAttrs(as []slog.Attr) slog.Handler {
	capped := make([]slog.Attr, len(as))
	for i, a := range as {
		capped[i] = b.attr(a)
	}
	return bounded{b.h.WithAttrs(capped), b.limit}
}

func (b bounded) WithGroup(name string) slog.Handler { return bounded{b.h.WithGroup(name), b.limit} }

func (b bounded) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, textcap.Cap(v.String(), b.limit))
	case slog.KindGroup:
		g := v.Group()
		capped := make([]any, len(g))
		for i, e := range g {
			capped[i] = b.attr(e)
		}
		return slog.Group(a.Key, capped...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, textcap.Cap(err.Error(), b.limit))
		}
		// Other values (maps of event data) are left to the handler
		// unless their printed form is past the bound.
		if s := v.String(); len(s) > b.limit {
			return slog.String(a.Key, textcap.Cap(s, b.limit))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
