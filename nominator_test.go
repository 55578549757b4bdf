package schedq

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// nominatedNames returns the names of items, for comparisons.
func nominatedNames(items []job) []string {
	out := make([]string, len(items))
	for i, p := range items {
		out[i] = p.name
	}
	return out
}

// nominate nominates name to target and fails the test on an error.
func (h *harness) nominate(name, target string) {
	h.t.Helper()
	if err := h.c.Nominate(name, target); err != nil {
		h.t.Fatalf("nominate %s to %q: %v", name, target, err)
	}
	h.check()
}

// wantNominated checks the items nominated to each target, and that the
// targets listed are exactly those.
func (h *harness) wantNominated(want map[string][]string) {
	h.t.Helper()
	h.check()
	var targets []string
	for target, keys := range want {
		if got := nominatedNames(h.c.Nominated(target)); !slices.Equal(got, keys) {
			h.t.Errorf("Nominated(%q) = %v, want %v", target, got, keys)
		}
		if len(keys) > 0 {
			targets = append(targets, target)
		}
	}
	slices.Sort(targets)
	if got := h.c.NominatedTargets(); !slices.Equal(got, targets) {
		h.t.Errorf("NominatedTargets() = %v, want %v", got, targets)
	}
}

func TestNominator(t *testing.T) {
	tests := []struct {
		name string
		run  func(h *harness)
		want map[string][]string
	}{
		{"nominated in order per target", func(h *harness) {
			h.add(mk("a", 1), mk("b", 2), mk("c", 3))
			h.nominate("b", "t1")
			h.nominate("a", "t1")
			h.nominate("c", "t2")
		}, map[string][]string{"t1": {"b", "a"}, "t2": {"c"}}},
		{"a new nomination moves the item", func(h *harness) {
			h.add(mk("a", 1), mk("b", 1))
			h.nominate("a", "t1")
			h.nominate("b", "t1")
			h.nominate("a", "t2")
		}, map[string][]string{"t1": {"b"}, "t2": {"a"}}},
		{"an empty target clears", func(h *harness) {
			h.add(mk("a", 1))
			h.nominate("a", "t1")
			h.nominate("a", "")
		}, map[string][]string{"t1": nil}},
		{"delete of a queued item drops it", func(h *harness) {
			h.add(mk("a", 1), mk("b", 1))
			h.nominate("a", "t1")
			h.nominate("b", "t1")
			if err := h.c.Delete("a", h.now); err != nil {
				h.t.Fatal(err)
			}
		}, map[string][]string{"t1": {"b"}}},
		{"delete during the attempt drops it at once", func(h *harness) {
			h.add(mk("a", 1))
			a := h.pop()
			h.nominate("a", "t1")
			if err := h.c.Delete("a", h.now); err != nil {
				h.t.Fatal(err)
			}
			h.check()
			if err := h.c.Nominate("a", "t1"); !errors.Is(err, ErrNotFound) {
				h.t.Fatalf("nominate a deleted item: %v", err)
			}
			if err := h.c.Requeue(req(a.Item, a.Cycle), Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
				h.t.Fatal(err)
			}
		}, map[string][]string{"t1": nil}},
		{"a requeue keeps it", func(h *harness) {
			h.add(mk("a", 1))
			a := h.pop()
			h.nominate("a", "t1")
			if err := h.c.Requeue(req(a.Item, a.Cycle), Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
				h.t.Fatal(err)
			}
			h.want("a", InUnschedulable)
		}, map[string][]string{"t1": {"a"}}},
		{"Done drops it", func(h *harness) {
			h.add(mk("a", 1), mk("b", 1))
			a := h.pop()
			h.nominate(a.Key, "t1")
			h.nominate("b", "t1")
			if err := h.c.Done(a, h.now); err != nil {
				h.t.Fatal(err)
			}
		}, map[string][]string{"t1": {"b"}}},
		{"Done drops it even with a copy re-added during the attempt", func(h *harness) {
			h.add(mk("a", 1))
			a := h.pop()
			h.nominate("a", "t1")
			h.add(mk("a", 1))
			if err := h.c.Done(a, h.now); err != nil {
				h.t.Fatal(err)
			}
		}, map[string][]string{"t1": nil}},
		{"an update keeps it and is what the target sees", func(h *harness) {
			h.add(mk("a", 1))
			h.nominate("a", "t1")
			h.c.Update(mk("a", 1), job{name: "a", prio: 1, label: "new"}, h.now)
			if got := h.c.Nominated("t1"); len(got) != 1 || got[0].label != "new" {
				h.t.Fatalf("Nominated after update = %+v", got)
			}
		}, map[string][]string{"t1": {"a"}}},
		{"an update during the attempt is what the target sees", func(h *harness) {
			h.add(mk("a", 1))
			h.pop()
			h.nominate("a", "t1")
			h.c.Update(mk("a", 1), job{name: "a", prio: 1, label: "new"}, h.now)
			if got := h.c.Nominated("t1"); len(got) != 1 || got[0].label != "new" {
				h.t.Fatalf("Nominated after update = %+v", got)
			}
		}, map[string][]string{"t1": {"a"}}},
		{"re-adding a queued key keeps it", func(h *harness) {
			h.add(mk("a", 1))
			h.nominate("a", "t1")
			h.add(mk("a", 5))
		}, map[string][]string{"t1": {"a"}}},
		{"unknown keys are refused", func(h *harness) {
			if err := h.c.Nominate("ghost", "t1"); !errors.Is(err, ErrNotFound) {
				h.t.Fatalf("nominate unknown: %v", err)
			}
			if err := h.c.Nominate("ghost", ""); err != nil {
				h.t.Fatalf("clearing an unknown key: %v", err)
			}
		}, map[string][]string{"t1": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.run(h)
			h.wantNominated(tc.want)
		})
	}
}

