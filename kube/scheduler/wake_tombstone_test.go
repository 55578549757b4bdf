package scheduler

import (
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestTombstonesAreHandledAsDeletions: an object deleted while the watch
// was down reaches the handlers as a cache.DeletedFinalStateUnknown
// tombstone; the pod and node handlers, wired as Register wires them,
// handle its last state as the deletion, as kube-scheduler does: a
// pending pod leaves the queue, an assigned pod frees its room and wakes
// the pod it kept out, a node leaves the cache.
func TestTombstonesAreHandledAsDeletions(t *testing.T) {
	tomb := func(key string, obj any) cache.DeletedFinalStateUnknown {
		return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
	}
	tests := []struct {
		name  string
		check func(t *testing.T, f *fixture, pods, nodes cache.ResourceEventHandler)
	}{
		{
			name: "pending pod",
			check: func(t *testing.T, f *fixture, pods, _ cache.ResourceEventHandler) {
				p := pod("p", 100)
				pods.OnAdd(p, false)
				pods.OnDelete(tomb("default/p", p))
				if loc := f.where("p"); loc != 0 {
					t.Fatalf("pending pod %v after its tombstone, want gone", loc)
				}
			},
		},
		{
			name: "assigned pod",
			check: func(t *testing.T, f *fixture, pods, _ cache.ResourceEventHandler) {
				r := runningPod("r", "n", 1500, 0, t0)
				pods.OnAdd(r, false)
				pods.OnAdd(pod("p", 1000), false)
				if out := f.once(); out.Result != Unschedulable {
					t.Fatalf("p: %v (%s), want Unschedulable", out.Result, out.Message)
				}
				pods.OnDelete(tomb("default/r", r))
				if _, ok := f.c.NodeOf(framework.Key(r)); ok {
					t.Fatal("the deleted pod still counted on its node")
				}
				if loc := f.where("p"); loc == schedq.InUnschedulable {
					t.Fatal("p still parked after the pod that filled the node was deleted")
				}
			},
		},
		{
			name: "node",
			check: func(t *testing.T, f *fixture, _, nodes cache.ResourceEventHandler) {
				n2 := node("n2", 2000)
				nodes.OnAdd(n2, false)
				nodes.OnDelete(tomb("n2", n2))
				if got := f.c.NodeCount(); got != 1 {
					t.Fatalf("%d nodes after the tombstone, want 1", got)
				}
			},
		},
		{
			name: "tombstone of something else",
			check: func(t *testing.T, f *fixture, pods, nodes cache.ResourceEventHandler) {
				pods.OnDelete(tomb("x", "not a pod"))
				nodes.OnDelete(tomb("x", 42))
				if got := f.c.NodeCount(); got != 1 {
					t.Fatalf("%d nodes, want 1", got)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			pods := typed(f.h.addPodEvent, f.h.UpdatePod, f.h.DeletePod)
			nodes := typed(f.h.addNode, f.h.UpdateNode, f.h.DeleteNode)
			nodes.OnAdd(node("n", 2000), false)
			tc.check(t, f, pods, nodes)
		})
	}
}
