package schedq

import (
	"slices"
	"testing"
	"time"
)

// pod is the test item: a name, a priority, a label that affinity-style
// hints look at, and a gate that the "Gate" PreEnqueue check holds.
type pod struct {
	name  string
	prio  int32
	label string
	gated bool
}

func podKey(p pod) string            { return p.name }
func podPrio(p pod) int32            { return p.prio }
func mk(name string, prio int32) pod { return pod{name: name, prio: prio} }

// Plugins of the test configuration:
//   - Fit: NodeAdd and node taint updates; its hint queues for an even
//     newObj int and skips odd ones (nil queues).
//   - Affinity: AssignedPodAdd; queues if the new object's string equals
//     the item's label.
//   - Volume: PersistentVolumeClaim Add; used as a pending plugin.
//   - Gate: PreEnqueue check holding gated pods; registered for gate removal.
//   - Quiet: rejects but registered for nothing.
var (
	evNodeAdd   = Event{Resource: Node, Action: Add}
	evNodeTaint = Event{Resource: Node, Action: UpdateNodeTaint}
	evNodeLabel = Event{Resource: Node, Action: UpdateNodeLabel}
	evPodAdd    = Event{Resource: AssignedPod, Action: Add}
	evPVCAdd    = Event{Resource: PersistentVolumeClaim, Action: Add}
	evGateGone  = Event{Resource: UnschedulablePod, Action: UpdatePodSchedulingGatesEliminated}
	evLabel     = Event{Resource: UnschedulablePod, Action: UpdatePodLabel}
	evService   = Event{Resource: Service, Action: Add}
)

func fitHint(_ pod, _, newObj any) (Hint, error) {
	if n, ok := newObj.(int); ok && n%2 != 0 {
		return HintSkip, nil
	}
	return HintQueue, nil
}

func affinityHint(p pod, _, newObj any) (Hint, error) {
	if s, ok := newObj.(string); ok && s == p.label {
		return HintQueue, nil
	}
	return HintSkip, nil
}

func testConfig() Config[string, pod] {
	return Config[string, pod]{
		Key:  podKey,
		Less: ByPriority(podPrio),
		Hints: map[string][]EventHint[pod]{
			"Fit":      {{Event: evNodeAdd, Fn: fitHint}, {Event: evNodeTaint, Fn: fitHint}},
			"Affinity": {{Event: evPodAdd, Fn: affinityHint}, {Event: evLabel}},
			"Volume":   {{Event: evPVCAdd}},
			"Gate":     {{Event: evGateGone}},
		},
		PreEnqueue: []PreEnqueue[pod]{{Name: "Gate", Admit: func(p pod) bool { return !p.gated }}},
		UpdateEvents: func(o, n pod) []Event {
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

// t0 is a whole second, so that backoff windows line up with test steps.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives a Core in virtual time and checks the invariants after
// every step.
type harness struct {
	t   *testing.T
	c   *Core[string, pod]
	now time.Time
}

func newHarness(t *testing.T, mutate ...func(*Config[string, pod])) *harness {
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
	if err := h.c.CheckInvariants(); err != nil {
		h.t.Fatalf("invariants: %v", err)
	}
}

func (h *harness) add(ps ...pod) {
	h.t.Helper()
	for _, p := range ps {
		h.c.Add(p, h.now)
		h.check()
	}
}

func (h *harness) step(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) pop() Info[pod] {
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
	h.failWith(name, Failure{UnschedulablePlugins: plugins})
}

func (h *harness) failWith(name string, f Failure) {
	h.t.Helper()
	info, loc, ok := h.c.Get(name)
	if !ok || loc != InFlight {
		h.t.Fatalf("fail %q: at %v, want in flight", name, loc)
	}
	if _, err := h.c.AddUnschedulableIfNotPresent(info.Item, info.Cycle, f, h.now); err != nil {
		h.t.Fatalf("AddUnschedulableIfNotPresent(%q): %v", name, err)
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
	h.c.MoveAllToActiveOrBackoffQueue(ev, nil, newObj, nil, h.now)
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

func (h *harness) info(name string) Info[pod] {
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
		if err := h.c.Done(info.Item.name, info.Cycle); err != nil {
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
