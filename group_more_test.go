package schedq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A Pop blocked on an empty queue wakes when SetGroup turns incomplete
// members into a poppable group.
func TestQueueSetGroupWakesPop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		groupsOn(&cfg)
		q, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		q.Add(gm("g", "a", 0))
		q.Add(gm("g", "b", 0))
		got := make(chan Attempt[string, job], 1)
		go func() {
			a, err := q.Pop(context.Background())
			if err != nil {
				t.Error(err)
			}
			got <- a
		}()
		synctest.Wait()
		select {
		case a := <-got:
			t.Fatalf("Pop returned %q before SetGroup", a.Group)
		default:
		}
		if err := q.SetGroup("g", GroupSpec{MinCount: 2}); err != nil {
			t.Fatal(err)
		}
		a := <-got
		if a.Group != "g" || len(a.Members) != 2 || a.Spec.MinCount != 2 {
			t.Fatalf("popped %+v", a)
		}
		if err := q.Done(a); err != nil {
			t.Fatal(err)
		}
		if err := q.DeleteGroup("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("DeleteGroup of an unknown group: %v", err)
		}
	})
}

// A budget holds lone items back, never groups.
func TestGroupIgnoresBudget(t *testing.T) {
	h := newHarness(t, groupsOn, func(c *Config[string, job]) {
		c.Budget = func(Event, any, any) (Budget[job], bool) { return noRoom{}, true }
	})
	h.setGroup("g", 1, 0)
	h.add(gm("g", "a", 0), mk("lone", 0))
	h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
	h.attemptFail("lone", "Fit")
	h.move(evMachineAdd, 2)
	h.want("a", InBackoff)
	h.want("lone", InUnschedulable)
}

type noRoom struct{}

func (noRoom) Take(job) bool   { return false }
func (noRoom) Return(job) bool { return false }

// Key says the room is the event's own (Budget.Key).
func (noRoom) Key() string { return "" }

// Members change group by Update: to another group, and out of groups.
func TestMemberChangesGroup(t *testing.T) {
	h := newHarness(t, groupsOn)
	h.setGroup("g", 1, 0)
	h.setGroup("q", 1, 0)
	h.add(gm("g", "a", 0), gm("g", "b", 0))
	h.c.Update(gm("g", "a", 0), gm("q", "a", 0), h.now)
	h.check()
	if x, _ := h.c.Explain("a", h.now); x.Group != "q" || x.Location != InActive {
		t.Fatalf("explain %+v", x)
	}
	h.c.Update(gm("g", "b", 0), mk("b", 0), h.now)
	h.check()
	if x, _ := h.c.Explain("b", h.now); x.Group != "" || x.Location != InActive {
		t.Fatalf("explain %+v", x)
	}
	if _, ok := h.c.groups["g"]; !ok || h.c.groups["g"].ent != nil {
		t.Fatalf("group g keeps an entity: %+v", h.c.groups["g"])
	}
	h.wantEntities(InActive, 1, 1)
	d := h.c.Dump(h.now)
	if !strings.Contains(d.String(), `group "q" (1 members, min 1)`) {
		t.Fatalf("dump:\n%s", d)
	}
}

// A member re-added over a lone attempt in flight supersedes it when its
// group is popped: the lone attempt's Done is refused.
func TestMemberOverLoneAttempt(t *testing.T) {
	h := newHarness(t, groupsOn)
	h.setGroup("g", 1, 0)
	h.add(mk("a", 0))
	lone := h.pop()
	h.add(gm("g", "a", 0))
	h.want("a", InActive)
	grp := h.popGroup("g")
	if err := h.c.Done(lone, h.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Done of the superseded lone attempt: %v", err)
	}
	if err := h.c.Done(grp, h.now); err != nil {
		t.Fatal(err)
	}
	h.check()
	h.want("a", absent)
}

// A bad placed index, no placed member, or a lone attempt is refused by
// DoneMembers and changes nothing.
func TestGroupPlacedOutOfRange(t *testing.T) {
	h := newHarness(t, groupsOn)
	h.setGroup("g", 1, 0)
	h.add(gm("g", "a", 0))
	a := h.popGroup("g")
	for _, placed := range [][]int{{1}, {-1}, nil} {
		if err := h.c.DoneMembers(a, placed, "", h.now); !errors.Is(err, ErrInvalidGroup) {
			t.Fatalf("DoneMembers %v: %v", placed, err)
		}
	}
	if err := h.c.DoneMembers(Attempt[string, job]{Key: "a"}, []int{0}, "", h.now); !errors.Is(err, ErrInvalidGroup) {
		t.Fatalf("DoneMembers of a lone attempt: %v", err)
	}
	h.check()
	h.want("a", InFlight)
	if err := h.c.Done(a, h.now); err != nil {
		t.Fatal(err)
	}
}

