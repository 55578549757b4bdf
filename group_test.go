package schedq

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// groupsOn turns groups on: a job's group is its group field.
func groupsOn(cfg *Config[string, job]) { cfg.Group = func(p job) string { return p.group } }

// gm is member name of group g, with priority prio.
func gm(g, name string, prio int32) job { return job{name: name, prio: prio, group: g} }

func (h *harness) setGroup(name string, min int, prio int32) {
	h.t.Helper()
	if err := h.c.SetGroup(name, GroupSpec{MinCount: min, Priority: prio}, h.now); err != nil {
		h.t.Fatalf("SetGroup(%q): %v", name, err)
	}
	h.check()
}

// popGroup pops the next entity, which must be group name, and returns
// its attempt.
func (h *harness) popGroup(name string) Attempt[string, job] {
	h.t.Helper()
	a := h.pop()
	if a.Group != name {
		h.t.Fatalf("popped group %q (item %q), want group %q", a.Group, a.Item.name, name)
	}
	return a
}

func memberNames(a Attempt[string, job]) []string {
	var out []string
	for _, m := range a.Members {
		out = append(out, m.Key)
	}
	return out
}

// doneMembers ends group attempt a with the members at placed placed.
func (h *harness) doneMembers(a Attempt[string, job], placed ...int) {
	h.t.Helper()
	if err := h.c.DoneMembers(a, placed, "", h.now); err != nil {
		h.t.Fatalf("DoneMembers(group %q): %v", a.Group, err)
	}
	h.check()
}

func (h *harness) requeueGroup(a Attempt[string, job], f Failure) {
	h.t.Helper()
	if err := h.c.Requeue(a, f, h.now); err != nil {
		h.t.Fatalf("Requeue(group %q): %v", a.Group, err)
	}
	h.check()
}

// wantEntities checks the entity counts: lone items and groups in place l.
func (h *harness) wantEntities(l Location, lone, groups int) {
	h.t.Helper()
	x := h.c.Stats().Entities
	var gotL, gotG Counts
	gotL.add(l, lone)
	gotG.add(l, groups)
	if pick(x.Lone, l) != lone || pick(x.Groups, l) != groups {
		h.t.Fatalf("entities at %v: lone %d groups %d, want %d and %d (%+v)", l, pick(x.Lone, l), pick(x.Groups, l), lone, groups, x)
	}
}

func pick(n Counts, l Location) int {
	return map[Location]int{InActive: n.Active, InBackoff: n.Backoff, InUnschedulable: n.Unschedulable,
		InGated: n.Gated, InFlight: n.InFlight, InIncomplete: n.Incomplete, InPending: n.Pending}[l]
}

