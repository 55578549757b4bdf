package scheduler

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// newBudgetFixture is the scheduler on kube-scheduler's default profile
// with the wake budget on, as schedq's scheduler runs by default.
func newBudgetFixture(t *testing.T) *fixture {
	t.Helper()
	fw := defaultFramework(t)
	c := NewCache()
	q := budgetQueue(t, fw, c)
	f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
	f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	f.s = mustNew(t, q, c, f.b, f.r, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
	return f
}

// boundOn is a pod bound to node, with labels.
func boundOn(name, node string, milliCPU int64, labels map[string]string) *v1.Pod {
	p := pod(name, milliCPU)
	p.Spec.NodeName = node
	p.Labels = labels
	return p
}

// TestWakeBudgetTopologyBeyondTheNode: a pod that a topology constraint
// (spread over zones, or anti-affinity in a zone) keeps from a node with
// room is let onto it by the departure of a pod from another node of
// the zone. The departed pod's node has no room for it, but the event
// still made it schedulable, elsewhere: it must wake, as kube-scheduler
// wakes it, and be placed, not stay deferred for lack of room on the
// node it left.
func TestWakeBudgetTopologyBeyondTheNode(t *testing.T) {
	x := map[string]string{"app": "x"}
	sel := &metav1.LabelSelector{MatchLabels: x}
	tests := []struct {
		name    string
		nodes   []*v1.Node
		bound   []*v1.Pod
		pending func() *v1.Pod
		leaves  string // the bound pod deleted
		want    string // the node the pending pod lands on
	}{
		{
			name:  "spread over zones",
			nodes: []*v1.Node{zonedNodeCPU("a1", "a", 2000), zonedNodeCPU("b1", "b", 2000), zonedNodeCPU("b2", "b", 1000)},
			bound: []*v1.Pod{
				boundOn("xa", "a1", 2000, x), boundOn("xb1", "b1", 100, x),
				boundOn("xb2", "b2", 100, x), boundOn("filler", "b2", 900, nil),
			},
			pending: func() *v1.Pod {
				p := pod("p", 1000)
				p.Labels = x
				p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: sel,
				}}
				return p
			},
			leaves: "xb2", want: "b1",
		},
		{
			name:  "anti-affinity in a zone",
			nodes: []*v1.Node{zonedNodeCPU("a1", "a", 1000), zonedNodeCPU("a2", "a", 2000), zonedNodeCPU("b1", "b", 1000)},
			bound: []*v1.Pod{
				boundOn("xa1", "a1", 100, x), boundOn("filler", "a1", 900, nil), boundOn("fillb", "b1", 1000, nil),
			},
			pending: func() *v1.Pod {
				p := pod("p", 1000)
				p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: sel, TopologyKey: zoneLabel}},
				}}
				return p
			},
			leaves: "xa1", want: "a2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newBudgetFixture(t)
			for _, n := range tc.nodes {
				f.h.AddNode(n)
			}
			var gone *v1.Pod
			for _, p := range tc.bound {
				f.h.AddPod(p)
				if p.Name == tc.leaves {
					gone = p
				}
			}
			p := tc.pending()
			f.h.AddPod(p)
			if out := f.once(); out.Result != Unschedulable {
				t.Fatalf("first attempt: %+v, want unschedulable", out)
			}
			f.h.DeletePod(gone)
			x, err := f.q.Explain(framework.Key(p))
			if err != nil {
				t.Fatal(err)
			}
			if x.Location == schedq.InUnschedulable {
				t.Fatalf("still parked after %s left:\n%s", tc.leaves, x)
			}
			if out := f.once(); out.Result != Scheduled || out.Node != tc.want {
				t.Fatalf("second attempt: %+v, want scheduled on %s", out, tc.want)
			}
		})
	}
}

func zonedNodeCPU(name, zone string, milliCPU int64) *v1.Node {
	n := node(name, milliCPU)
	n.Labels = map[string]string{zoneLabel: zone, "kubernetes.io/hostname": name}
	return n
}
