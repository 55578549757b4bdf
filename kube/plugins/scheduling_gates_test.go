package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

func gated(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: n})
		}
	}
}

func TestSchedulingGatesPreEnqueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"no gates", mkPod("p"), true},
		{"one gate", mkPod("p", gated("a")), false},
		{"two gates", mkPod("p", gated("a", "b")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (SchedulingGates{}).PreEnqueue(tc.pod); got != tc.want {
				t.Fatalf("PreEnqueue = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSchedulingGatesHints(t *testing.T) {
	pod := mkPod("p", gated("a", "b"))
	runHints(t, SchedulingGates{}, evOwnGatesRemoved, []hintCase{
		{"last gate removed", pod, pod, mkPod("p"), schedq.HintQueue},
		{"one gate left", pod, pod, mkPod("p", gated("b")), schedq.HintSkip},
		{"another pod's gates removed", pod, mkPod("q", gated("a")), mkPod("q"), schedq.HintSkip},
	})
}
