package schedq

import (
	"fmt"
	"slices"
	"time"
)

// Defaults for zero Config fields.
const (
	DefaultInitialBackoff             = 1 * time.Second
	DefaultMaxBackoff                 = 10 * time.Second
	DefaultMaxInUnschedulable         = 5 * time.Minute
	DefaultFlushBackoffInterval       = 1 * time.Second
	DefaultFlushUnschedulableInterval = 30 * time.Second
)

// Config configures a queue. Zero fields take the documented defaults;
// Key, and Less or Priority, are required.
type Config[K comparable, T any] struct {
	// Key returns an item's identity. Required.
	Key func(item T) K
	// Less orders activeQ (the QueueSort extension point): true if a goes
	// first. Required; ByPriority is the usual choice. It runs under the
	// lock and must be pure and fast.
	Less func(a, b *Info[T]) bool
	// Priority, used when Less is nil, selects the default order: higher
	// priority first, then earlier Timestamp (ByPriority(Priority)). The
	// queue then caches each item's priority and compares without calling
	// back, which is the fastest order. It runs under the lock.
	Priority func(item T) int32

	// InitialBackoff is the backoff after the first failure. Default 1s.
	InitialBackoff time.Duration
	// MaxBackoff caps the backoff, which doubles per failure. Default 10s.
	MaxBackoff time.Duration
	// DisableBackoff turns backoff off: a failed item is retried as soon as
	// it is requeued (upstream's max backoff of 0).
	DisableBackoff bool
	// MaxInUnschedulable is how long an item may stay parked before the
	// leftover flush retries it. Default 5m.
	MaxInUnschedulable time.Duration
	// DisablePopFromBackoff turns off KEP-5142: with it on (the default),
	// Pop takes the head of the unschedulable backoff heap when activeQ is
	// empty, and that heap orders by 1-second windows of expiry, then Less.
	DisablePopFromBackoff bool
	// DisableQueueingHints selects the legacy race rule: every hint answers
	// Queue, and an attempt that fails after a move request since its pop
	// goes to backoff instead of parking (the moveRequestCycle rule).
	DisableQueueingHints bool

	// Hints maps a plugin name to the events it wants to hear about, each
	// with an optional hint function.
	Hints map[string][]EventHint[T]
	// PreEnqueue gates run, in order, before an item enters activeQ (and,
	// with pop-from-backoff, backoffQ).
	PreEnqueue []PreEnqueue[T]
	// UpdateEvents classifies an update of a parked or in-flight item into
	// the events it amounts to (for pods: label change, toleration change,
	// gates removed, ...). An empty result means nothing that matters to
	// scheduling changed. Nil means every update is one UnschedulablePod
	// Update event.
	UpdateEvents func(oldItem, newItem T) []Event

	// Recorder receives metrics. Nil records nothing.
	Recorder Recorder

	// Clock is the time source of Queue (not Core). Default: the wall clock.
	Clock Clock
	// FlushBackoffInterval is how often Queue.Run moves expired backoff
	// items to activeQ. Default 1s.
	FlushBackoffInterval time.Duration
	// FlushUnschedulableInterval is how often Queue.Run runs the leftover
	// flush. Default 30s.
	FlushUnschedulableInterval time.Duration
}

// validate checks c and returns a copy with defaults filled in.
func (c Config[K, T]) validate() (Config[K, T], error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if c.Key == nil {
		return c, bad("Key", "must not be nil")
	}
	if c.Less == nil {
		if c.Priority == nil {
			return c, bad("Less", "must not be nil (or set Priority for the default order)")
		}
		c.Less = ByPriority(c.Priority)
	} else {
		c.Priority = nil
	}
	durations := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"InitialBackoff", &c.InitialBackoff, DefaultInitialBackoff},
		{"MaxBackoff", &c.MaxBackoff, DefaultMaxBackoff},
		{"MaxInUnschedulable", &c.MaxInUnschedulable, DefaultMaxInUnschedulable},
		{"FlushBackoffInterval", &c.FlushBackoffInterval, DefaultFlushBackoffInterval},
		{"FlushUnschedulableInterval", &c.FlushUnschedulableInterval, DefaultFlushUnschedulableInterval},
	}
	for _, f := range durations {
		if *f.d < 0 {
			return c, bad(f.name, "must not be negative, got %v", *f.d)
		}
		if *f.d == 0 {
			*f.d = f.def
		}
	}
	if c.InitialBackoff > c.MaxBackoff {
		return c, bad("InitialBackoff", "%v is greater than MaxBackoff %v", c.InitialBackoff, c.MaxBackoff)
	}
	for name, regs := range c.Hints {
		if name == "" {
			return c, bad("Hints", "plugin name must not be empty")
		}
		for i, r := range regs {
			if r.Event.Action == 0 {
				return c, bad(fmt.Sprintf("Hints[%q][%d].Event.Action", name, i), "must not be empty")
			}
			if r.Event.Resource == "" {
				return c, bad(fmt.Sprintf("Hints[%q][%d].Event.Resource", name, i), "must not be empty")
			}
		}
	}
	seen := map[string]bool{}
	for i, p := range c.PreEnqueue {
		if p.Name == "" || p.Admit == nil {
			return c, bad(fmt.Sprintf("PreEnqueue[%d]", i), "needs a Name and an Admit func")
		}
		if seen[p.Name] {
			return c, bad(fmt.Sprintf("PreEnqueue[%d]", i), "duplicate name %q", p.Name)
		}
		seen[p.Name] = true
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return c, nil
}

// flatten returns the hint registrations in a fixed order: by plugin name,
// then as registered. A fixed order keeps runs reproducible.
func flatten[T any](hints map[string][]EventHint[T]) []registration[T] {
	names := make([]string, 0, len(hints))
	for name := range hints {
		names = append(names, name)
	}
	slices.Sort(names)
	var regs []registration[T]
	for _, name := range names {
		for _, h := range hints[name] {
			regs = append(regs, registration[T]{plugin: name, event: h.Event, fn: h.Fn})
		}
	}
	return regs
}
