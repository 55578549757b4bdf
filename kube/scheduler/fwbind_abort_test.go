package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// holdProbe is an out-of-tree Reserve and PreBind plugin that keeps a
// reservation per pod, as DynamicResources and VolumeBinding do, and
// calls hook (if set) in the middle of Reserve or PreBind: the point a
// node deletion arrives at. It records each call as it ends.
type holdProbe struct {
	mu    sync.Mutex
	calls []string
	held  map[string]bool
	hook  map[string]func() // by "reserve" or "prebind"
	unres chan struct{}     // a send per Unreserve
}

func (p *holdProbe) Name() string { return "HoldProbe" }

func (p *holdProbe) end(call, pod string, hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
	if hold {
		p.held[pod] = true
	} else if call == "unreserve" {
		delete(p.held, pod)
	}
}

func (p *holdProbe) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if h := p.hook["reserve"]; h != nil {
		h()
	}
	p.end("reserve", pod.Name, true)
	return nil
}

func (p *holdProbe) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.end("unreserve", pod.Name, false)
	p.unres <- struct{}{}
}

func (p *holdProbe) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return nil, nil
}

func (p *holdProbe) PreBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if h := p.hook["prebind"]; h != nil {
		h()
	}
	p.end("prebind", pod.Name, false)
	return nil
}

// TestFrameworkNodeDeletedWhileReserved: a node deleted while the pod's
// Reserve or PreBind plugins are running on it (from the informer's
// goroutine) aborts the binding; the plugins' reservation is undone once,
// after the plugin that made it has returned, so nothing stays held, and
// the pod goes back to the queue.
func TestFrameworkNodeDeletedWhileReserved(t *testing.T) {
	for _, at := range []string{"reserve", "prebind"} {
		t.Run(at, func(t *testing.T) {
			probe := &holdProbe{held: map[string]bool{}, unres: make(chan struct{}, 4)}
			extra := frameworkruntime.Registry{"HoldProbe": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return probe, nil }}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "HoldProbe"})
				p.Plugins.PreBind.Enabled = append(p.Plugins.PreBind.Enabled, config.Plugin{Name: "HoldProbe"})
			})
			n1 := zonedNode("n1", "a")
			f.h.AddNode(n1)
			probe.hook = map[string]func(){at: func() {
				deleted := make(chan struct{})
				go func() { // the informer's goroutine
					f.h.DeleteNode(n1)
					close(deleted)
				}()
				<-deleted
			}}
			p := pod("p", 100)
			f.h.AddPod(p)
			f.once()
			select {
			case <-probe.unres:
			case <-time.After(10 * time.Second):
				t.Fatal("never unreserved")
			}
			probe.mu.Lock()
			calls, held := slices.Clone(probe.calls), len(probe.held)
			probe.mu.Unlock()
			want := []string{"reserve", "unreserve"}
			if at == "prebind" {
				want = []string{"reserve", "prebind", "unreserve"}
			}
			if !slices.Equal(calls, want) || held != 0 {
				t.Fatalf("calls %v, %d reservations held; want %v, none held", calls, held, want)
			}
			if _, ok := f.c.NodeOf(framework.Key(p)); ok {
				t.Fatal("still assumed")
			}
			if _, loc, ok := f.q.Get(framework.Key(p)); !ok || loc == schedq.InFlight {
				t.Fatalf("the pod is not back in the queue: %v %v", loc, ok)
			}
		})
	}
}
