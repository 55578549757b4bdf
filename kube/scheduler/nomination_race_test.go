package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cycleStartHook is the scheduler's queue, which runs hook once, when
// a cycle, having read its pod's own nomination, reads the others' (at
// its start, after its pop): an informer event that lands during that
// cycle. key is the pod the test means.
type cycleStartHook struct {
	Queue
	key  types.NamespacedName
	hook func()
}

// recreate shows p deleted and created again under its name, as an
// informer would: a new UID (uid-NAME-2), nominated to node in its status
// ("" for none).
func recreate(f *fixture, p *v1.Pod, node string) {
	f.h.DeletePod(p)
	again := p.DeepCopy()
	again.UID = types.UID("uid-" + p.Name + "-2")
	again.Status.NominatedNodeName = node
	f.h.AddPod(again)
}

func (q *cycleStartHook) NominatedTargets() []string {
	if h := q.hook; h != nil {
		q.hook = nil
		h()
	}
	return q.Queue.NominatedTargets()
}

// TestNominationOfARecreatedPreemptor: high's cycle finds that evicting
// low1 and low2 on a makes room for it; meanwhile the informer shows
// high deleted and created again under its name (a new UID: a
// StatefulSet's pod, say). Before, the end of the cycle nominated the
// key, which now named the new pod, queued: room on a was held for a pod
// that no preemption was for, and the victims were evicted for a pod
// that no longer existed. The nomination and the evictions are now made
// only for the pod the cycle ran for (checked under the pod events'
// lock, which the handlers hold for a deletion and re-creation), so
// neither is made; the new pod is tried on its own. A preemptor deleted
// for good was already refused by the queue (its deleted attempt cannot
// be nominated).
func TestNominationOfARecreatedPreemptor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recreate bool
	}{
		{name: "deleted and created again", recreate: true},
		{name: "deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, e := newPreemptFixture(t)
			f.h.AddNode(node("a", 4000))
			f.h.AddPod(runningPod("low1", "a", 2000, 1, t0))
			f.h.AddPod(runningPod("low2", "a", 2000, 1, t0))
			high := prioPod("high", 4000, 100)
			f.h.AddPod(high)
			f.s.queue = &cycleStartHook{Queue: f.q, key: types.NamespacedName{Namespace: "default", Name: "high"}, hook: func() {
				if tc.recreate {
					recreate(f, high, "")
				} else {
					f.h.DeletePod(high)
				}
			}}
			f.once()
			if got := f.nomination("high"); got != "" {
				t.Errorf("high nominated to %q: the new pod holds room a preemption made for the old one", got)
			}
			if len(e.calls) != 0 {
				t.Errorf("evictions %v for a preemptor that is gone", e.calls)
			}
		})
	}
}

// TestNominationOfARecreatedPodIsNotClearedByTheOldOnesCycle: high,
// nominated to a in its status, finds that no preemption can help it
// there (a is full of pods it does not outrank), and its cycle ends by
// clearing its nomination. Meanwhile high was deleted and created again
// under its name, nominated to a in its status too (restored in the
// queue). Before, the old pod's cycle cleared the key's nomination: the
// new pod's. Now only the pod the cycle ran for loses its nomination.
func TestNominationOfARecreatedPodIsNotClearedByTheOldOnesCycle(t *testing.T) {
	f, _ := newPreemptFixture(t)
	f.h.AddNode(node("a", 4000))
	f.h.AddPod(runningPod("top", "a", 4000, 1000, t0))
	high := prioPod("high", 4000, 100)
	high.Status.NominatedNodeName = "a"
	f.h.AddPod(high)
	if got := f.nomination("high"); got != "a" {
		t.Fatalf("high's nomination from its status: %q", got)
	}
	f.s.queue = &cycleStartHook{Queue: f.q, key: types.NamespacedName{Namespace: "default", Name: "high"}, hook: func() {
		recreate(f, high, "a")
	}}
	f.once()
	if got := f.nomination("high"); got != "a" {
		t.Errorf("the new high's nomination is %q, want a (its own, cleared by the old pod's cycle)", got)
	}
}

// TestGoneNodeClearsOnlyTheOldPodsNomination: high is nominated to x,
// a node that is gone, so its cycle clears its nomination; meanwhile
// high was deleted and created again, nominated to a in its status
// (restored in the queue). Before, the old pod's cycle cleared the new
// pod's nomination to a; now it clears only its own.
func TestGoneNodeClearsOnlyTheOldPodsNomination(t *testing.T) {
	f, _ := newPreemptFixture(t)
	f.h.AddNode(node("a", 4000))
	f.h.AddPod(runningPod("top", "a", 4000, 1000, t0))
	high := prioPod("high", 4000, 100)
	high.Status.NominatedNodeName = "x"
	f.h.AddPod(high)
	f.s.queue = &cycleStartHook{Queue: f.q, key: types.NamespacedName{Namespace: "default", Name: "high"}, hook: func() {
		recreate(f, high, "a")
	}}
	f.once()
	if got := f.nomination("high"); got != "a" {
		t.Errorf("the new high's nomination is %q, want a (its own)", got)
	}
}

// TestAssumedClearsOnlyItsOwnNomination: p, nominated to a, fits there
// and is assumed, which clears its nomination; meanwhile p was deleted
// and created again, nominated to b in its status (restored in the
// queue). Before, the old pod's assumption cleared the new pod's
// nomination; now it clears only its own. (Checked while the old pod's
// binding is under way: the queue's Done of its attempt drops the key's
// nomination, the new pod's too, by the library's rule.)
func TestAssumedClearsOnlyItsOwnNomination(t *testing.T) {
	f, _ := newPreemptFixture(t)
	f.s.binder = &oneHeldBinder{}
	f.h.AddNode(node("a", 4000))
	f.h.AddNode(node("b", 4000))
	p := prioPod("p", 1000, 100)
	p.Status.NominatedNodeName = "a"
	f.h.AddPod(p)
	f.s.queue = &cycleStartHook{Queue: f.q, key: types.NamespacedName{Namespace: "default", Name: "p"}, hook: func() {
		recreate(f, p, "b")
	}}
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("p: %+v", out)
	}
	if got := f.nomination("p"); got != "b" {
		t.Errorf("the new p's nomination is %q, want b (its own)", got)
	}
}
