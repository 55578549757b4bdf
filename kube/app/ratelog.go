package app

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// quietHandler passes on at most one warning or error per message and
// interval; it counts the others, adds the count ("suppressed") to the
// next record of that message it passes, and flush writes one summary
// line per message that had records suppressed. Infos and debugs pass
// untouched. During an API server outage every failed binding logs the
// same line: this keeps that to a line per interval.
type quietHandler struct {
	next  slog.Handler
	state *quietState
}

type quietState struct {
	interval time.Duration
	key      func(slog.Record) string // what counts as the same line
	mu       sync.Mutex
	windows  map[string]*quietWindow
}

type quietWindow struct {
	msg        string
	level      slog.Level
	start      time.Time
	suppressed int
}

func newQuietHandler(next slog.Handler, interval time.Duration) *quietHandler {
	return newQuietHandlerKeyed(next, interval, func(r slog.Record) string { return r.Message })
}

func newQuietHandlerKeyed(next slog.Handler, interval time.Duration, key func(slog.Record) string) *quietHandler {
	return &quietHandler{next: next, state: &quietState{interval: interval, key: key, windows: map[string]*quietWindow{}}}
}

// Enabled implements slog.Handler.
func (h *quietHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietHandler{next: h.next.WithAttrs(as), state: h.state}
}

// WithGroup implements slog.Handler.
func (h *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{next: h.next.WithGroup(name), state: h.state}
}

// Handle implements slog.Handler.
func (h *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	s := h.state
	key := s.key(r)
	s.mu.Lock()
	w := s.windows[key]
	if w != nil && r.Time.Sub(w.start) < s.interval {
		w.suppressed++
		s.mu.Unlock()
		return nil
	}
	n := 0
	if w != nil {
		n = w.suppressed
	}
	s.windows[key] = &quietWindow{level: r.Level, start: r.Time, msg: r.Message}
	s.mu.Unlock()
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", n))
	}
	return h.next.Handle(ctx, r)
}

// flush writes a summary for each message with suppressed records whose
// interval has passed, and forgets the messages that went quiet.
func (h *quietHandler) flush(now time.Time) {
	s := h.state
	var out []slog.Record
	s.mu.Lock()
	for key, w := range s.windows {
		if now.Sub(w.start) < s.interval {
			continue
		}
		if w.suppressed == 0 {
			delete(s.windows, key)
			continue
		}
		r := slog.NewRecord(now, w.level, w.msg, 0)
		r.AddAttrs(slog.Int("suppressed", w.suppressed), slog.Duration("in", now.Sub(w.start)))
		out = append(out, r)
		s.windows[key] = &quietWindow{level: w.level, start: now, msg: w.msg}
	}
	s.mu.Unlock()
	for _, r := range out {
		h.next.Handle(context.Background(), r)
	}
}

// run flushes every interval until ctx ends.
func (h *quietHandler) run(ctx context.Context) {
	t := time.NewTicker(h.state.interval)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			h.flush(now)
		case <-ctx.Done():
			h.flush(time.Now().Add(h.state.interval))
			return
		}
	}
}
