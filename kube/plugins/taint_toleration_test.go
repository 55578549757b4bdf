package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

func TestTaintTolerationFilter(t *testing.T) {
	gpu := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	evict := v1.Taint{Key: "broken", Value: "disk", Effect: v1.TaintEffectNoExecute}
	soft := v1.Taint{Key: "soft", Value: "yes", Effect: v1.TaintEffectPreferNoSchedule}
	tolerateGPU := tolerating(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule})
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		node   *v1.Node
		reason string // empty: success
	}{
		{"no taints", mkPod("p"), mkNode("n"), ""},
		{"untolerated NoSchedule", mkPod("p"), mkNode("n", tainted(gpu)), "node(s) had untolerated taint {dedicated: gpu}"},
		{"untolerated NoExecute", mkPod("p"), mkNode("n", tainted(evict)), "node(s) had untolerated taint {broken: disk}"},
		{"PreferNoSchedule is ignored", mkPod("p"), mkNode("n", tainted(soft)), ""},
		{"tolerated", mkPod("p", tolerateGPU), mkNode("n", tainted(gpu)), ""},
		{"one of two tolerated", mkPod("p", tolerateGPU), mkNode("n", tainted(gpu, evict)), "node(s) had untolerated taint {broken: disk}"},
		{"wrong value", mkPod("p", tolerateGPU), mkNode("n", tainted(v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})), "node(s) had untolerated taint {dedicated: db}"},
		{"Exists tolerates any value", mkPod("p", tolerating(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists})), mkNode("n", tainted(gpu)), ""},
		{"Gt is off, as in kube-scheduler 1.36", mkPod("p", tolerating(v1.Toleration{Key: "level", Operator: v1.TolerationOpGt, Value: "1"})), mkNode("n", tainted(v1.Taint{Key: "level", Value: "5", Effect: v1.TaintEffectNoSchedule})), "node(s) had untolerated taint {level: 5}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TaintToleration{}.Filter(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), nodeInfo(t, tc.node))
			if tc.reason == "" {
				wantStatus(t, got, framework.Success)
			} else {
				wantStatus(t, got, framework.UnschedulableAndUnresolvable, tc.reason)
			}
		})
	}
}

func TestTaintTolerationHints(t *testing.T) {
	pl := TaintToleration{}
	gpu := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	db := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}
	soft := v1.Taint{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}
	gpuPod := mkPod("p", tolerating(v1.Toleration{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}))
	runHints(t, pl, evNodeAdd, []hintCase{
		{"untainted node", mkPod("p"), nil, mkNode("n"), schedq.HintQueue},
		{"tolerated taint", gpuPod, nil, mkNode("n", tainted(gpu)), schedq.HintQueue},
		{"untolerated taint", gpuPod, nil, mkNode("n", tainted(db)), schedq.HintSkip},
		{"only a PreferNoSchedule taint", mkPod("p"), nil, mkNode("n", tainted(soft)), schedq.HintQueue},
	})
	runHints(t, pl, evNodeTaint, []hintCase{
		{"taint removed", mkPod("p"), mkNode("n", tainted(db)), mkNode("n"), schedq.HintQueue},
		{"taint swapped for a tolerated one", gpuPod, mkNode("n", tainted(db)), mkNode("n", tainted(gpu)), schedq.HintQueue},
		{"taint added", mkPod("p"), mkNode("n"), mkNode("n", tainted(db)), schedq.HintSkip},
		{"one of two taints removed", mkPod("p"), mkNode("n", tainted(db, gpu)), mkNode("n", tainted(gpu)), schedq.HintSkip},
		{"already tolerated before", gpuPod, mkNode("n", tainted(gpu)), mkNode("n", tainted(gpu, soft)), schedq.HintSkip},
	})
	runHints(t, pl, evOwnToleration, []hintCase{
		{"own toleration update", mkPod("p"), mkPod("p"), gpuPod, schedq.HintQueue},
		{"another pod's update", mkPod("p"), mkPod("q"), mkPod("q", tolerating(v1.Toleration{Operator: v1.TolerationOpExists})), schedq.HintSkip},
	})
}