func TestNominationLookup(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	if _, ok := h.c.Nomination("a"); ok {
		t.Fatal("nominated before Nominate")
	}
	h.nominate("a", "t1")
	if got, ok := h.c.Nomination("a"); !ok || got != "t1" {
		t.Fatalf("Nomination = %q, %v", got, ok)
	}
	if h.c.Nominated("t2") != nil || testing.AllocsPerRun(10, func() { h.c.Nominated("t2") }) != 0 {
		t.Fatal("Nominated of an empty target allocates or is not nil")
	}
}

func TestExplainShowsNomination(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.nominate("a", "t7")
	x, err := h.c.Explain("a", h.now)
	if err != nil {
		t.Fatal(err)
	}
	if x.NominatedTarget != "t7" || !strings.Contains(x.Reason, "nominated to t7") ||
		!strings.Contains(x.String(), "nominated to:") {
		t.Fatalf("explanation lacks the nomination: %+v\n%s", x, x)
	}
}

// TestCheckerCatchesStaleNomination: the invariant checker reports a
// nomination whose item the queue no longer knows.
func TestCheckerCatchesStaleNomination(t *testing.T) {
	h := newHarness(t)
	h.c.nom.set("ghost", "t1")
	if err := h.c.checkInvariants(); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("checker: %v", err)
	}
}

func TestQueueNominator(t *testing.T) {
	cfg := testConfig()
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Add(mk("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := q.Nominate("a", "t1"); err != nil {
		t.Fatal(err)
	}
	if got := nominatedNames(q.Nominated("t1")); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Nominated = %v", got)
	}
	if got, _ := q.Nomination("a"); got != "t1" || !slices.Equal(q.NominatedTargets(), []string{"t1"}) {
		t.Fatalf("Nomination = %q, targets %v", got, q.NominatedTargets())
	}
	if err := q.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if q.Nominated("t1") != nil {
		t.Fatal("deleted item still nominated")
	}
}
