package schedq

import (
	"slices"
	"testing"
	"time"
)

// job is the test item: a name, a priority, a label that affinity-style
// hints look at, and a gate that the "Gate" PreEnqueue check holds.
type job struct {
	name  string
	prio  int32
	label string
	gated bool
	group string // its group, with groupsOn; "" for a lone item
}

func jobKey(p job) string            { return p.name }
func jobPrio(p job) int32            { return p.prio }
func mk(name string, prio int32) job { return job{name: name, prio: prio} }

// The test events' actions.
const (
	actAdd Action = 1 << iota
	actTaint
	actRelabel
	actUngate
)

// Plugins of the test configuration, over machines that run the test
// items, and the items themselves:
//   - Fit: a machine added, or its taints changed; its hint queues for an
//     even newObj int and skips odd ones (nil queues).
//   - Affinity: an item placed; queues if the new object's string equals
//     the item's label. Also an item relabelled.
//   - Volume: a volume added; used as a pending plugin.
//   - Gate: PreEnqueue check holding gated items; registered for gate removal.
//   - Quiet: rejects but registered for nothing.
var (
	evMachineAdd   = Event{Kind: "Machine", Action: actAdd, Label: "MachineAdd"}
	evMachineTaint = Event{Kind: "Machine", Action: actTaint, Label: "MachineTaint"}
	evMachineLabel = Event{Kind: "Machine", Action: actRelabel}
	evPlacedAdd    = Event{Kind: "Placed", Action: actAdd, Label: "PlacedAdd"}
	evVolumeAdd    = Event{Kind: "Volume", Action: actAdd}
	evGateGone     = Event{Kind: "Item", Action: actUngate, Label: "ItemUngated"}
	evLabel        = Event{Kind: "Item", Action: actRelabel, Label: "ItemRelabel"}
	evService      = Event{Kind: "Service", Action: actAdd}
)

// byPrio is the default order written as a Less, so that the tests cover
// the queue's general heap; Config.Priority selects the specialised one.
func byPrio(a, b *Info[job]) bool {
	if a.Item.prio != b.Item.prio {
		return a.Item.prio > b.Item.prio
	}
	return a.Timestamp.Before(b.Timestamp)
}

// att is the handle of the attempt of cycle on key, as Pop returned it.
func att(key string, cycle int64) Attempt[string, job] {
	return Attempt[string, job]{Key: key, Info: Info[job]{Cycle: cycle}}
}

// req is the handle of the attempt of cycle on p, for Requeue.
func req(p job, cycle int64) Attempt[string, job] {
	return Attempt[string, job]{Key: p.name, Info: Info[job]{Item: p, Cycle: cycle}}
}

func fitHint(_ job, _, newObj any) (Hint, error) {
	if n, ok := newObj.(int); ok && n%2 != 0 {
		return HintSkip, nil
	}
	return HintQueue, nil
}

func affinityHint(p job, _, newObj any) (Hint, error) {
	if s, ok := newObj.(string); ok && s == p.label {
		return HintQueue, nil
	}
	return HintSkip, nil
}

func testConfig() Config[string, job] {
	return Config[string, job]{
		Key:  jobKey,
		Less: byPrio,
		Hints: map[string][]EventHint[job]{
			"Fit":      {{Event: evMachineAdd, Fn: fitHint}, {Event: evMachineTaint, Fn: fitHint}},
			"Affinity": {{Event: evPlacedAdd, Fn: affinityHint}, {Event: evLabel}},
			"Volume":   {{Event: evVolumeAdd}},
			"Gate":     {{Event: evGateGone}},
		},
		PreEnqueue: []PreEnqueue[job]{{Name: "Gate", Admit: func(p job) bool { return !p.gated }}},
		UpdateEvents: func(o, n job) []Event {
			var evs []Event
			if o.gated && !n.gated {
				evs = append(evs, evGateGone)
			}
			if o.label != n.label {
				evs = append(evs, evLabel)
			}
			return evs
		},
	}
}

// absent is the zero Location: not in the queue.
const absent = Location(0)

// t0 is a whole second, so that backoff windows line up with test steps.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives a Core in virtual time and checks the invariants after
// every step.
type harness struct {
	t   *testing.T
	c   *Core[string, job]
	now time.Time
}

func newHarness(t *testing.T, mutate ...func(*Config[string, job])) *harness {
	t.Helper()
	cfg := testConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, c: c, now: t0}
}

func (h *harness) check() {
	h.t.Helper()
	if err := h.c.checkInvariants(); err != nil {
		h.t.Fatalf("invariants: %v", err)
	}
}

func (h *harness) add(ps ...job) {
	h.t.Helper()
	for _, p := range ps {
		h.c.Add(p, h.now)
		h.check()
	}
}

func (h *harness) step(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) pop() Attempt[string, job] {
	h.t.Helper()
	info, ok := h.c.Pop(h.now)
	if !ok {
		h.t.Fatalf("Pop: nothing poppable; counts %+v", h.c.Counts())
	}
	h.check()
	return info
}

func (h *harness) popName() string { h.t.Helper(); return h.pop().Item.name }

func (h *harness) noPop() {
	h.t.Helper()
	if info, ok := h.c.Pop(h.now); ok {
		h.t.Fatalf("Pop returned %q, want nothing", info.Item.name)
	}
}

// fail requeues an in-flight item with the given unschedulable plugins (none
// means an error).
func (h *harness) fail(name string, plugins ...string) {
	h.t.Helper()
	h.failWith(name, Failure{RejectedBy: plugins})
}

func (h *harness) failWith(name string, f Failure) {
	h.t.Helper()
	info, loc, ok := h.c.Get(name)
	if !ok || loc != InFlight {
		h.t.Fatalf("fail %q: at %v, want in flight", name, loc)
	}
	if err := h.c.Requeue(req(info.Item, info.Cycle), f, h.now); err != nil {
		h.t.Fatalf("Requeue(%q): %v", name, err)
	}
	h.check()
}

// attemptFail pops name (which must be next) and fails it.
func (h *harness) attemptFail(name string, plugins ...string) {
	h.t.Helper()
	if got := h.popName(); got != name {
		h.t.Fatalf("popped %q, want %q", got, name)
	}
	h.fail(name, plugins...)
}

func (h *harness) move(ev Event, newObj any) {
	h.t.Helper()
	h.c.Move(ev, nil, newObj, nil, h.now)
	h.check()
}

func (h *harness) where(name string) Location {
	_, loc, _ := h.c.Get(name)
	return loc
}

func (h *harness) want(name string, loc Location) {
	h.t.Helper()
	if got := h.where(name); got != loc {
		h.t.Fatalf("%q is %v, want %v", name, got, loc)
	}
}

func (h *harness) info(name string) Info[job] {
	h.t.Helper()
	info, _, ok := h.c.Get(name)
	if !ok {
		h.t.Fatalf("%q not found", name)
	}
	return info
}

// drain pops everything poppable and returns the names in order, ending
// each attempt with Done.
func (h *harness) drain() []string {
	h.t.Helper()
	var names []string
	for {
		info, ok := h.c.Pop(h.now)
		if !ok {
			return names
		}
		names = append(names, info.Item.name)
		if err := h.c.Done(att(info.Item.name, info.Cycle), h.now); err != nil {
			h.t.Fatal(err)
		}
		h.check()
	}
}

func (h *harness) wantOrder(want ...string) {
	h.t.Helper()
	if got := h.drain(); !slices.Equal(got, want) {
		h.t.Fatalf("pop order %q, want %q", got, want)
	}
}
