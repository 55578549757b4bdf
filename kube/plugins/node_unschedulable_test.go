package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

var tolerateCordon = tolerating(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})

func TestNodeUnschedulableFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want framework.Code
	}{
		{"schedulable node", mkPod("p"), mkNode("n"), framework.Success},
		{"cordoned node", mkPod("p"), mkNode("n", cordoned), framework.UnschedulableAndUnresolvable},
		{"cordoned node, pod tolerates", mkPod("p", tolerateCordon), mkNode("n", cordoned), framework.Success},
		{"cordoned node, toleration for another key", mkPod("p", tolerating(v1.Toleration{Key: "other", Operator: v1.TolerationOpExists})), mkNode("n", cordoned), framework.UnschedulableAndUnresolvable},
		{"cordoned node, pod tolerates everything", mkPod("p", tolerating(v1.Toleration{Operator: v1.TolerationOpExists})), mkNode("n", cordoned), framework.Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NodeUnschedulable{}.Filter(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), nodeInfo(t, tc.node))
			if tc.want == framework.Success {
				wantStatus(t, got, tc.want)
			} else {
				wantStatus(t, got, tc.want, "node(s) were unschedulable")
			}
		})
	}
}

func TestNodeUnschedulableHints(t *testing.T) {
	pl := NodeUnschedulable{}
	plain, tolerant := mkPod("p"), mkPod("p", tolerateCordon)
	nodeCases := []hintCase{
		{"schedulable node added", plain, nil, mkNode("n"), schedq.HintQueue},
		{"cordoned node added", plain, nil, mkNode("n", cordoned), schedq.HintSkip},
		{"cordoned node added, pod tolerates", tolerant, nil, mkNode("n", cordoned), schedq.HintQueue},
	}
	runHints(t, pl, evNodeAdd, nodeCases)
	runHints(t, pl, evNodeTaint, []hintCase{
		{"uncordoned", plain, mkNode("n", cordoned), mkNode("n"), schedq.HintQueue},
		{"cordoned", plain, mkNode("n"), mkNode("n", cordoned), schedq.HintSkip},
		{"still schedulable", plain, mkNode("n"), mkNode("n", tainted(v1.Taint{Key: "x", Effect: v1.TaintEffectNoSchedule})), schedq.HintSkip},
		{"still cordoned", plain, mkNode("n", cordoned), mkNode("n", cordoned, tainted(v1.Taint{Key: "x", Effect: v1.TaintEffectNoSchedule})), schedq.HintSkip},
	})
	runHints(t, pl, evOwnToleration, []hintCase{
		{"own pod now tolerates", plain, plain, tolerant, schedq.HintQueue},
		{"own pod, unrelated toleration", plain, plain, mkPod("p", tolerating(v1.Toleration{Key: "x", Operator: v1.TolerationOpExists})), schedq.HintSkip},
		{"another pod tolerates", plain, mkPod("q"), mkPod("q", tolerateCordon), schedq.HintSkip},
	})
}

func TestNodeUnschedulableHintBadObject(t *testing.T) {
	if h, err := (NodeUnschedulable{}).afterNodeChange(mkPod("p"), nil, mkPod("x")); err == nil || h != schedq.HintQueue {
		t.Fatalf("hint on a pod object = %v, %v; want Queue and an error", h, err)
	}
}
