package profile

import (
	"reflect"
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

// TestSignPodTellsScoresApart: pods that the default profile's
// PodTopologySpread would refuse to sign in kube-scheduler, and that
// schedq signs (nothing selects them), are batched on their signature:
// two pods of one signature must get the same scores on every node. The
// framework's signature leaves out what NodeResourcesFit's Score counts
// for a container that requests no CPU or memory (100m and 200Mi) and
// how many containers ImageLocality divides by; on every node the scores
// of two pods signed alike are the same.
func TestSignPodTellsScoresApart(t *testing.T) {
	withImage := node("n1", "a")
	withImage.Status.Images = []v1.ContainerImage{{Names: []string{"registry/x:1"}, SizeBytes: 900 << 20}}
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{withImage, node("n2", "a"), node("n3", "b")}})
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	image := func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry/x:1" }
	idle := func(restart *v1.ContainerRestartPolicy) func(p *v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "idle", Image: p.Spec.Containers[0].Image, RestartPolicy: restart}}
		}
	}
	always := v1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name string
		a, b *v1.Pod
		same bool // signed alike
	}{
		{"pods of one template", pod("a", "", image), pod("b", "", image), true},
		{"the image twice", pod("a", "", image), pod("b", "", image, func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "twin", Image: "registry/x:1"})
		}), false},
		{"an idle container beside", pod("a", ""), pod("b", "", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "idle"})
		}), false},
		{"an idle sidecar, not a plain init container", pod("a", "", idle(nil)), pod("b", "", idle(&always)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa, sb := f.SignPod(t.Context(), tc.a), f.SignPod(t.Context(), tc.b)
			if sa == nil || sb == nil {
				t.Fatalf("not signed: %q, %q", sa, sb)
			}
			if alike := string(sa) == string(sb); alike != tc.same {
				t.Errorf("signed alike: %v, want %v", alike, tc.same)
			}
			if string(sa) != string(sb) {
				return
			}
			ra, rb := scorePod(t, f, tc.a, nodes), scorePod(t, f, tc.b, nodes)
			for i := range nodes {
				if !reflect.DeepEqual(ra.scores[i].RawScores, rb.scores[i].RawScores) {
					t.Errorf("node %s: scores %v and %v", nodes[i].Node().Name, ra.scores[i].RawScores, rb.scores[i].RawScores)
				}
			}
		})
	}
}
