package schedq

// Hint is a queueing hint's verdict on whether an event may have made an
// item worth trying again.
type Hint uint8

const (
	// HintSkip: the event cannot help this item; leave it parked.
	HintSkip Hint = iota
	// HintQueue: the event may help; requeue the item (after its backoff if
	// a plugin rejected it, at once if a plugin left it pending).
	HintQueue
)

// HintFn decides whether an event, with its old and new objects (either may
// be nil), can make item schedulable. It runs under the queue's lock, so it
// must be pure and fast: no I/O, no calls back into the queue. An error
// counts as HintQueue. The objects are typed any because one queue hears of
// many kinds of object; the queue never looks at them.
type HintFn[T any] func(item T, oldObj, newObj any) (Hint, error)

// EventHint registers a plugin's interest in an event. A nil Fn always
// answers HintQueue.
type EventHint[T any] struct {
	Event Event
	Fn    HintFn[T]
}

// PreEnqueue is a gate that an item must pass before it can be tried: a
// false Admit parks the item as gated, with Name as its gating plugin.
// Admit runs under the queue's lock, so it must be pure and fast.
type PreEnqueue[T any] struct {
	Name  string
	Admit func(item T) bool
}

// strategy is where a requeued item goes, in rising order of eagerness.
type strategy uint8

const (
	stayParked strategy = iota
	afterBackoff
	immediately
)

// registration is one (plugin, event, hint) triple, flattened from Config.
type registration[T any] struct {
	plugin string
	event  Event
	fn     HintFn[T]
	waking string // "plugin:event label", as explanations name it (WakingEvents)
}
