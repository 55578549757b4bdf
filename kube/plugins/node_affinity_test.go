package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

func nodeSelector(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.NodeSelector = kvMap(kv...) }
}

// requiredNodeAffinity requires, in a single term, key In values.
func requiredNodeAffinity(key string, values ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}}},
		}}
	}
}

func TestNodeAffinityFilter(t *testing.T) {
	node := mkNode("n", nodeLabels("zone", "a", "disk", "ssd"))
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		prefilter bool
		want      framework.Code
	}{
		{"no constraints", mkPod("p"), true, framework.Success},
		{"selector matches", mkPod("p", nodeSelector("disk", "ssd")), true, framework.Success},
		{"selector does not match", mkPod("p", nodeSelector("disk", "hdd")), true, framework.UnschedulableAndUnresolvable},
		{"affinity matches", mkPod("p", requiredNodeAffinity("zone", "a", "b")), true, framework.Success},
		{"affinity does not match", mkPod("p", requiredNodeAffinity("zone", "b")), true, framework.UnschedulableAndUnresolvable},
		{"selector matches, affinity does not", mkPod("p", nodeSelector("disk", "ssd"), requiredNodeAffinity("zone", "b")), true, framework.UnschedulableAndUnresolvable},
		{"without PreFilter", mkPod("p", requiredNodeAffinity("zone", "b")), false, framework.UnschedulableAndUnresolvable},
		{"broken term selects nothing", mkPod("p", requiredNodeAffinity("zone")), true, framework.UnschedulableAndUnresolvable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pi, state := mustPodInfo(t, tc.pod), framework.NewCycleState()
			if tc.prefilter {
				if st := (NodeAffinity{}).PreFilter(ctx, state, pi, fakeSnapshot{}); !st.IsSkip() {
					wantStatus(t, st, framework.Success)
				}
			}
			got := NodeAffinity{}.Filter(ctx, state, pi, nodeInfo(t, node))
			if tc.want == framework.Success {
				wantStatus(t, got, tc.want)
			} else {
				wantStatus(t, got, tc.want, "node(s) didn't match Pod's node affinity/selector")
			}
		})
	}
}

func TestNodeAffinityHints(t *testing.T) {
	pl := NodeAffinity{}
	ssd := mkPod("p", nodeSelector("disk", "ssd"))
	zoneA := mkPod("p", requiredNodeAffinity("zone", "a"))
	runHints(t, pl, evNodeAdd, []hintCase{
		{"matching node", ssd, nil, mkNode("n", nodeLabels("disk", "ssd")), schedq.HintQueue},
		{"other node", ssd, nil, mkNode("n", nodeLabels("disk", "hdd")), schedq.HintSkip},
		{"matching affinity", zoneA, nil, mkNode("n", nodeLabels("zone", "a")), schedq.HintQueue},
		{"unlabelled node", zoneA, nil, mkNode("n"), schedq.HintSkip},
	})
	runHints(t, pl, evNodeLabel, []hintCase{
		{"label added makes it match", ssd, mkNode("n"), mkNode("n", nodeLabels("disk", "ssd")), schedq.HintQueue},
		{"label changed makes it match", zoneA, mkNode("n", nodeLabels("zone", "b")), mkNode("n", nodeLabels("zone", "a")), schedq.HintQueue},
		{"matched already", ssd, mkNode("n", nodeLabels("disk", "ssd")), mkNode("n", nodeLabels("disk", "ssd", "x", "y")), schedq.HintSkip},
		{"still does not match", ssd, mkNode("n"), mkNode("n", nodeLabels("x", "y")), schedq.HintSkip},
		{"stops matching", ssd, mkNode("n", nodeLabels("disk", "ssd")), mkNode("n"), schedq.HintSkip},
	})
}

// TestNodeAffinityPreFilterSkips: a pod without a node selector or
// required node affinity skips Filter; any other pod does not.
func TestNodeAffinityPreFilterSkips(t *testing.T) {
	onlyPodAffinity := mkPod("p", withAffinity(term("zone", "app", "db")))
	preferredOnly := mkPod("p")
	preferredOnly.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}},
	}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		skip bool
	}{
		{"no constraints", mkPod("p"), true},
		{"pod affinity only", onlyPodAffinity, true},
		{"preferred node affinity only", preferredOnly, true},
		{"node selector", mkPod("p", nodeSelector("disk", "ssd")), false},
		{"required node affinity", mkPod("p", requiredNodeAffinity("zone", "a")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NodeAffinity{}.PreFilter(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), fakeSnapshot{})
			if st.IsSkip() != tc.skip || !st.IsSkip() && !st.IsSuccess() {
				t.Fatalf("PreFilter = %+v, want skip %v", st, tc.skip)
			}
		})
	}
}
