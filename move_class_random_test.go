package schedq

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// hintLog is a moveLog that also keeps each hint call.
type hintLog struct{ moveLog }

func (r *hintLog) HintDone(_ int64, plugin, event string, h Hint, err error) {
	r.lines = append(r.lines, fmt.Sprintf("hint %s %s %v %v", plugin, event, h, err))
}

// TestMoveByClassSameAsByItemRandom drives two queues with
// Config.HintClass, one judging by cohort and one item by item, through
// the same random operations (adds, failures with shared and distinct
// plugin lists, updates of label, priority, gate and group while parked,
// deletes, activations, placements, Park, events (also narrowed by a
// match), flushes, the clock going back, group entities beside the
// cohorts, the move request's epoch wrapping), with and without a wake
// budget by class (one slot per item, or room by label so that one class
// finds no room while another still fits): what comes in where, each
// move request's counts, the hint calls (in any order), the counts, each
// item's place and its explanation (the event that deferred it, its
// leftover flush, its position) must be the same at every step.
// O(runs × steps) small queues; about 6 s at a load of 3.
func TestMoveByClassSameAsByItemRandom(t *testing.T) {
	labels := []string{"", "web", "db", "a"}
	fails := []Failure{
		{}, {RejectedBy: []string{"Fit"}}, {RejectedBy: []string{"Affinity"}},
		{RejectedBy: []string{"Fit", "Affinity"}}, {RejectedBy: []string{"Affinity", "Fit"}},
		{WaitingOn: []string{"Volume"}}, {RejectedBy: []string{"Fit"}, WaitingOn: []string{"Volume"}},
	}
	runs := 200
	if testing.Short() {
		runs = 20
	}
	state := xorshift(45)
	rnd := state.intn
	for run := range runs {
		seed := state
		budget, groups := run%2 == 1, run%4 >= 2
		roomBudget := fuzzBudget
		if run/4%2 == 1 {
			roomBudget = labelRoomBudget
		}
		one := func(byClass bool) (*harness, *hintLog) {
			log := &hintLog{}
			h := newHarness(t, withClass, func(c *Config[string, job]) {
				c.Recorder = log
				c.Hints["Fit"] = append(c.Hints["Fit"], EventHint[job]{Event: evPlacedAdd, Fn: affinityHint})
				if groups {
					groupsOn(c)
				}
				if budget {
					c.Less, c.Priority = nil, jobPrio
					c.Budget, c.ClassBudget = roomBudget, true
				}
			})
			h.c.parked.byClass = byClass
			h.c.epoch = math.MaxUint32 - uint32(run%64) // wraps in the run (nextEpoch)
			if groups {
				// Group entities park beside the cohorts, outside them.
				h.setGroup("g0", 1, 3)
				h.setGroup("g1", 2, 1)
			}
			return h, log
		}
		hc, lc := one(true)
		hi, li := one(false)
		for step := range 400 {
			state = seed // both queues see the same choices
			op, k, x := rnd(13), rnd(16), rnd(1<<16)
			seed = state
			desc := classOpBoth(hc, hi, op, x, fmt.Sprint("j", k), labels, fails, groups)
			sameClassQueues(t, fmt.Sprintf("run %d step %d %s", run, step, desc), hc, hi, lc, li, 16, step%50 == 49)
		}
		if hc.c.judged > hi.c.judged {
			t.Fatalf("run %d: judged %d items by cohort, %d by item", run, hc.c.judged, hi.c.judged)
		}
	}
}

// classOpBoth applies one operation (classOp) to both queues, checking
// each's invariants after it, and returns its description.
func classOpBoth(hc, hi *harness, op, x int, name string, labels []string, fails []Failure, groups bool) string {
	desc := ""
	for _, h := range []*harness{hc, hi} {
		desc = classOp(h, op, x, name, labels, fails, groups)
		h.check()
	}
	return desc
}

