package scheduler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// cloneBomb is PreFilter state whose Clone panics when boom is set.
type cloneBomb struct{ boom bool }

func (c *cloneBomb) Clone() fwk.StateData {
	if c.boom {
		panic("state clone panics")
	}
	return c
}

// panickyClone writes a cloneBomb at PreFilter, armed for pods labelled
// fail=clone.
type panickyClone struct{}

func (panickyClone) Name() string { return "PanickyClone" }

func (panickyClone) PreFilter(_ context.Context, cs fwk.CycleState, p *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	cs.Write("PanickyClone", &cloneBomb{boom: p.Labels["fail"] == "clone"})
	return nil, nil
}

func (panickyClone) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// TestFrameworkPreemptionStateClonePanicFailsOnlyThatPod: DefaultPreemption's
// dry run clones the cycle's state for each node on the framework's
// parallelizer goroutines; a plugin state whose Clone panics fails that
// pod's attempt, and the process, the scheduler and the next pod's
// preemption go on.
func TestFrameworkPreemptionStateClonePanicFailsOnlyThatPod(t *testing.T) {
	extra := frameworkruntime.Registry{
		"PanickyClone": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return panickyClone{}, nil
		},
	}
	f, e := newFWPreemptFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.PreFilter.Enabled = append(p.Plugins.PreFilter.Enabled, config.Plugin{Name: "PanickyClone"})
	})
	f.h.AddNode(node("a", 2000))
	f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
	tests := []struct {
		name, fail string
		wantNode   string
		wantMsg    string
	}{
		{name: "boom", fail: "clone", wantMsg: "panicked: state clone panics"},
		{name: "fine", wantNode: "a"},
	}
	for _, tc := range tests {
		p := prioPod(tc.name, 2000, 100)
		p.Labels = map[string]string{"fail": tc.fail}
		f.h.AddPod(p)
		out := f.once()
		if out.Nominated != tc.wantNode || !strings.Contains(out.Message, tc.wantMsg) {
			t.Fatalf("%s: nominated %q, calls %v: %s; want %q and %q", tc.name, out.Nominated, e.calls, out.Message, tc.wantNode, tc.wantMsg)
		}
		if _, loc, _ := f.q.Get(framework.Key(p)); loc != schedq.InBackoff && loc != schedq.InUnschedulable {
			t.Fatalf("%s is %v, want requeued", tc.name, loc)
		}
	}
	if len(e.calls) != 1 {
		t.Fatalf("evictor calls %v, want the second pod's only", e.calls)
	}
}
