package sim

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNoExecuteTaintEvictsIntolerantPods: a NoExecute taint put on a node
// (taintNodes) evicts the running pods there that do not tolerate it, as
// kube-controller-manager's taint-eviction controller does, and their
// controllers create them again, pending: they move to the node left
// untainted. A pod that tolerates the taint stays. The simulator used to
// leave every pod running under the taint, predicting that nothing moved.
func TestNoExecuteTaintEvictsIntolerantPods(t *testing.T) {
	for _, tc := range []struct {
		name   string
		effect string
		moved  bool // web left the tainted node for spare
	}{
		{name: "NoExecute", effect: "NoExecute", moved: true},
		{name: "NoSchedule leaves running pods", effect: "NoSchedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, `name: noexecute
seed: 1
duration: 1m
nodes:
  - {name: a, count: 1, capacity: {cpu: "4"}}
  - {name: spare, count: 1, capacity: {cpu: "4"}, taints: [{key: later, effect: NoSchedule}]}
pods:
  - {name: web, count: 1, requests: {cpu: "1"}}
  - {name: tolerant, count: 1, requests: {cpu: "1"}, nodeSelector: {kubernetes.io/hostname: a-0}, tolerations: [{key: maint, operator: Exists, effect: `+tc.effect+`}]}
events:
  - {at: 5s, untaintNodes: {group: spare, taint: {key: later}}}
  - {at: 10s, taintNodes: {group: a, taint: {key: maint, effect: `+tc.effect+`}}}
`)
			s := runSim(t, sc)
			var webNodes []string
			for _, st := range s.order {
				if st.key.Name == "web-0" && !st.bound.IsZero() {
					webNodes = append(webNodes, st.ext.node)
				}
			}
			want := []string{"a-0"}
			if tc.moved {
				want = append(want, "spare-0")
			}
			if len(webNodes) != len(want) || webNodes[0] != want[0] || webNodes[len(webNodes)-1] != want[len(want)-1] {
				t.Errorf("web bound on %v, want %v", webNodes, want)
			}
			if p := s.cl.pods[types.NamespacedName{Namespace: "default", Name: "tolerant-0"}]; p == nil || p.Spec.NodeName != "a-0" {
				t.Errorf("tolerant pod %v, want still on a-0", p)
			}
		})
	}
}

// TestEvictAfter: the taint-eviction controller's rule for one pod and a
// NoExecute taint: at once without a toleration of it, after the
// shortest tolerationSeconds of those that tolerate it, never if one
// of them has none.
func TestEvictAfter(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	taint := &v1.Taint{Key: "maint", Effect: v1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name    string
		tols    []v1.Toleration
		evicted bool
		after   time.Duration
	}{
		{name: "no toleration", evicted: true},
		{name: "another key", tols: []v1.Toleration{{Key: "other", Operator: v1.TolerationOpExists}}, evicted: true},
		{name: "for ever", tols: []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists}}},
		{name: "for a while", tols: []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(60)},
			{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(30)}}, evicted: true, after: 30 * time.Second},
		{name: "for ever beats a while", tols: []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(60)},
			{Key: "maint", Operator: v1.TolerationOpExists}}},
		{name: "negative is at once", tols: []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(-5)}}, evicted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, evicted := evictAfter(&v1.Pod{Spec: v1.PodSpec{Tolerations: tc.tols}}, taint)
			if evicted != tc.evicted || after != tc.after {
				t.Errorf("evictAfter = %v, %v; want %v, %v", after, evicted, tc.after, tc.evicted)
			}
		})
	}
}
