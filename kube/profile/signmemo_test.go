package profile

import (
	"bytes"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSignPodMemo: Framework.SignPod gives every pod the signature
// upstream's SignPod gives it, when a pod equal to the last one but for
// its name reuses that one's, when it differs (labels, requests), and
// when a Service that selects the pods arrives between two of them (the
// spreading signer then refuses to sign).
func TestSignPodMemo(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
	check := func(p *v1.Pod, signed bool) {
		t.Helper()
		got, want := f.SignPod(t.Context(), p), f.Framework().SignPod(t.Context(), p)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: signature %q, upstream's %q", p.Name, got, want)
		}
		if (got != nil) != signed {
			t.Fatalf("%s: signature %q, want signed %v", p.Name, got, signed)
		}
	}
	check(pod("a", ""), true)
	check(pod("b", ""), true) // equal but for its name: reused
	check(pod("c", "", func(p *v1.Pod) { p.Labels = map[string]string{"app": "db"} }), true)
	check(pod("d", "", func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
	}), true)

	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "db"}}}
	if err := f.AddObject(svc); err != nil {
		t.Fatal(err)
	}
	check(pod("e", "", func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
	}), false)
}

// TestSameButIdentity: only the name and UID may differ.
func TestSameButIdentity(t *testing.T) {
	a := pod("a", "")
	cases := []struct {
		name string
		b    *v1.Pod
		want bool
	}{
		{"another name", pod("b", ""), true},
		{"another namespace", pod("b", "", func(p *v1.Pod) { p.Namespace = "other" }), false},
		{"another label", pod("b", "", func(p *v1.Pod) { p.Labels["x"] = "y" }), false},
		{"a node name", pod("b", "n1"), false},
		{"a status", pod("b", "", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }), false},
	}
	for _, c := range cases {
		if got := sameButIdentity(a, c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
