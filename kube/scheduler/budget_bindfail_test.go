package scheduler

import (
	"errors"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// TestFailedBindingGivesRoomBack: a pod assumed on a node holds its room
// while its binding is under way; a pod tried meanwhile is refused for
// lack of it and parked. When the binding fails the room is free again,
// and, as kube-scheduler does (an assigned pod's deletion, of the pod it
// had assumed), the parked pods that it may help must wake, with the
// wake budget on or off, rather than wait for the leftover flush.
func TestFailedBindingGivesRoomBack(t *testing.T) {
	for _, budget := range []bool{true, false} {
		t.Run(budgetName(budget), func(t *testing.T) {
			f, b, _, p := parkedBehindABinding(t, budget)
			b.done(errors.New("binding refused"))
			if _, loc, _ := f.q.Get(framework.Key(p)); loc == schedq.InUnschedulable {
				x, _ := f.q.Explain(framework.Key(p))
				t.Fatalf("p still parked after a's binding failed:\n%s", x)
			}
		})
	}
}

// TestAssumedPodDeletedGivesRoomBack: a pod deleted while assumed (its
// binding under way) frees the room it held at once: the deletion's event
// must name the node it was assumed on, or NodeResourcesFit's hint, which
// skips the deletion of a pod that was on no node, and the wake budget,
// which has no node to measure, leave the pods parked for lack of that
// room until the binding ends.
func TestAssumedPodDeletedGivesRoomBack(t *testing.T) {
	for _, budget := range []bool{true, false} {
		t.Run(budgetName(budget), func(t *testing.T) {
			f, _, a, p := parkedBehindABinding(t, budget)
			f.h.DeletePod(a) // as the informer has it: never bound
			if _, loc, _ := f.q.Get(framework.Key(p)); loc == schedq.InUnschedulable {
				x, _ := f.q.Explain(framework.Key(p))
				t.Fatalf("p still parked after assumed a was deleted:\n%s", x)
			}
		})
	}
}

func budgetName(budget bool) string {
	if budget {
		return "wake budget"
	}
	return "no wake budget"
}

// parkedBehindABinding is a node of 4 CPUs where a (3 CPUs) is assumed,
// its binding held by b, and p (2 CPUs), tried meanwhile, is parked for
// lack of the room a holds; with the wake budget if budget.
func parkedBehindABinding(t *testing.T, budget bool) (f *fixture, b *oneHeldBinder, a, p *v1.Pod) {
	t.Helper()
	fw := defaultFramework(t)
	c := NewCache()
	var q *schedq.Queue[types.NamespacedName, *v1.Pod]
	if budget {
		q = budgetQueue(t, fw, c)
	} else {
		q = queueOn(t, fw)
	}
	b = &oneHeldBinder{}
	f = &fixture{t: t, q: q, c: c, r: &recReporter{}}
	f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	f.s = mustNew(t, q, c, b, f.r, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
	f.h.AddNode(node("n", 4000))
	a = pod("a", 3000)
	f.h.AddPod(a)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("a: %+v", out)
	}
	p = pod("p", 2000)
	f.h.AddPod(p)
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("p: %+v, want unschedulable while a's binding holds the room", out)
	}
	return f, b, a, p
}
