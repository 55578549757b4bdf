package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
)

// activatingReserve is an out-of-tree Reserve plugin that, for a pod
// labelled activate=NAME, asks the framework's handle to activate the pod
// NAME (fwk.PodActivator), as plugins do for the pods that wait on the
// one reserved (a coscheduling plugin's siblings, say).
type activatingReserve struct{ h fwk.Handle }

func (activatingReserve) Name() string { return "ActivatingReserve" }

func (pl activatingReserve) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	if name := p.Labels["activate"]; name != "" {
		other := pod(name, 0)
		pl.h.Activate(klog.Background(), map[string]*v1.Pod{other.Namespace + "/" + other.Name: other})
	}
	return nil
}

func (activatingReserve) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

// TestPluginActivationReachesTheQueue: a plugin's call of the handle's
// Activate moves the pod it names from the unschedulable pods to activeQ,
// as kube-scheduler's framework, whose PodActivator is its scheduling
// queue, does; from a lone pod's cycle and from a group member's. Before,
// the frameworks had no PodActivator: the call panicked on the nil
// interface, the activating pod's attempt failed as an error, and the
// parked pod stayed parked.
func TestPluginActivationReachesTheQueue(t *testing.T) {
	activate := func(p *v1.Pod) { p.Labels = map[string]string{"activate": "parked"} }
	for _, c := range []struct {
		name string
		add  func(f *fixture)
	}{
		{"lone pod", func(f *fixture) {
			p := pod("trigger", 100)
			activate(p)
			f.h.AddPod(p)
		}},
		{"group member", func(f *fixture) {
			f.addFWGang("g", 2, 2, func(i int, p *v1.Pod) {
				if i == 1 {
					activate(p)
				}
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			extra := frameworkruntime.Registry{"ActivatingReserve": func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
				return activatingReserve{h}, nil
			}}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "ActivatingReserve"})
			})
			f.h.AddNode(zonedNode("n1", "a"))
			f.h.AddPod(pod("parked", 100_000)) // fits no node
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("parked: %+v", out)
			}
			if loc := f.where("parked"); loc != schedq.InUnschedulable {
				t.Fatalf("parked is %v, want unschedulable", loc)
			}
			c.add(f)
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("the activating attempt: %+v", out)
			}
			if loc := f.where("parked"); loc != schedq.InActive {
				t.Fatalf("parked is %v after the plugin activated it, want active", loc)
			}
		})
	}
}