// classOp applies random operation op (0-12), with random argument x, to
// h for the random comparisons of judging and deferring by cohort with
// doing so item by item, and returns what it did.
func classOp(h *harness, op, x int, name string, labels []string, fails []Failure, groups bool) string {
	switch op {
	case 0:
		p := job{name: name, prio: int32(x % 4), label: labels[x%len(labels)], gated: x%13 == 0}
		if groups && x%3 != 0 {
			p.group = []string{"g0", "g1"}[x%2]
		}
		h.c.Add(p, h.now)
		return "add " + name
	case 1, 2:
		if a, ok := h.c.Pop(h.now); ok {
			_ = h.c.Requeue(a, fails[x%len(fails)], h.now)
		}
		return "pop and fail"
	case 3:
		if info, _, ok := h.c.Get(name); ok {
			p := info.Item
			switch x % 3 {
			case 0:
				p.label = labels[x/3%len(labels)]
			case 1:
				p.prio = int32(x / 3 % 5)
			case 2:
				p.gated = !p.gated
			}
			if groups && x%7 == 0 {
				p.group = []string{"", "g0", "g1"}[x/7%3] // into or out of a group
			}
			h.c.Update(info.Item, p, h.now)
		}
		return "update " + name
	case 4:
		_ = h.c.Delete(name, h.now)
		return "delete " + name
	case 5:
		h.c.Activate([]string{name}, h.now)
		return "activate " + name
	case 6, 7:
		ev := fuzzEvents[x%len(fuzzEvents)]
		var obj any = x / 16 % 4
		if ev == evPlacedAdd {
			obj = labels[x/16%len(labels)]
		}
		h.c.Move(ev, nil, obj, nil, h.now)
		return fmt.Sprintf("move %s %v", ev.label(), obj)
	case 8:
		h.step(fuzzSteps[x%len(fuzzSteps)])
		h.c.Tick(h.now)
		return "tick"
	case 9:
		h.step(-fuzzSteps[x%len(fuzzSteps)])
		return "clock back"
	case 10:
		if a, ok := h.c.Pop(h.now); ok {
			_ = h.c.Done(a, h.now)
		}
		return "pop and place"
	case 11:
		ev := fuzzEvents[x%3] // machine events: they have room
		l := labels[x/16%len(labels)]
		h.c.Move(ev, nil, x/64%4, func(i *Info[job]) bool { return i.Item.label == l }, h.now)
		return fmt.Sprintf("move %s %d matching %q", ev.label(), x/64%4, l)
	default:
		p := job{name: name, prio: int32(x % 4), label: labels[x%len(labels)]}
		_ = h.c.Park(p, fails[x/4%len(fails)], h.now)
		return "park " + name
	}
}

// sameClassQueues fails unless hc (by cohort) and hi (by item) agree on
// what came in where and each move request's counts since the last
// call, the hint calls (in any order), the counts, and where items j0
// to j(n-1) are and what Explain says of their deferral (with full, all
// of Explain); it clears the logs.
func sameClassQueues(t *testing.T, at string, hc, hi *harness, lc, li *hintLog, n int, full bool) {
	t.Helper()
	// The hints are asked in another order (cohort by cohort), as
	// often: compare them as a set, the rest in order.
	if !slices.Equal(sortedHints(lc.lines), sortedHints(li.lines)) {
		t.Fatalf("%s: by cohort %q, by item %q", at, lc.lines, li.lines)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("j", i)
	}
	for _, n := range names {
		if a, b := hc.where(n), hi.where(n); a != b {
			t.Fatalf("%s: %s by cohort %v, by item %v", at, n, a, b)
		}
		if a, b := deferralOf(hc, n), deferralOf(hi, n); a != b {
			t.Fatalf("%s: %s by cohort %s, by item %s", at, n, a, b)
		}
	}
	if full {
		if a, b := explainAll(hc, names), explainAll(hi, names); !slices.Equal(a, b) {
			t.Fatalf("%s: explained\nby cohort %q\nby item   %q", at, a, b)
		}
	}
	if a, b := hc.c.Counts(), hi.c.Counts(); a != b {
		t.Fatalf("%s: counts by cohort %+v, by item %+v", at, a, b)
	}
	lc.lines, li.lines = lc.lines[:0], li.lines[:0]
}

// sortedHints returns lines with its hint calls sorted to its end.
func sortedHints(lines []string) []string {
	var other, hints []string
	for _, l := range lines {
		if strings.HasPrefix(l, "hint ") {
			hints = append(hints, l)
		} else {
			other = append(other, l)
		}
	}
	slices.Sort(hints)
	return append(other, hints...)
}

// labelRoomBudget gives machine events room for newObj%4 units (an int
// newObj), or for one; a "db" item asks for two, any other for one, so
// that one class finds no room while another still fits. Taint events
// share a room per machine.
func labelRoomBudget(ev Event, _, newObj any) (Budget[job], bool) {
	if ev.Kind != "Machine" {
		return nil, false
	}
	n, i := 1, 0
	if v, ok := newObj.(int); ok {
		n, i = v%4, v
	}
	if ev.Action == actTaint {
		return &labelRoom{free: n, key: fmt.Sprint("m", i%2)}, true
	}
	return &labelRoom{free: n}, true
}

// labelRoom is labelRoomBudget's room.
type labelRoom struct {
	free int
	key  string
}

func (b *labelRoom) Key() string { return b.key }

func labelCost(j job) int {
	if j.label == "db" {
		return 2
	}
	return 1
}

func (b *labelRoom) Take(j job) bool {
	if labelCost(j) > b.free {
		return false
	}
	b.free -= labelCost(j)
	return true
}

func (b *labelRoom) Return(j job) bool {
	b.free += labelCost(j)
	return j.prio%2 == 0 // some items say their room was used
}
