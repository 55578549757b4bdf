package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// nodeDropper is a Filter plugin that, filtering the pod named pod on the
// node named node, has drop run (once) and lets the pod pass: the node's
// deletion arrives between the snapshot and Assume.
type nodeDropper struct {
	pod, node string
	once      *sync.Once
	drop      func()
}

const nodeDropperName = "NodeDropper"

func (nodeDropper) Name() string { return nodeDropperName }
func (d nodeDropper) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if p.Name == d.pod && ni.Node().Name == d.node {
		d.once.Do(d.drop)
	}
	return nil
}

// TestFailureEndsTheNomination: an attempt that ends before a node is
// found for the pod by the filters (the cluster has no node), or whose
// chosen node cannot be assumed, clears the pod's nomination in the
// queue, as kube-scheduler v1.37.2 does (its scheduling cycle returns
// clearNominatedNode on both paths, and its failure handler applies it
// to the nominator). Before, the nomination (here restored from the
// pod's status) stood after both.
func TestFailureEndsTheNomination(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  []string // the cluster's nodes
		drop   bool     // node a is deleted while p is filtered there
		result Result
		msg    string
	}{
		{name: "no nodes", result: Unschedulable, msg: "0/0 nodes are available"},
		{name: "assume fails", nodes: []string{"a", "b"}, drop: true, result: Error, msg: "node a was deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			dropper := nodeDropper{pod: "p", node: "a", once: &sync.Once{}, drop: func() {
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
