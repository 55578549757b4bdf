package scheduler

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
)

// moodyFilter rejects every pod and registers for node label updates
// with a hint that answers as the node's "hint" label says: "queue",
// "skip", "error" (an error with Skip), or "panic".
type moodyFilter struct{}

func (moodyFilter) Name() string { return "MoodyFilter" }
func (moodyFilter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return fwk.NewStatus(fwk.Unschedulable, "moody")
}
func (moodyFilter) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{
		Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.UpdateNodeLabel},
		QueueingHintFn: func(_ klog.Logger, _ *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
			switch newObj.(*v1.Node).Labels["hint"] {
			case "queue":
				return fwk.Queue, nil
			case "error":
				return fwk.QueueSkip, errors.New("lister unreachable")
			case "panic":
				panic("moody hint")
			}
			return fwk.QueueSkip, nil
		},
	}}, nil
}

// TestHintErrorOrPanicQueuesThePod: a queueing hint that returns an error
// queues the pod, whatever hint it returns with it, as kube-scheduler
// v1.37.2 does; one that panics queues it too (upstream would crash), and
// the process goes on.
func TestHintErrorOrPanicQueuesThePod(t *testing.T) {
	tests := []struct {
		hint  string
		woken bool
	}{
		{hint: "queue", woken: true},
		{hint: "skip"},
		{hint: "error", woken: true},
		{hint: "panic", woken: true},
	}
	for _, tc := range tests {
		t.Run(tc.hint, func(t *testing.T) {
			extra := frameworkruntime.Registry{"MoodyFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
				return moodyFilter{}, nil
			}}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "MoodyFilter"})
			})
			n := node("n", 2000)
			f.h.AddNode(n)
			f.h.AddPod(pod("p", 100))
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("p: %v (%s), want Unschedulable", out.Result, out.Message)
			}
			if loc := f.where("p"); loc != schedq.InUnschedulable {
				t.Fatalf("p %v, want parked", loc)
			}
			relabelled := n.DeepCopy()
			relabelled.Labels = map[string]string{"hint": tc.hint}
			f.h.UpdateNode(n, relabelled)
			if woken := f.where("p") != schedq.InUnschedulable; woken != tc.woken {
				t.Fatalf("woken %v, want %v", woken, tc.woken)
			}
		})
	}
}
