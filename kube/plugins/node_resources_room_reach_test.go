package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReachesBeyond(t *testing.T) {
	const zone = "topology.kubernetes.io/zone"
	x := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	podIn := func(ns string, labels map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: labels}}
	}
	anti := func(p *v1.Pod, key string) *v1.Pod {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: x, TopologyKey: key}},
		}}
		return p
	}
	spread := func(p *v1.Pod, key string, when v1.UnsatisfiableConstraintAction) *v1.Pod {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: x}}
		return p
	}
	isX := map[string]string{"app": "x"}
	tests := []struct {
		name      string
		pod, gone *v1.Pod
		want      bool
	}{
		{"plain pods", podIn("ns", nil), podIn("ns", isX), false},
		{"pod's anti-affinity over a zone selects gone", anti(podIn("ns", nil), zone), podIn("ns", isX), true},
		{"pod's anti-affinity over a node", anti(podIn("ns", nil), hostnameKey), podIn("ns", isX), false},
		{"pod's anti-affinity selects others", anti(podIn("ns", nil), zone), podIn("ns", map[string]string{"app": "y"}), false},
		{"gone's anti-affinity over a zone selects pod", podIn("ns", isX), anti(podIn("other", nil), zone), true},
		{"gone's anti-affinity over a node", podIn("ns", isX), anti(podIn("ns", nil), hostnameKey), false},
		{"spread over zones selects gone", spread(podIn("ns", isX), zone, v1.DoNotSchedule), podIn("ns", isX), true},
		{"spread over zones, gone in another namespace", spread(podIn("ns", isX), zone, v1.DoNotSchedule), podIn("other", isX), false},
		{"spread over nodes", spread(podIn("ns", isX), hostnameKey, v1.DoNotSchedule), podIn("ns", isX), false},
		{"spread that may be broken", spread(podIn("ns", isX), zone, v1.ScheduleAnyway), podIn("ns", isX), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReachesBeyond(tc.pod, tc.gone); got != tc.want {
				t.Fatalf("ReachesBeyond = %v, want %v", got, tc.want)
			}
		})
	}
}
