package scheduler

import (
	"context"
	"strings"
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

// nodeRefusal is a Reserve and Permit plugin that rejects the pod named
// pod on node at the stage it names ("Reserve" or "Permit").
type nodeRefusal struct {
	pod, node, stage string
}

const nodeRefusalName = "NodeRefusal"

func (nodeRefusal) Name() string { return nodeRefusalName }
func (r nodeRefusal) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, node string) *fwk.Status {
	if r.stage == "Reserve" && p.Name == r.pod && node == r.node {
		return fwk.NewStatus(fwk.Unschedulable, "refused at Reserve")
	}
	return nil
}
func (nodeRefusal) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}
func (r nodeRefusal) Permit(_ context.Context, _ fwk.CycleState, p *v1.Pod, node string) (*fwk.Status, time.Duration) {
	if r.stage == "Permit" && p.Name == r.pod && node == r.node {
		return fwk.NewStatus(fwk.Unschedulable, "refused at Permit"), 0
	}
	return nil, 0
}

// TestRejectionAtReserveOrPermitEndsTheNomination: a pod rejected at
// Reserve or Permit on the node it is nominated to loses the nomination,
// as kube-scheduler v1.37.2 clears it after such a rejection (its Assume
// took the pod out of the nominator, and the failure handler clears it),
// and the room the nomination held wakes the pods of its priority or
// lower that it kept out. Before, the nomination stood: the pods it kept
// out stayed parked, and every later attempt of the pod went to that
// node first (a nominated node that passes the filters is taken without
// a search), was rejected there again, and never tried the other node.
func TestRejectionAtReserveOrPermitEndsTheNomination(t *testing.T) {
	for _, stage := range []string{"Reserve", "Permit"} {
		t.Run(stage, func(t *testing.T) {
			refusal := nodeRefusal{pod: "p", node: "a", stage: stage}
			extra := frameworkruntime.Registry{nodeRefusalName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
				return refusal, nil
			}}
			f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: nodeRefusalName})
				p.Plugins.Permit.Enabled = append(p.Plugins.Permit.Enabled, config.Plugin{Name: nodeRefusalName})
			})
			f.h.AddNode(node("a", 8000))
			f.h.AddNode(node("b", 4000))
			f.h.AddPod(runningPod("busy", "a", 5000, 0, t0))   // a: 3000 free
			f.h.AddPod(runningPod("filler", "b", 1300, 0, t0)) // b: 2700 free, too little for low
			f.h.AddPod(prioPod("low", 3000, 10))
			p := prioPod("p", 2500, 10)
			p.Status.NominatedNodeName = "a" // restored in the queue as it is added
			f.h.AddPod(p)
			if out := f.once(); out.Result != Unschedulable || f.where("low") != schedq.InUnschedulable {
				t.Fatalf("low: %v (%s), %v; want parked, kept out of a by p's nomination", out.Result, out.Message, f.where("low"))
			}
			if out := f.once(); out.Result != Unschedulable || !strings.Contains(out.Message, "refused at "+stage) {
				t.Fatalf("p: %v on %q (%s), want refused at %s on a", out.Result, out.Node, out.Message, stage)
			}
			if nom := f.nomination("p"); nom != "" {
				t.Errorf("p still nominated to %q after its rejection there", nom)
			}
			if loc := f.where("low"); loc == schedq.InUnschedulable {
				t.Errorf("low still parked: the room p's nomination held on a was not freed")
			}
			f.scheduleUpTo(1) // low, woken first (its backoff began first): a is the only node it fits
			if err := f.q.Activate(framework.Key(p)); err != nil {
				t.Fatal(err)
			}
			f.scheduleUpTo(1) // p: a is full now, b is not
			if f.b.binds["low"] != "a" || f.b.binds["p"] != "b" {
				t.Fatalf("binds %v, want low on a and p on b", f.b.binds)
			}
		})
	}
}
