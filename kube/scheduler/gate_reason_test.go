package scheduler

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// holdBack is an out-of-tree PreEnqueue plugin: it holds every pod back
// with its message until admit is set.
type holdBack struct{ admit atomic.Bool }

func (*holdBack) Name() string { return "HoldBack" }

func (h *holdBack) PreEnqueue(context.Context, *v1.Pod) *fwk.Status {
	if h.admit.Load() {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for the quota office's approval")
}

// TestGateReasonsExplain: the explanation of a pod gated by a PreEnqueue
// plugin of kube-scheduler's framework, completed by GateReasons, carries
// the plugin's own reason, in-tree (DynamicResources, SchedulingGates) or
// out-of-tree; one the plugin admits by now is left as the queue says.
func TestGateReasonsExplain(t *testing.T) {
	claimed := func(p *v1.Pod) {
		claim := p.Name + "-claim"
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	}
	tests := []struct {
		name    string
		mutate  func(*v1.Pod)
		hold    bool // the profile has HoldBack
		admit   bool // HoldBack admits the pod once it is gated
		gatedBy string
		want    string // the reason's beginning
	}{
		{name: "missing resource claim", mutate: claimed, gatedBy: "DynamicResources",
			want: `gated by DynamicResources: could not find ResourceClaim "default/p-claim"; waiting for `},
		{name: "scheduling gates", mutate: func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/g"}} },
			gatedBy: "SchedulingGates", want: "gated by SchedulingGates: waiting for scheduling gates: [example.com/g]; waiting for "},
		{name: "out-of-tree plugin", hold: true, gatedBy: "HoldBack",
			want: "gated by HoldBack: waiting for the quota office's approval; waiting for "},
		{name: "admitted since", hold: true, admit: true, gatedBy: "HoldBack", want: "gated by HoldBack; waiting for "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hb := &holdBack{}
			var extra frameworkruntime.Registry
			var mutate func(*config.KubeSchedulerProfile)
			if tc.hold {
				extra = frameworkruntime.Registry{"HoldBack": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return hb, nil }}
				mutate = func(p *config.KubeSchedulerProfile) {
					p.Plugins.PreEnqueue.Enabled = append(p.Plugins.PreEnqueue.Enabled, config.Plugin{Name: "HoldBack"})
				}
			}
			f := newFWFixture(t, extra, mutate)
			f.h.AddNode(zonedNode("n1", "a"))
			p := pod("p", 100)
			if tc.mutate != nil {
				tc.mutate(p)
			}
			f.h.AddPod(p)
			hb.admit.Store(tc.admit)
			x, err := f.q.Explain(framework.Key(p))
			if err != nil || x.Location != schedq.InGated || x.GatedBy != tc.gatedBy {
				t.Fatalf("Explain %+v, %v; want gated by %s", x, err, tc.gatedBy)
			}
			NewGateReasons(context.Background(), f.s.o.Profiles[0]).Explain(&x, p)
			if !strings.HasPrefix(x.Reason, tc.want) {
				t.Fatalf("reason %q, want it to begin %q", x.Reason, tc.want)
			}
		})
	}
}
