package schedq

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// moveLog is a recorder that keeps, in order, what a move request and the
// places report: the items coming in and each request's counts.
type moveLog struct {
	nopRecorder
	lines []string
}

func (r *moveLog) Incoming(q Location, event string) {
	r.lines = append(r.lines, fmt.Sprintf("in %v %s", q, event))
}

func (r *moveLog) IncomingGroup(q Location, event string, size int) {
	r.lines = append(r.lines, fmt.Sprintf("in %v %s (group of %d)", q, event, size))
}

func (r *moveLog) Moved(event string, examined, moved int) {
	r.lines = append(r.lines, fmt.Sprintf("moved %s examined %d moved %d", event, examined, moved))
}

// withClass sets Config.HintClass to classOfLabel.
func withClass(c *Config[string, job]) { c.HintClass = classOfLabel }

// parkLabelled parks n items of each label, rejected by Affinity.
func parkLabelled(h *harness, n int, labels ...string) {
	h.t.Helper()
	for i := range n {
		for _, l := range labels {
			h.add(job{name: fmt.Sprintf("%s%d", l, i), prio: int32(i % 7), label: l})
		}
	}
	for range n * len(labels) {
		h.fail(h.popName(), "Affinity")
	}
	h.step(time.Minute)
}

// TestMoveJudgesEachClassOnce: with Config.HintClass, a move request that
// no match narrows judges each class of the parked items once, with one
// of its items, not each item: a request that wakes nobody looks at none
// of them, and one that wakes a class looks at only that class's items
// beyond the one it asked about. The recorder still counts every item
// the event's plugins held back as examined.
func TestMoveJudgesEachClassOnce(t *testing.T) {
	log := &moveLog{}
	h := newHarness(t, withClass, func(c *Config[string, job]) { c.Recorder = log })
	parkLabelled(h, 100, "a", "b", "c")
	before := h.c.judged
	h.move(evPlacedAdd, "zzz") // no label matches: nobody moves
	if got := h.c.judged - before; got != 3 {
		t.Fatalf("a request that moves nobody judged %d items, want 3 (one per class)", got)
	}
	before = h.c.judged
	h.move(evPlacedAdd, "b")
	if got := h.c.judged - before; got != 3 {
		t.Fatalf("a request that moves one class judged %d items, want 3", got)
	}
	if got := h.c.Counts(); got.Active != 100 || got.Unschedulable != 200 {
		t.Fatalf("counts %+v, want the 100 items of b active, 200 parked", got)
	}
	want := []string{"moved PlacedAdd examined 300 moved 0", "moved PlacedAdd examined 300 moved 100"}
	var got []string
	for _, l := range log.lines {
		if len(l) > 5 && l[:5] == "moved" {
			got = append(got, l)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("recorded %q, want %q", got, want)
	}
}

// TestMoveByClassSameAsByItem drives two queues alike, one that judges
// the parked items by class and one that judges each (its cohorts turned
// off), through parking by several plugins, pending and gated items,
// classes that change while parked, and move requests that wake some
// classes, none or all; what each reports and the pop order must agree.
func TestMoveByClassSameAsByItem(t *testing.T) {
	run := func(byClass bool) []string {
		log := &moveLog{}
		h := newHarness(t, withClass, func(c *Config[string, job]) {
			c.Recorder = log
			c.Priority, c.Less = jobPrio, nil
			// Items rejected by Fit and Affinity are in two buckets
			// that hear PlacedAdd.
			c.Hints["Fit"] = append(c.Hints["Fit"], EventHint[job]{Event: evPlacedAdd, Fn: affinityHint})
		})
		h.c.parked.byClass = byClass
		fails := []Failure{
			{RejectedBy: []string{"Affinity"}},
			{RejectedBy: []string{"Fit", "Affinity"}},
			{RejectedBy: []string{"Fit"}},
			{RejectedBy: []string{"Affinity"}, WaitingOn: []string{"Volume"}},
		}
		labels := []string{"a", "b", "c"}
		for i := range 48 {
			h.add(job{name: fmt.Sprint("j", i), prio: int32(i % 3), label: labels[i%3], gated: i%11 == 0})
		}
		for i := 0; h.c.Counts().Active > 0; i++ {
			h.failWith(h.popName(), fails[i%len(fails)])
		}
		h.step(time.Minute)
		for i, ev := range []struct {
			ev  Event
			obj any
		}{
			{evPlacedAdd, "zzz"}, {evPlacedAdd, "b"}, {evMachineAdd, 1}, {evVolumeAdd, nil},
			{evPlacedAdd, "c"}, {evMachineTaint, 2}, {evGateGone, nil},
		} {
			if i == 3 { // relabel two parked items: their class changes while parked
				for _, name := range []string{"j0", "j4"} {
					if info, loc, ok := h.c.Get(name); ok && (loc == InUnschedulable || loc == InGated) {
						p := info.Item
						p.label = "c"
						h.c.Update(info.Item, p, h.now)
						h.check()
					}
				}
			}
			h.move(ev.ev, ev.obj)
			h.step(time.Second)
		}
		h.step(time.Hour)
		h.c.Tick(h.now)
		return append(log.lines, h.drain()...)
	}
	byItem, byClass := run(false), run(true)
	if !slices.Equal(byItem, byClass) {
		for i := range min(len(byItem), len(byClass)) {
			if byItem[i] != byClass[i] {
				t.Fatalf("line %d: by class %q, by item %q", i, byClass[i], byItem[i])
			}
		}
		t.Fatalf("by class %d lines, by item %d", len(byClass), len(byItem))
	}
}
