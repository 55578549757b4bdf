package scheduler

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestNominatedPodLeavingWakesThoseItKeptOut: a pending pod nominated to
// a node keeps its room there from pods of its priority or lower; when it
// leaves the queue unbound (deleted, or terminating, or handed to another
// scheduler) that room is free again, and kube-scheduler v1.37.2 moves
// the pods of lower or equal priority with an AssignedPodDelete event of
// it (NodeResourcesFit's hint queues a pod for a deleted pod that was
// nominated). A pod of higher priority never counted the room and is not
// woken for it.
func TestNominatedPodLeavingWakesThoseItKeptOut(t *testing.T) {
	tests := []struct {
		name  string
		leave func(f *fixture, big *v1.Pod)
		prio  int32 // of the pod kept out
		cpu   int64 // its request, 1000m unless set
		woken bool
	}{
		{
			name:  "deleted",
			leave: func(f *fixture, big *v1.Pod) { f.h.DeletePod(big) },
			prio:  1, woken: true,
		},
		{
			name: "terminating",
			leave: func(f *fixture, big *v1.Pod) {
				gone := big.DeepCopy()
				gone.DeletionTimestamp = &metav1.Time{Time: t0}
				f.h.UpdatePod(big, gone)
			},
			prio: 1, woken: true,
		},
		{
			name: "handed to another scheduler",
			leave: func(f *fixture, big *v1.Pod) {
				other := big.DeepCopy()
				other.Spec.SchedulerName = "other"
				f.h.UpdatePod(big, other)
			},
			prio: 100, woken: true,
		},
		{
			// Too large for the node, it never counted big's room.
			name:  "deleted, a pod of higher priority stays",
			leave: func(f *fixture, big *v1.Pod) { f.h.DeletePod(big) },
			prio:  200, cpu: 9000,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			f.h.AddNode(zonedNode("n1", "a")) // 8 CPUs
			cpu := tc.cpu
			if cpu == 0 {
				cpu = 1000
			}
			f.h.AddPod(prioPod("small", cpu, tc.prio))
			info, ok := tryPop(f.q)
			if !ok {
				t.Fatal("nothing to pop")
			}
			big := prioPod("big", 7500, 100)
			big.Status.NominatedNodeName = "n1" // restored in the queue as it is added
			f.h.AddPod(big)
			out := f.s.ScheduleOne(context.Background(), info)
			if out.Result != Unschedulable || !slices.Equal(out.Plugins, []string{"NodeResourcesFit"}) {
				t.Fatalf("small: %v by %v (%s), want Unschedulable by NodeResourcesFit", out.Result, out.Plugins, out.Message)
			}
			if loc := f.where("small"); loc != schedq.InUnschedulable {
				t.Fatalf("small %v, want parked", loc)
			}
			tc.leave(f, big)
			if _, ok := f.q.Nomination(framework.Key(big)); ok {
				t.Fatal("big still nominated")
			}
			if woken := f.where("small") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("small woken %v when big left, want %v", woken, tc.woken)
			}
		})
	}
}
