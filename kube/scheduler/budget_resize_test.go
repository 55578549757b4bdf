package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// cpuList is a resource list of milliCPU.
func cpuList(milliCPU int64) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)}
}

// resized is p (bound) with its container's spec requests at spec and its
// status (allocated and actuated) at status; infeasible marks the resize
// pending as infeasible.
func resized(p *v1.Pod, spec, status int64, infeasible bool) *v1.Pod {
	q := p.DeepCopy()
	q.Spec.Containers[0].Resources.Requests = cpuList(spec)
	q.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", AllocatedResources: cpuList(status),
		Resources: &v1.ResourceRequirements{Requests: cpuList(status)}}}
	q.Status.Conditions = nil
	if infeasible {
		q.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible}}
	}
	q.ResourceVersion += "+"
	return q
}

// TestWakeBudgetResizeCountsStatus: a bound pod resized in place holds,
// as kube-scheduler counts it, the most of its spec's requests and of
// what its status says is allocated and running (only the latter once
// the resize is infeasible). Its room comes back when that amount goes
// down: a resize actuated, or found infeasible. The pending pod that the
// room then holds must wake, as kube-scheduler's scale-down event wakes
// it, and be placed; a resize only requested frees nothing yet.
func TestWakeBudgetResizeCountsStatus(t *testing.T) {
	type size struct {
		spec, status int64
		infeasible   bool
	}
	tests := []struct {
		name  string
		start size   // the bound pod's, on a node of 4000m
		steps []size // its updates, in order
		wake  []bool // whether the pending pod (2000m) wakes after each
	}{
		{"scaled down, then actuated", size{4000, 4000, false}, []size{{1000, 4000, false}, {1000, 1000, false}}, []bool{false, true}},
		{"resized up, then infeasible", size{4000, 1000, false}, []size{{4000, 1000, true}}, []bool{true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newBudgetFixture(t)
			f.h.AddNode(node("n", 4000))
			b := resized(boundOn("b", "n", 0, nil), tc.start.spec, tc.start.status, tc.start.infeasible)
			f.h.AddPod(b)
			p := pod("p", 2000)
			f.h.AddPod(p)
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("first attempt: %+v, want unschedulable", out)
			}
			for i, st := range tc.steps {
				next := resized(b, st.spec, st.status, st.infeasible)
				f.h.UpdatePod(b, next)
				b = next
				_, loc, _ := f.q.Get(framework.Key(p))
				if woke := loc != schedq.InUnschedulable; woke != tc.wake[i] {
					x, _ := f.q.Explain(framework.Key(p))
					t.Fatalf("after update %d: woken %v, want %v:\n%s", i+1, woke, tc.wake[i], x)
				}
			}
			if out := f.once(); out.Result != Scheduled || out.Node != "n" {
				t.Fatalf("second attempt: %+v, want scheduled on n", out)
			}
		})
	}
}