// TestGroupPlacedTwice: an index DoneMembers is given twice places its
// member once; the others go back with the group.
func TestGroupPlacedTwice(t *testing.T) {
	h := newHarness(t, groupsOn)
	h.setGroup("g", 1, 0)
	h.add(gm("g", "a", 0), gm("g", "b", 0))
	a := h.popGroup("g")
	if err := h.c.DoneMembers(a, []int{0, 0}, "", h.now); err != nil {
		t.Fatal(err)
	}
	h.check()
	placed := a.Members[0].Key
	other := a.Members[1].Key
	if _, err := h.c.Explain(placed, h.now); !errors.Is(err, ErrNotFound) {
		t.Errorf("the placed member %s: %v, want it gone", placed, err)
	}
	if _, err := h.c.Explain(other, h.now); err != nil {
		t.Errorf("the other member %s: %v, want it queued with its group", other, err)
	}
}

// A move asks a parked group's hints member by member only until the
// group's verdict cannot improve: with no pending plugin, the first Queue
// moves the whole group after backoff, so the other members are not asked.
func TestMoveGroupStopsAtFirstQueue(t *testing.T) {
	calls := 0
	h := newHarness(t, groupsOn, func(c *Config[string, job]) {
		c.Hints["Fit"] = []EventHint[job]{{Event: evMachineAdd, Fn: func(job, any, any) (Hint, error) {
			calls++
			return HintQueue, nil
		}}}
	})
	h.setGroup("g", 3, 0)
	h.add(gm("g", "a", 0), gm("g", "b", 0), gm("g", "c", 0))
	h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
	h.move(evMachineAdd, 4)
	h.want("a", InBackoff)
	if calls != 1 {
		t.Fatalf("the hint was asked %d times for one move of a group of 3, want 1 (the first Queue decides)", calls)
	}
}

// TestGroupPopAllocatesOnlyMembers checks the cost the package
// documentation gives for a group's pop: one allocation, its Members, once
// the queue is warm. Its requeue (after an error, with backoff off, so that
// the group is poppable again) allocates nothing.
func TestGroupPopAllocatesOnlyMembers(t *testing.T) {
	tests := []struct {
		name    string
		members int
		mutate  func(*Config[string, job])
	}{
		{"Less, 8 members", 8, func(*Config[string, job]) {}},
		{"Priority, 64 members", 64, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn, tc.mutate, func(c *Config[string, job]) { c.DisableBackoff = true })
			h.setGroup("g", tc.members, 1)
			for i := range tc.members {
				h.add(gm("g", fmt.Sprintf("m%d", i), int32(i%3)))
			}
			popRequeue := func() {
				a, ok := h.c.Pop(h.now)
				if !ok || a.Group != "g" || len(a.Members) != tc.members {
					t.Fatalf("pop: %v group %q with %d members", ok, a.Group, len(a.Members))
				}
				if err := h.c.Requeue(a, Failure{}, h.now); err != nil {
					t.Fatal(err)
				}
			}
			for range 100 { // warm up
				popRequeue()
			}
			if n := testing.AllocsPerRun(1000, popRequeue); n != 1 {
				t.Fatalf("%v allocations per pop and requeue, want 1 (the Members)", n)
			}
			h.check()
		})
	}
}

// TestGroupBackoffCapNeverOverflows: a group's backoff cap is MaxBackoff
// times the square root of its size, which for a long MaxBackoff passes the
// longest Duration. It must saturate there, as the package documentation's
// "it never overflows" says, not wrap to a negative cap that means no
// backoff at all.
func TestGroupBackoffCapNeverOverflows(t *testing.T) {
	const century = 100 * 365 * 24 * time.Hour
	tests := []struct {
		name    string
		members int
		want    time.Duration
	}{
		{"one member: MaxBackoff", 1, century},
		{"four members: twice MaxBackoff", 4, 2 * century},
		{"nine members: past the longest Duration", 9, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn, func(c *Config[string, job]) {
				c.InitialBackoff, c.MaxBackoff = century, century
			})
			h.setGroup("g", tc.members, 1)
			for i := range tc.members {
				h.add(gm("g", fmt.Sprintf("m%d", i), 1))
			}
			a := h.popGroup("g")
			if got := h.c.maxBackoff(h.c.keys["m0"].grp.flight); got != tc.want {
				t.Fatalf("backoff cap %v, want %v", got, tc.want)
			}
			if err := h.c.Requeue(a, Failure{}, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.c.Tick(h.now)
			h.step(2 * time.Second)
			h.c.Tick(h.now) // a backoff flush
			h.check()
			h.want("m0", InBackoff)
		})
	}
}

// TestGroupLeftoversKeepTheirReasons: the members DoneMembers sends back
// with their group carry the message and the reasons it was given, which
// Explain reports; without reasons, none.
func TestGroupLeftoversKeepTheirReasons(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reasons []string
	}{
		{name: "with reasons", reasons: []string{"Insufficient cpu"}},
		{name: "without"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn)
			h.setGroup("g", 1, 0)
			h.add(gm("g", "a", 0), gm("g", "b", 0))
			a := h.popGroup("g")
			if err := h.c.DoneMembers(a, []int{0}, "1 of 2 placed", h.now, tc.reasons...); err != nil {
				t.Fatal(err)
			}
			h.check()
			x, err := h.c.Explain(a.Members[1].Key, h.now)
			if err != nil {
				t.Fatal(err)
			}
			if x.Message != "1 of 2 placed" || !slices.Equal(x.Reasons, tc.reasons) {
				t.Errorf("message %q, reasons %q; want %q and %q", x.Message, x.Reasons, "1 of 2 placed", tc.reasons)
			}
		})
	}
}
