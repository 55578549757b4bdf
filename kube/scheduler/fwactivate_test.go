package scheduler

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"
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

// stashingPlugin is an out-of-tree Reserve and PostBind plugin that, for a
// pod labelled stash=NAME and stash-at=reserve or postbind, adds the pod
// NAME to the cycle state's PodsToActivate there, as plugins ask
// kube-scheduler to activate pods at the end of a successful scheduling
// cycle or binding (fwframework.PodsToActivateKey).
type stashingPlugin struct{}

func (stashingPlugin) Name() string { return "StashingPlugin" }

func (stashingPlugin) stash(cs fwk.CycleState, p *v1.Pod, at string) *fwk.Status {
	name := p.Labels["stash"]
	if name == "" || p.Labels["stash-at"] != at {
		return nil
	}
	c, err := cs.Read(fwframework.PodsToActivateKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("no PodsToActivate in the cycle state: %w", err))
	}
	s := c.(*fwframework.PodsToActivate)
	other := pod(name, 0)
	s.Lock()
	s.Map[other.Namespace+"/"+other.Name] = other
	s.Unlock()
	return nil
}

func (pl stashingPlugin) Reserve(_ context.Context, cs fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	return pl.stash(cs, p, "reserve")
}

func (stashingPlugin) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

func (pl stashingPlugin) PostBind(_ context.Context, cs fwk.CycleState, p *v1.Pod, _ string) {
	if st := pl.stash(cs, p, "postbind"); st != nil {
		panic(st.AsError())
	}
}

// TestPodsToActivateReachTheQueue: the pods a plugin puts in the cycle
// state's PodsToActivate, at Reserve or at PostBind, are moved from the
// unschedulable pods to activeQ at the end of the successful scheduling
// cycle (before the binding ends) or of the binding, as kube-scheduler
// activates them; for a lone pod and a group member alike. Before, schedq wrote no PodsToActivate in the
// cycle states: a plugin found none and the pods stayed parked.
func TestPodsToActivateReachTheQueue(t *testing.T) {
	for _, c := range []struct {
		name  string
		group bool
		at    string
	}{
		{"lone pod at Reserve", false, "reserve"},
		{"lone pod at PostBind", false, "postbind"},
		{"group member at Reserve", true, "reserve"},
		{"group member at PostBind", true, "postbind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			extra := frameworkruntime.Registry{"StashingPlugin": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
				return stashingPlugin{}, nil
			}}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "StashingPlugin"})
				p.Plugins.PostBind.Enabled = append(p.Plugins.PostBind.Enabled, config.Plugin{Name: "StashingPlugin"})
			})
			f.h.AddNode(zonedNode("n1", "a"))
			f.h.AddPod(pod("parked", 100_000)) // fits no node
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("parked: %+v", out)
			}
			stash := func(p *v1.Pod) { p.Labels = map[string]string{"stash": "parked", "stash-at": c.at} }
			if c.group {
				f.addFWGang("g", 2, 2, func(i int, p *v1.Pod) {
					if i == 1 {
						stash(p)
					}
				})
			} else {
				p := pod("trigger", 100)
				stash(p)
				f.h.AddPod(p)
			}
			b := &guardedBinder{} // the bindings wait until ended below
			f.s.binder = b
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("the stashing attempt: %+v", out)
			}
			want := schedq.InUnschedulable // until the binding ends
			if c.at == "reserve" {
				want = schedq.InActive // at the end of the scheduling cycle
			}
			if loc := f.where("parked"); loc != want {
				t.Fatalf("parked is %v before the binding ended, want %v", loc, want)
			}
			for i, start := range b.start {
				if Started(start, b.done[i]) {
					b.done[i](nil)
				}
			}
			if loc := f.where("parked"); loc != schedq.InActive {
				t.Fatalf("parked is %v after the binding ended, want active", loc)
			}
		})
	}
}
