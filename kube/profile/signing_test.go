package profile

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSignPodWithDefaultSpreading(t *testing.T) {
	// The default profile spreads by default ("System" defaulting). A pod
	// that nothing selects is still signed, so batching applies to it; a
	// pod a Service selects, or with constraints of its own, is not, as
	// in kube-scheduler.
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "db"}}}
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}, Objects: []runtime.Object{svc}})
	cases := []struct {
		name   string
		pod    *v1.Pod
		signed bool
	}{
		{"selected by nothing", pod("web", ""), true},
		{"selected by a service", pod("db", "", func(p *v1.Pod) { p.Labels = map[string]string{"app": "db"} }), false},
		{"own constraints", pod("spread", "", func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneKey,
				WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}
		}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if sig := f.Framework().SignPod(t.Context(), tc.pod); (sig != nil) != tc.signed {
				t.Fatalf("signature %q, want signed %v", sig, tc.signed)
			}
		})
	}
}
