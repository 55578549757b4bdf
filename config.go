package schedq

import (
	"fmt"
	"slices"
	"time"
)

// Defaults for zero Config fields.
const (
	defaultInitialBackoff             = 1 * time.Second
	defaultMaxBackoff                 = 10 * time.Second
	defaultMaxInUnschedulable         = 5 * time.Minute
	defaultFlushBackoffInterval       = 1 * time.Second
	defaultFlushUnschedulableInterval = 30 * time.Second
)

// Config configures a queue. Zero fields take the documented defaults;
// Key, and Less or Priority, are required.
type Config[K comparable, T any] struct {
	// Key returns an item's identity. Required.
	Key func(item T) K
	// Priority selects the default order of activeQ: higher priority
	// first, then earlier Timestamp, then the order in which the items
	// entered activeQ. The queue caches each item's priority and compares
	// without calling back, which is the fastest order: it asks when an
	// item is added, updated, parked or requeued as another value than
	// popped (for a pointer, another pointer), so an item changed in
	// place keeps its priority until its Update. It runs under the lock
	// and must be pure. Set Priority or Less, not both: setting both is
	// an error.
	Priority func(item T) int32
	// Group names the group an item belongs to; "" means a lone item. Nil:
	// no groups. Group names have their own name space, apart from item
	// keys. An item's group must not change while it is in flight. It runs
	// under the lock and must be pure and fast. See docs/groups.md.
	Group func(item T) string
	// HintClass, if set, says which items every hint judges alike: for
	// any event, two items with the same class get the same answer from
	// every hint (their items differ only in what no hint reads, as pods
	// made from one template). A move request then asks each hint once
	// per class: in a group, of one member per class; across the parked
	// items, a request without a match judges each cohort of the class
	// (items with the same gate and plugin lists) once, with one of its
	// items, and does not look at the items of a cohort that stays
	// parked; with a match, the first item of a class asks and the
	// others of the class take its answer (remembered for that request
	// only, in a table of 256 answers, so with many classes some are
	// asked again). A class
	// that joins items the hints tell apart makes items miss events
	// until the leftover flush. Nil: every item is asked. The recorder
	// hears only the hint calls made. It runs under the lock when an
	// item is parked or updated while parked, and when a group member
	// is added or updated, and must be pure and fast.
	HintClass func(item T) uint64
	// Less, if set, replaces the default order: true if a goes first. Set
	// it instead of Priority, not with it.
	// Items that Less finds equal pop in the order they entered activeQ.
	// It runs under the lock, except in Queue.Pending's sort, which calls
	// it outside the lock on copies of the items' Info, maybe while other
	// operations run; it must be pure and fast.
	Less func(a, b *Info[T]) bool

	// Fairness, if set, orders activeQ fairly between tenants (see
	// Fairness). Nil: priority, then arrival, as described above.
	Fairness *Fairness[T]

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

	// Hints maps a check's name to the events it wants to hear about, each
	// with an optional hint function.
	Hints map[string][]EventHint[T]
	// PreEnqueue gates run, in order, before an item enters activeQ (and,
	// with pop-from-backoff, backoffQ).
	PreEnqueue []PreEnqueue[T]
	// UpdateEvents classifies an update of a parked or in-flight item into
	// the events it amounts to (for a job: its quota grew, its pause was
	// lifted), which the hints then judge. An empty result means nothing
	// that matters to scheduling changed. Nil: any update may matter, so it
	// is a wildcard event (label "ItemUpdate"): a parked item goes back to
	// be tried after its backoff, and a gated one has its gates run again.
	UpdateEvents func(oldItem, newItem T) []Event
	// Budget, if set, makes move requests wake only what an event makes
	// room for. For an event it returns the room (ok false: no limit, as
	// for the queue's own events); the items the hints would wake are
	// offered to it in pop order, and those that do not fit stay parked,
	// deferred. Room comes back when a woken item's attempt ends or the
	// item goes, and is offered to the deferred items then, so none waits
	// for the leftover flush while room it could use is unused. Nil: every
	// item a hint accepts wakes, as upstream. It and its budgets' methods
	// run under the lock: they keep state, but must be fast and must not
	// block or call back into the queue.
	Budget func(ev Event, oldObj, newObj any) (Budget[T], bool)
	// ClassBudget, with Budget and HintClass set, says that a budget's
	// Take also answers alike for items of one hint class, given the same
	// room (they ask for the same room, as pods of one template do). Once
	// an item of a class does not fit in an event's room, the queue then
	// offers that room to no later item of the class, until room comes
	// back within the offer: an offer of room costs a Take per class that
	// does not fit, not per item. The items skipped are deferred as if
	// Take had said no. Without HintClass it does nothing.
	ClassBudget bool
	// Match reports whether a registered event covers a sent one. Nil: the
	// kinds agree (or the registered Kind is AnyKind) and the action bits
	// overlap. A registration with AnyKind and AnyAction hears every event
	// whatever Match says. It runs under the lock and must be pure and fast.
	Match func(registered, sent Event) bool

	// CheckInvariants, if set, makes the queue verify its internal
	// consistency after every operation that changes it (O(n) each time)
	// and pass each violation found to it. For tests, fuzzing and checked
	// simulation runs.
	CheckInvariants func(error)

	// Recorder receives metrics, under the lock, in the order the changes
	// happen: its methods must be fast and must not block. Nil records
	// nothing.
	Recorder Recorder

	// Clock is the time source of Queue; Core reads no clock. Default: the
	// wall clock.
	Clock Clock
	// FlushBackoffInterval is how often Tick moves the items whose backoff
	// ended to activeQ. Default 1s.
	FlushBackoffInterval time.Duration
	// FlushUnschedulableInterval is how often Tick runs the leftover flush,
	// which retries items parked for longer than MaxInUnschedulable.
	// Default 30s.
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
	switch {
	case c.Less == nil && c.Priority == nil:
		return c, bad("Priority", "must not be nil (or set Less for an order of your own)")
	case c.Less != nil && c.Priority != nil:
		return c, bad("Priority and Less", "both are set; set one: Priority for the default order, Less for an order of your own")
	case c.Less == nil:
		c.Less = byPriority(c.Priority)
	}
	durations := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"InitialBackoff", &c.InitialBackoff, defaultInitialBackoff},
		{"MaxBackoff", &c.MaxBackoff, defaultMaxBackoff},
		{"MaxInUnschedulable", &c.MaxInUnschedulable, defaultMaxInUnschedulable},
		{"FlushBackoffInterval", &c.FlushBackoffInterval, defaultFlushBackoffInterval},
		{"FlushUnschedulableInterval", &c.FlushUnschedulableInterval, defaultFlushUnschedulableInterval},
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
			if r.Event.Kind == "" {
				return c, bad(fmt.Sprintf("Hints[%q][%d].Event.Kind", name, i), "must not be empty")
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
	if err := c.validateFairness(); err != nil {
		return c, err
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Match == nil {
		c.Match = defaultMatch
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
			regs = append(regs, registration[T]{plugin: name, event: h.Event, fn: h.Fn, waking: name + ":" + h.Event.label()})
		}
	}
	return regs
}
