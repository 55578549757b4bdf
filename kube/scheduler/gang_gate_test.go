package scheduler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// newGangGateFixture is newGangFixture with the gang gate on, as the
// scheduler and the simulator run it.
func newGangGateFixture(t *testing.T) *fixture {
	t.Helper()
	c := NewCache()
	cfg := testQueueConfig(t)
	UseGangGate(&cfg, c)
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
	f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq", Events: &warnings{}}
	f.s = mustNew(t, q, c, f.b, f.r, Options{})
	return f
}

// TestGangGatedUntilItsMembersArrive: a gang with fewer members than its
// minCount is held back at PreEnqueue, as kube-scheduler v1.37.2's
// GangScheduling holds it ("waiting for minCount pods from a gang to
// appear"), instead of being tried at each member's arrival for an
// attempt bound to fail with too few members; Explain says why it
// waits; what completes it (a pending member, a bound one, a lowered
// minCount) lets it through, and it is scheduled at its first attempt.
func TestGangGatedUntilItsMembersArrive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		complete func(f *fixture)
		binds    int
	}{
		{"a pending member arrives", func(f *fixture) { f.h.AddPod(memberPod("big-2", "big", 1000)) }, 3},
		{"a bound member arrives", func(f *fixture) {
			p := memberPod("big-2", "big", 1000)
			p.Spec.NodeName, p.Status.Phase = "a", v1.PodRunning
			f.h.AddPod(p)
		}, 2},
		{"minCount is lowered", func(f *fixture) { f.h.UpdatePodGroup(podGroup("big", 3, 0), podGroup("big", 2, 0)) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGangGateFixture(t)
			f.h.AddNode(node("a", 8000))
			f.h.AddPodGroup(podGroup("big", 3, 0))
			f.addGang("big", 2, 1000)
			if loc := f.where("big-0"); loc != schedq.InGated {
				t.Fatalf("a gang of 2 members of minCount 3 is %v, want gated", loc)
			}
			if _, err := f.q.Pop(ended); err == nil {
				t.Fatal("a gang short of members was popped for an attempt")
			}
			x, err := f.q.Explain(framework.Key(pod("big-1", 0)))
			if err != nil || x.GatedBy != "GangScheduling" {
				t.Fatalf("Explain %+v (%v), want gated by GangScheduling", x, err)
			}
			NewGateReasons(context.Background(), defaultFramework(t)).WithGangGate(f.c).Explain(&x, memberPod("big-1", "big", 1000))
			if !strings.Contains(x.Reason, "is gated by GangScheduling: group default/big has 2 of minCount 3 members") {
				t.Fatalf("Explain's reason %q does not say how many members the gang has", x.Reason)
			}
			tc.complete(f)
			if loc := f.where("big-0"); loc != schedq.InActive {
				t.Fatalf("the gang is %v once complete, want active", loc)
			}
			if out := f.once(); out.Result != Scheduled || len(f.b.binds) != tc.binds {
				t.Fatalf("outcome %+v, binds %v, want scheduled with %d bindings", out, f.b.binds, tc.binds)
			}
		})
	}
}

// TestGangGateCountsMembersOnce: a member counts once whether it is
// pending, assumed or bound, and stops counting when it is deleted or
// being deleted, so the gate closes again on a gang that lost a member.
func TestGangGateCountsMembersOnce(t *testing.T) {
	f := newGangGateFixture(t)
	f.h.AddNode(node("a", 8000))
	f.h.AddPodGroup(podGroup("g", 2, 0))
	f.addGang("g", 2, 1000)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
	if known, _, _ := f.c.members.of("default/g"); known != 2 {
		t.Fatalf("%d members known with both assumed, want 2", known)
	}
	for name, n := range f.b.binds {
		old := memberPod(name, "g", 1000)
		bound := old.DeepCopy()
		bound.Spec.NodeName = n
		f.h.UpdatePod(old, bound)
	}
	if known, _, _ := f.c.members.of("default/g"); known != 2 {
		t.Fatalf("%d members known with both bound, want 2", known)
	}
	gone := memberPod("g-0", "g", 1000)
	gone.Spec.NodeName = "a"
	deleting := gone.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	f.h.UpdatePod(gone, deleting)
	if known, _, _ := f.c.members.of("default/g"); known != 1 {
		t.Fatalf("%d members known with one being deleted, want 1", known)
	}
	f.h.AddPod(memberPod("g-2", "g", 1000))
	if loc := f.where("g-2"); loc != schedq.InActive {
		t.Fatalf("a replacement that completes the gang is %v, want active", loc)
	}
}

// TestGangGateHearsBoundMembersOfTheInitialList: with the warm start
// (the default), the informer's initial list caches a bound pod without
// the assigned-pod event it sends afterwards. A pending member listed
// before its group's bound members is gated with the count it saw; the
// bound members that complete the gang must lift the gate once the
// lists are in (as synced finishes the warm start), not at the queue's
// periodic check of gated pods, 5 minutes on.
func TestGangGateHearsBoundMembersOfTheInitialList(t *testing.T) {
	for _, tc := range []struct {
		name string
		warm bool
	}{
		{"warm start", true},
		{"cold start", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGangGateFixture(t)
			if tc.warm {
				f.h.warm = &warmStart{}
			}
			f.h.addNode(node("a", 8000), true)
			f.h.AddPodGroup(podGroup("big", 3, 0))
			f.h.addPodEvent(memberPod("big-0", "big", 1000), true)
			if loc := f.where("big-0"); loc != schedq.InGated {
				t.Fatalf("the pending member alone is %v, want gated", loc)
			}
			for _, name := range []string{"big-1", "big-2"} {
				p := memberPod(name, "big", 1000)
				p.Spec.NodeName, p.Status.Phase = "a", v1.PodRunning
				f.h.addPodEvent(p, true)
			}
			if f.h.warm != nil {
				f.h.warm.finish(f.h) // as synced does
			}
			if known, min, _ := f.c.members.of("default/big"); known != 3 || min != 3 {
				t.Fatalf("%d members of minCount %d known, want 3 of 3", known, min)
			}
			if loc := f.where("big-0"); loc != schedq.InActive {
				t.Fatalf("the pending member is %v once its two bound members are listed, want active", loc)
			}
		})
	}
}
