package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

func TestNodeNameFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want framework.Code
	}{
		{"no node name", mkPod("p"), framework.Success},
		{"same node", mkPod("p", onNode("n1")), framework.Success},
		{"other node", mkPod("p", onNode("n2")), framework.UnschedulableAndUnresolvable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NodeName{}.Filter(ctx, framework.NewCycleState(), mustPodInfo(t, tc.pod), nodeInfo(t, mkNode("n1")))
			if tc.want == framework.Success {
				wantStatus(t, got, tc.want)
			} else {
				wantStatus(t, got, tc.want, "node(s) didn't match the requested node name")
			}
		})
	}
}

func TestNodeNameHints(t *testing.T) {
	runHints(t, NodeName{}, evNodeAdd, []hintCase{
		{"the named node", mkPod("p", onNode("n1")), nil, mkNode("n1"), schedq.HintQueue},
		{"another node", mkPod("p", onNode("n1")), nil, mkNode("n2"), schedq.HintSkip},
		{"pod names no node", mkPod("p"), nil, mkNode("n2"), schedq.HintSkip},
	})
	for _, reg := range (NodeName{}).EventsToRegister() {
		if clusterevent.Match(reg.Event, evNodeLabel) || clusterevent.Match(reg.Event, evNodeTaint) {
			t.Errorf("NodeName registers %v, which matches node updates", reg.Event.Label)
		}
	}
}
