package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
)

// nodeDropper is a Filter plugin that, filtering the pod named pod on the
// node named node, has drop run (once) and lets the pod pass: the node's
// deletion arrives between the snapshot and Assume. If broken, it fails
// there with an error instead.
type nodeDropper struct {
	pod, node string
	once      *sync.Once
	drop      func()
	broken    bool // Filter fails with an error there instead
}

const nodeDropperName = "NodeDropper"

func (nodeDropper) Name() string { return nodeDropperName }
func (d nodeDropper) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if p.Name == d.pod && ni.Node().Name == d.node {
		if d.broken {
			return fwk.AsStatus(errors.New("the filter broke"))
		}
		d.once.Do(d.drop)
	}
	return nil
}

// TestFailureEndsTheNomination: an attempt that ends before a node is
// found for the pod by the filters (the cluster has no node), whose
// search fails with an error, or whose chosen node cannot be assumed,
// clears the pod's nomination in the queue, as kube-scheduler v1.37.2
// does (its scheduling cycle returns clearNominatedNode on these paths,
// and its failure handler applies it to the nominator). Before, the
// nomination (here restored from the pod's status) stood after them.
func TestFailureEndsTheNomination(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  []string // the cluster's nodes
		drop   bool     // node a is deleted while p is filtered there
		broken bool     // the filter fails with an error on a
		result Result
		msg    string
	}{
		{name: "no nodes", result: Unschedulable, msg: "0/0 nodes are available"},
		{name: "assume fails", nodes: []string{"a", "b"}, drop: true, result: Error, msg: "node a was deleted"},
		{name: "filter error", nodes: []string{"a", "b"}, broken: true, result: Error, msg: "the filter broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			dropper := nodeDropper{pod: "p", node: "a", once: &sync.Once{}, broken: tc.broken, drop: func() {
				if tc.drop {
					deleteFromInformer(f, node("a", 4000))
				}
			}}
			extra := frameworkruntime.Registry{nodeDropperName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
				return dropper, nil
			}}
			f = newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
				p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: nodeDropperName})
			})
			for _, n := range tc.nodes {
				f.h.AddNode(node(n, 4000))
			}
			p := prioPod("p", 1000, 10)
			p.Status.NominatedNodeName = "a" // restored in the queue as it is added
			f.h.AddPod(p)
			if nom := f.nomination("p"); nom != "a" {
				t.Fatalf("p nominated to %q before its attempt, want a", nom)
			}
			if out := f.once(); out.Result != tc.result || !strings.Contains(out.Message, tc.msg) {
				t.Fatalf("p: %v (%s), want %v with %q", out.Result, out.Message, tc.result, tc.msg)
			}
			if nom := f.nomination("p"); nom != "" {
				t.Errorf("p still nominated to %q after its failed attempt", nom)
			}
		})
	}
}

// withoutPostFilters is a profile mutation that disables the default
// profile's PostFilter plugins (DefaultPreemption, DynamicResources) but
// those named keep.
func withoutPostFilters(keep ...string) func(*config.KubeSchedulerProfile) {
	return func(p *config.KubeSchedulerProfile) {
		for _, name := range []string{"DefaultPreemption", "DynamicResources"} {
			if !slices.Contains(keep, name) {
				p.Plugins.PostFilter.Disabled = append(p.Plugins.PostFilter.Disabled, config.Plugin{Name: name})
			}
		}
	}
}

// TestNoPostFilterEndsTheNomination: a pod that fits nowhere loses its
// nomination when its profile has no PostFilter plugin to run (without
// preemption, DefaultPreemption does not count: the scheduler runs the
// profile as kube-scheduler runs it with DefaultPreemption disabled), as
// kube-scheduler v1.37.2 clears it then; the room it held wakes the pods
// of its priority or lower that it kept out. With another PostFilter plugin
// (DynamicResources', which nominates nothing) the nomination stands, as
// in kube-scheduler. Before, a nomination restored from the pod's status
// stood for ever without preemption.
func TestNoPostFilterEndsTheNomination(t *testing.T) {
	for _, tc := range []struct {
		name       string
		preemption bool
		keep       []string // the profile's PostFilter plugins
		want       string   // p's nomination after its attempt
	}{
		{name: "preemption off, no PostFilter", want: ""},
		{name: "preemption off, DefaultPreemption only", keep: []string{"DefaultPreemption"}, want: ""},
		{name: "preemption off, DynamicResources", keep: []string{"DynamicResources"}, want: "a"},
		{name: "preemption on, no PostFilter", preemption: true, want: ""},
		{name: "preemption on, DynamicResources", preemption: true, keep: []string{"DynamicResources"}, want: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, withoutPostFilters(tc.keep...))
			if tc.preemption {
				if err := f.s.EnablePreemption(PreemptionOptions{Evictor: &syncEvictor{f: f}}); err != nil {
					t.Fatal(err)
				}
			}
			f.h.AddNode(node("a", 4000))
			f.h.AddPod(runningPod("busy", "a", 2000, 100, t0)) // a: 2000 free, nobody p may preempt
			f.h.AddPod(prioPod("low", 1500, 10))               // tried first: it came first
			p := prioPod("p", 3000, 10)
			p.Status.NominatedNodeName = "a" // restored in the queue as it is added
			f.h.AddPod(p)
			if out := f.once(); out.Result != Unschedulable || f.where("low") != schedq.InUnschedulable {
				t.Fatalf("low: %v (%s), %v; want parked, kept out of a by p's nomination", out.Result, out.Message, f.where("low"))
			}
			if out := f.once(); out.Result != Unschedulable || !strings.Contains(out.Message, "Insufficient cpu") {
				t.Fatalf("p: %v (%s), want Insufficient cpu", out.Result, out.Message)
			}
			if nom := f.nomination("p"); nom != tc.want {
				t.Fatalf("p nominated to %q after fitting nowhere, want %q", nom, tc.want)
			}
			if parked := f.where("low") == schedq.InUnschedulable; parked != (tc.want != "") {
				t.Errorf("low parked: %v; want parked only while p's nomination holds the room", parked)
			}
		})
	}
}
