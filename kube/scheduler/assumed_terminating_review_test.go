package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// afterAssumeHook is the scheduler's queue, which runs hook once, at the
// first read of key's nomination made once the cache holds key assumed:
// in the cycle's commit, between the assumption and the binding's start
// (Scheduler.assumed). An informer event that lands there.
type afterAssumeHook struct {
	Queue
	c    *Cache
	key  types.NamespacedName
	hook func()
}

func (q *afterAssumeHook) Nomination(key types.NamespacedName) (string, bool) {
	if h := q.hook; h != nil && key == q.key && q.c.IsAssumed(key) {
		q.hook = nil
		h()
	}
	return q.Queue.Nomination(key)
}

// beingDeleted returns p with its deletion started.
func beingDeleted(p *v1.Pod) *v1.Pod {
	going := p.DeepCopy()
	going.DeletionTimestamp = &metav1.Time{Time: time.Unix(100, 0)}
	return going
}

// TestAssumedPodBeingDeletedBeforeItsBindingStarts: p is assumed on a,
// and the informer shows its deletion started before its binding
// starts. The update frees p's room; the binding is then not sent (the
// cache no longer holds p, as after a deletion), nothing is reported,
// p is not queued again nor counted again on a, and q takes the room.
func TestAssumedPodBeingDeletedBeforeItsBindingStarts(t *testing.T) {
	f := newFixture(t)
	f.h.AddNode(node("a", 1000))
	p := pod("p", 800)
	f.h.AddPod(p)
	f.s.queue = &afterAssumeHook{Queue: f.q, c: f.c, key: framework.Key(p), hook: func() { f.h.UpdatePod(p, beingDeleted(p)) }}
	f.once()
	f.s.queue = f.q
	if n, ok := f.b.binds["p"]; ok {
		t.Errorf("p, being deleted, bound to %s", n)
	}
	if n, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Errorf("p, being deleted, counted on %s", n)
	}
	if loc := f.where("p"); loc != 0 {
		t.Errorf("p, being deleted, queued (%v)", loc)
	}
	if len(f.r.failures) != 0 {
		t.Errorf("failures reported: %v", f.r.failures)
	}
	f.h.AddPod(pod("q", 800))
	if out := f.once(); out.Result != Scheduled || out.Node != "a" {
		t.Errorf("q: %+v, want Scheduled on a", out)
	}
}

// heldBinders holds every binding until the test ends it, by pod name.
type heldBinders map[string]func(error)

func (b heldBinders) Bind(_ context.Context, p *v1.Pod, _ string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b[p.Name] = done
}

// TestGangMemberBeingDeletedAfterQuorum: train (minCount 2) is placed
// whole and both bindings are under way when the informer shows
// train-0's deletion started. Its room is freed and the group's count
// drops to one, once: the API server's refusal of its binding later
// neither counts it again, nor gives it back to the queue with its
// group, nor reports it; train-1's binding ends bound.
func TestGangMemberBeingDeletedAfterQuorum(t *testing.T) {
	f, _ := newGangFixture(t)
	hb := heldBinders{}
	f.s.binder = hb
	f.h.AddNode(node("a", 2000))
	f.h.AddPodGroup(podGroup("train", 2, 0))
	f.addGang("train", 2, 1000)
	if out := f.once(); out.Result != Scheduled || len(hb) != 2 {
		t.Fatalf("train: %+v, bindings %v", out, len(hb))
	}
	m0 := memberPod("train-0", "train", 1000)
	f.h.UpdatePod(m0, beingDeleted(m0))
	if n := f.c.GroupPlaced("default/train"); n != 1 {
		t.Fatalf("train placed %d once train-0 is being deleted, want 1", n)
	}
	hb["train-0"](apierrors.NewInternalError(errors.New("pod train-0 is being deleted, cannot be assigned to a host")))
	hb["train-1"](nil)
	if n := f.c.GroupPlaced("default/train"); n != 1 {
		t.Errorf("train placed %d after the bindings ended, want 1", n)
	}
	if _, ok := f.c.NodeOf(framework.Key(m0)); ok {
		t.Error("train-0, being deleted, counted on a node again")
	}
	if loc := f.where("train-0"); loc != 0 {
		t.Errorf("train-0, being deleted, queued again (%v)", loc)
	}
	if len(f.r.failures) != 0 {
		t.Errorf("failures reported: %v", f.r.failures)
	}
}

// TestPodBeingDeletedDuringItsCycleIsNotAssumed: the informer shows p's
// deletion started while p's cycle runs, before p is assumed. The
// update finds no assumption to free; the cycle must not make one
// after it: the API server would refuse the binding, but only once it
// is sent, after PreBind (minutes, for a volume's), and until then p's
// room would be held though no update will come to free it. p is not
// assumed, its binding never starts, nothing is reported, and q takes
// the room.
func TestPodBeingDeletedDuringItsCycleIsNotAssumed(t *testing.T) {
	f := newFixture(t)
	hb := &oneHeldBinder{}
	f.s.binder = hb
	f.h.AddNode(node("a", 1000))
	p := pod("p", 800)
	f.h.AddPod(p)
	f.s.queue = &cycleStartHook{Queue: f.q, key: framework.Key(p), hook: func() { f.h.UpdatePod(p, beingDeleted(p)) }}
	f.once()
	f.s.queue = f.q
	if hb.done != nil {
		t.Error("the binding of p, being deleted, started")
	}
	if n, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Errorf("p, being deleted, assumed on %s", n)
	}
	if loc := f.where("p"); loc != 0 {
		t.Errorf("p, being deleted, queued (%v)", loc)
	}
	if len(f.r.failures) != 0 {
		t.Errorf("failures reported: %v", f.r.failures)
	}
	f.s.binder = f.b
	f.h.AddPod(pod("q", 800))
	if out := f.once(); out.Result != Scheduled || out.Node != "a" {
		t.Errorf("q: %+v, want Scheduled on a", out)
	}
}