// TestGroupScenarios adapts upstream's group queue scenarios (see
// docs/groups.md), each a named case over a fresh queue with groups on.
func TestGroupScenarios(t *testing.T) {
	gated := func(j job) job { j.gated = true; return j }
	cases := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"add ungated member: entity in activeQ", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			h.want("a", InActive)
			h.wantEntities(InActive, 0, 1)
		}},
		{"add gated first member: group gated", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gated(gm("g", "a", 0)))
			h.want("a", InGated)
		}},
		{"members before the group wait incomplete, then form one entity", func(t *testing.T, h *harness) {
			h.add(gm("g", "a", 0), gm("g", "b", 0))
			h.want("a", InIncomplete)
			if c := h.c.Counts(); c.Incomplete != 2 || c.Active != 0 {
				t.Fatalf("counts %+v", c)
			}
			h.setGroup("g", 2, 0)
			h.want("a", InActive)
			h.want("b", InActive)
			h.wantEntities(InActive, 0, 1)
			a := h.popGroup("g")
			if !slices.Equal(memberNames(a), []string{"a", "b"}) {
				t.Fatalf("members %v", memberNames(a))
			}
		}},
		{"one gated member among the incomplete gates the group", func(t *testing.T, h *harness) {
			h.add(gm("g", "a", 0), gated(gm("g", "b", 0)))
			h.setGroup("g", 2, 0)
			h.want("a", InGated)
		}},
		{"member added while its group is in flight is pending", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			a := h.popGroup("g")
			h.add(gm("g", "b", 0), gated(gm("g", "c", 0)))
			h.want("b", InPending)
			h.want("c", InPending)
			if err := h.c.Done(a, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", absent)
			h.want("b", InGated) // c gates the new entity
		}},
		{"gated member joins an active group: whole group gated", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0), gated(gm("g", "b", 0)))
			h.want("a", InGated)
			h.wantEntities(InGated, 0, 1)
		}},
		{"member joins a group in backoff: stays in backoff, or gated", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			h.requeueGroup(h.popGroup("g"), Failure{Message: "boom"})
			h.want("a", InBackoff)
			h.add(gm("g", "b", 0))
			h.want("b", InBackoff)
			h.add(gated(gm("g", "c", 0)))
			h.want("a", InGated)
		}},
		{"gated member joins a parked group: stays parked, not gated", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
			h.want("a", InUnschedulable)
			h.add(gated(gm("g", "b", 0)))
			h.want("b", InUnschedulable)
		}},
		{"delete the sole member: entity gone; one of two: same place", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0), gm("g", "b", 0))
			if err := h.c.Delete("a", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("b", InActive)
			if err := h.c.Delete("b", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.wantEntities(InActive, 0, 0)
			h.noPop()
		}},
		{"update of a member of a parked group that a hint accepts moves the group", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0), gm("g", "b", 0))
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Affinity"}})
			h.want("a", InUnschedulable)
			old := gm("g", "b", 0)
			nu := old
			nu.label = "x"
			h.c.Update(old, nu, h.now)
			h.check()
			h.want("a", InBackoff)
			if got := h.info("b").Item.label; got != "x" {
				t.Fatalf("label %q", got)
			}
		}},
		{"update of a pending member replaces it", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			a := h.popGroup("g")
			h.add(gm("g", "b", 0))
			nu := gm("g", "b", 5)
			h.c.Update(gm("g", "b", 0), nu, h.now)
			h.check()
			if got := h.info("b").Item.prio; got != 5 {
				t.Fatalf("prio %d", got)
			}
			h.want("b", InPending)
			h.requeueGroup(a, Failure{RejectedBy: []string{"Fit"}})
			h.want("b", InUnschedulable)
		}},
		{"ungating the sole gated member ungates; another still gated keeps it gated", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			b, c := gated(gm("g", "b", 0)), gated(gm("g", "c", 0))
			h.add(gm("g", "a", 0), b, c)
			h.c.Update(b, gm("g", "b", 0), h.now)
			h.check()
			h.want("a", InGated)
			h.c.Update(c, gm("g", "c", 0), h.now)
			h.check()
			h.want("a", InActive)
		}},
		{"attempt whose members were all deleted queues nothing", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			a := h.popGroup("g")
			if err := h.c.Delete("a", h.now); err != nil {
				t.Fatal(err)
			}
			h.requeueGroup(a, Failure{RejectedBy: []string{"Fit"}})
			h.want("a", absent)
			h.noPop()
			if len(h.c.groups) != 1 || h.c.groups["g"].ent != nil {
				t.Fatalf("group state %+v", h.c.groups["g"])
			}
		}},
		{"attempt whose members were all deleted, with a member pending: an error backs the group off, counted", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "d0", 0))
			for round, name := range []string{"x0", "x1"} {
				a := h.popGroup("g")
				for _, m := range a.Members {
					if err := h.c.Delete(m.Key, h.now); err != nil {
						t.Fatal(err)
					}
				}
				h.add(gm("g", name, 0))
				h.want(name, InPending)
				h.requeueGroup(a, Failure{Message: "boom"})
				h.want(name, InBackoff)
				e := h.c.groups["g"].ent
				if e == nil || e.ConsecutiveErrors != round+1 {
					t.Fatalf("round %d: entity %+v, want %d consecutive errors", round, e, round+1)
				}
				h.c.Tick(h.now) // anchors the flush schedule
				h.step(time.Minute)
				h.c.Tick(h.now)
			}
		}},
		{"attempt whose members were all deleted, with a member pending: a rejection parks the group, counted", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "d", 0))
			a := h.popGroup("g")
			if err := h.c.Delete("d", h.now); err != nil {
				t.Fatal(err)
			}
			h.add(gm("g", "x", 0))
			h.requeueGroup(a, Failure{RejectedBy: []string{"Fit"}})
			h.want("x", InUnschedulable)
			h.noPop()
			if e := h.c.groups["g"].ent; e == nil || e.UnschedulableCount != 1 || !slices.Equal(e.RejectedBy, []string{"Fit"}) {
				t.Fatalf("entity %+v, want parked on Fit with one unschedulable count", e)
			}
			h.move(evMachineAdd, 2)
			h.want("x", InBackoff)
		}},
		{"rejected after an event: backoff, count 1, errors 0, Timestamp now", func(t *testing.T, h *harness) {
			h.setGroup("g", 2, 0)
			h.add(gm("g", "a", 0), gm("g", "b", 0))
			a := h.popGroup("g")
			h.requeueGroup(a, Failure{Message: "e"}) // an error first
			h.step(20 * time.Second)
			h.c.Tick(h.now)
			h.step(2 * time.Second)
			h.c.Tick(h.now)
			a = h.popGroup("g")
			h.move(evMachineAdd, 2)
			h.step(time.Second)
			h.requeueGroup(a, Failure{RejectedBy: []string{"Fit"}})
			x := h.info("a")
			if _, l, _ := h.c.Get("a"); l != InBackoff {
				t.Fatalf("at %v", l)
			}
			e := h.c.groups["g"].ent
			if e.UnschedulableCount != 1 || e.ConsecutiveErrors != 0 || !e.Timestamp.Equal(h.now) || x.Attempts != 2 {
				t.Fatalf("entity %+v member %+v", e.Info, x)
			}
		}},
		{"error: error backoff; a gate on requeue parks it gated", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			a := h.popGroup("g")
			h.c.Update(gm("g", "a", 0), gated(gm("g", "a", 0)), h.now)
			h.requeueGroup(a, Failure{Message: "x"})
			h.want("a", InGated)
			if e := h.c.groups["g"].ent; e.ConsecutiveErrors != 1 {
				t.Fatalf("errors %d", e.ConsecutiveErrors)
			}
		}},
		{"success with leftovers: placed leave, the rest to activeQ with the old Timestamp", func(t *testing.T, h *harness) {
			h.setGroup("g", 2, 0)
			h.add(gm("g", "a", 2), gm("g", "b", 1), gm("g", "c", 0))
			ts := h.c.groups["g"].ent.Timestamp
			h.step(time.Second)
			a := h.popGroup("g")
			h.step(time.Second)
			h.doneMembers(a, 0, 1)
			h.want("a", absent)
			h.want("b", absent)
			h.want("c", InActive)
			if e := h.c.groups["g"].ent; !e.Timestamp.Equal(ts) || e.UnschedulableCount != 0 {
				t.Fatalf("entity %+v", e.Info)
			}
		}},
		{"done with only new members: their entity takes their Timestamp", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			a := h.popGroup("g")
			h.step(3 * time.Second)
			h.add(gm("g", "b", 0))
			if err := h.c.Done(a, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			if e := h.c.groups["g"].ent; !e.Timestamp.Equal(h.now) {
				t.Fatalf("timestamp %v", e.Timestamp)
			}
		}},
		{"delete the group: queued members incomplete; in flight: returning and pending members incomplete", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			if err := h.c.DeleteGroup("g", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", InIncomplete)
			h.setGroup("g", 1, 0)
			a := h.popGroup("g")
			h.add(gm("g", "b", 0))
			if err := h.c.DeleteGroup("g", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("b", InIncomplete)
			h.requeueGroup(a, Failure{RejectedBy: []string{"Fit"}})
			h.want("a", InIncomplete)
			if err := h.c.DeleteGroup("g", h.now); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second DeleteGroup: %v", err)
			}
		}},
		{"activate a member: parked group to activeQ; gated stays; in flight remembered", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.setGroup("q", 1, 0)
			h.add(gm("g", "a", 0), gated(gm("q", "z", 0)))
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Quiet"}})
			h.want("a", InUnschedulable)
			h.c.Activate([]string{"a", "z"}, h.now)
			h.check()
			h.want("a", InActive)
			h.want("z", InGated)
			a := h.popGroup("g")
			h.c.Activate([]string{"a"}, h.now)
			h.requeueGroup(a, Failure{RejectedBy: []string{"Quiet"}})
			h.want("a", InBackoff)
		}},
		{"move: one member's hint queues the group; an unregistered event does not", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			a, b := gm("g", "a", 0), gm("g", "b", 0)
			b.label = "L"
			h.add(a, b)
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Affinity"}})
			h.move(evService, nil)
			h.want("a", InUnschedulable)
			h.move(evPlacedAdd, "nope")
			h.want("a", InUnschedulable)
			h.move(evPlacedAdd, "L")
			h.want("a", InBackoff)
		}},
		{"flushes: backoff over to activeQ; leftover flush frees the ungated only", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.setGroup("q", 1, 0)
			h.c.Tick(h.now)
			h.add(gm("g", "a", 0), gated(gm("q", "z", 0)))
			h.requeueGroup(h.popGroup("g"), Failure{Message: "e"})
			h.want("a", InBackoff)
			h.step(10 * time.Second)
			h.c.Tick(h.now)
			h.check()
			h.want("a", InActive)
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Quiet"}})
			h.step(5*time.Minute + time.Minute)
			h.c.Tick(h.now)
			h.check()
			h.want("a", InActive)
			h.want("z", InGated)
		}},
		{"rejected without events: parked on its plugins, not spinning in backoff", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0))
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
			h.want("a", InUnschedulable)
			h.move(evMachineAdd, 3) // odd: the hint skips
			h.want("a", InUnschedulable)
			h.move(evMachineAdd, 4)
			h.want("a", InBackoff)
		}},
		{"several groups in flight at once, ended in any order", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 2)
			h.setGroup("q", 1, 1)
			h.add(gm("g", "a", 0), gm("q", "b", 0), mk("c", 0))
			ag, aq := h.popGroup("g"), h.popGroup("q")
			lone := h.pop()
			h.add(gm("g", "a2", 0))
			h.want("a2", InPending)
			if x := h.c.Stats().Entities.Groups.InFlight; x != 2 {
				t.Fatalf("groups in flight %d", x)
			}
			h.requeueGroup(aq, Failure{RejectedBy: []string{"Fit"}})
			if err := h.c.Done(lone, h.now); err != nil {
				t.Fatal(err)
			}
			if err := h.c.Done(ag, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a2", InActive)
			h.want("b", InUnschedulable)
			if err := h.c.Done(ag, h.now); !errors.Is(err, ErrNotInFlight) {
				t.Fatalf("second Done: %v", err)
			}
		}},
		{"a group name and an item key do not collide", func(t *testing.T, h *harness) {
			h.setGroup("x", 1, 0)
			h.add(mk("x", 0), gm("x", "m", 0))
			h.want("x", InActive)
			h.want("m", InActive)
			h.wantEntities(InActive, 1, 1)
			if err := h.c.Delete("x", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("m", InActive)
		}},
		{"deleting the only gated member of a gated group ungates it", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0), gated(gm("g", "b", 0)))
			h.want("a", InGated)
			if err := h.c.Delete("b", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", InActive)
		}},
		{"a member parked joins its group, or makes it failed", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			if err := h.c.Park(gm("g", "a", 0), Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", InUnschedulable)
			if err := h.c.Park(gm("g", "b", 0), Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("b", InUnschedulable)
			if err := h.c.Park(gm("g", "b", 0), Failure{}, h.now); !errors.Is(err, ErrAlreadyQueued) {
				t.Fatalf("park of a queued member: %v", err)
			}
			if err := h.c.Requeue(req(gm("g", "c", 0), 0), Failure{}, h.now); !errors.Is(err, ErrNotInFlight) {
				t.Fatalf("requeue of cycle 0: %v, want ErrNotInFlight", err)
			}
		}},
		{"members are tried by priority, then attempts, then Timestamp", func(t *testing.T, h *harness) {
			h.setGroup("g", 1, 0)
			h.add(gm("g", "low", 0), gm("g", "high", 9))
			h.step(time.Second)
			h.add(gm("g", "late", 0))
			a := h.popGroup("g")
			h.doneMembers(a, 0)
			h.step(time.Second)
			h.add(gm("g", "new", 0))
			a = h.popGroup("g")
			if got := memberNames(a); !slices.Equal(got, []string{"low", "late", "new"}) {
				t.Fatalf("order %v", got)
			}
			for _, m := range a.Members {
				if m.Cycle != a.Cycle {
					t.Fatalf("member cycle %d, group %d", m.Cycle, a.Cycle)
				}
			}
		}},
		{"group priority orders activeQ, members' own priorities do not", func(t *testing.T, h *harness) {
			if h.c.cfg.Priority == nil {
				t.Skip("under a caller's Less a group compares by its first member's Info")
			}
			h.setGroup("lo", 1, 1)
			h.setGroup("hi", 1, 5)
			h.add(gm("lo", "a", 100), mk("b", 3), gm("hi", "c", 0))
			got := []string{}
			for range 3 {
				a := h.pop()
				got = append(got, a.Group+a.Key)
			}
			if !slices.Equal(got, []string{"hi", "b", "lo"}) {
				t.Fatalf("order %v", got)
			}
		}},
		{"explain and errors", func(t *testing.T, h *harness) {
			h.add(gm("g", "a", 0))
			x, err := h.c.Explain("a", h.now)
			if err != nil || x.Location != InIncomplete || x.Group != "g" || !strings.Contains(x.Reason, `waiting for group "g"`) {
				t.Fatalf("explain %+v %v", x, err)
			}
			if err := h.c.SetGroup("g", GroupSpec{MinCount: 0}, h.now); !errors.Is(err, ErrInvalidGroup) || !strings.Contains(err.Error(), "MinCount") {
				t.Fatalf("MinCount 0: %v", err)
			}
			h.want("a", InIncomplete)
			h.add(gm("g", "b", 0))
			h.setGroup("g", 1, 0)
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Quiet"}})
			h.c.Update(gm("g", "b", 0), gated(gm("g", "b", 0)), h.now)
			h.want("b", InUnschedulable)
			h.c.Activate([]string{"a"}, h.now) // runs the gates again
			h.check()
			x, _ = h.c.Explain("a", h.now)
			if x.Location != InGated || !strings.Contains(x.Reason, "member b is gated by Gate") {
				t.Fatalf("explain %+v", x)
			}
		}},
	}
	for _, tc := range cases {
		for _, order := range []string{"less", "priority"} {
			t.Run(tc.name+"/"+order, func(t *testing.T) {
				h := newHarness(t, groupsOn, func(c *Config[string, job]) {
					c.Hints["Quiet"] = nil
					if order == "priority" {
						c.Less, c.Priority = nil, jobPrio
					}
				})
				tc.run(t, h)
			})
		}
	}
}

func TestSetGroupWithoutGroups(t *testing.T) {
	h := newHarness(t)
	if err := h.c.SetGroup("g", GroupSpec{MinCount: 1}, h.now); !errors.Is(err, ErrInvalidGroup) {
		t.Fatalf("SetGroup without Config.Group: %v", err)
	}
}

func TestGroupBackoffCap(t *testing.T) {
	h := newHarness(t, groupsOn, func(c *Config[string, job]) {
		c.InitialBackoff, c.MaxBackoff = time.Nanosecond, 32*time.Nanosecond
	})
	h.setGroup("g", 1, 0)
	for i := range 10 {
		h.add(gm("g", string(rune('a'+i)), 0))
	}
	e := h.c.groups["g"].ent
	for _, tc := range []struct {
		count int
		want  time.Duration
	}{{7, 64}, {16, 101}, {1, 1}} {
		e.UnschedulableCount = tc.count
		if got := h.c.backoffDuration(e); got != tc.want {
			t.Errorf("count %d size 10: backoff %v, want %v", tc.count, got, tc.want)
		}
	}
}
