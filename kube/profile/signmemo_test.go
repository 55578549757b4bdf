package profile

import (
	"bytes"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// sameForSigning reports whether SignPod's memo takes a and b for the
// same pod: their bytes (sameBytesForSigning) or their keys (signKey)
// are equal.
func sameForSigning(a, b *v1.Pod) bool {
	if sameBytesForSigning(a, b) {
		return true
	}
	ka, okA := signKey(nil, a)
	kb, okB := signKey(nil, b)
	return okA && okB && bytes.Equal(ka, kb)
}

// TestSameForSigning: only the name, UID, annotations, creation time,
// resource version and managed fields may differ.
func TestSameForSigning(t *testing.T) {
	a := pod("a", "")
	cases := []struct {
		name string
		b    *v1.Pod
		want bool
	}{
		{"another name", pod("b", ""), true},
		{"another namespace", pod("b", "", func(p *v1.Pod) { p.Namespace = "other" }), false},
		{"another API version", pod("b", "", func(p *v1.Pod) { p.APIVersion = "v2" }), false},
		{"another label", pod("b", "", func(p *v1.Pod) { p.Labels["x"] = "y" }), false},
		{"a node name", pod("b", "n1"), false},
		{"a status", pod("b", "", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }), false},
		{"another annotation", pod("b", "", func(p *v1.Pod) { p.Annotations = map[string]string{"schedq.io/expected-runtime": "10m"} }), true},
		{"another creation time", pod("b", "", func(p *v1.Pod) { p.CreationTimestamp = metav1.Unix(100, 0) }), true},
		{"another resource version", pod("b", "", func(p *v1.Pod) { p.ResourceVersion = "7" }), true},
		{"other managed fields", pod("b", "", func(p *v1.Pod) {
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &metav1.Time{}}}
		}), true},
		{"another generation", pod("b", "", func(p *v1.Pod) { p.Generation = 2 }), false},
		{"a copy renamed", renamed(a, "b"), true},
		{"a copy on a node", func() *v1.Pod { p := renamed(a, "b"); p.Spec.NodeName = "n1"; return p }(), false},
		{"a copy with another namespace", func() *v1.Pod { p := renamed(a, "b"); p.Namespace = "other"; return p }(), false},
		{"another request", pod("b", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
		}), false},
		{"the request written otherwise", pod("b", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("0.1")}
		}), true},
		{"an empty list of tolerations", pod("b", "", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{} }), true},
		{"a toleration", pod("b", "", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}} }), false},
		{"a condition", pod("b", "", func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		}), false},
	}
	for _, c := range cases {
		if got := sameForSigning(a, c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Equal values behind pointers of their own are equal; the bytes
	// differ, so this is the encodings' answer.
	prio := func(v int32) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Priority = &v } }
	a = pod("a", "", prio(5))
	if !sameForSigning(a, pod("b", "", prio(5))) {
		t.Error("an equal priority of its own: different")
	}
	if sameForSigning(a, pod("b", "", prio(6))) {
		t.Error("another priority: the same")
	}
	if b := renamed(a, "b"); !sameForSigning(a, b) {
		t.Error("a renamed copy of a pod with a priority: different")
	}
}

// TestSignPodMemoEncoding: the memo's kept encoding is always the last
// pod signed's: after a write that made SignPod sign a pod without
// comparing it (c), a pod equal to the one before (d, as a) is compared
// with c, not with a's encoding, and gets its own signature.
func TestSignPodMemoEncoding(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
	cpu := func(q string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}
		}
	}
	check := func(p *v1.Pod) {
		t.Helper()
		if got, want := f.SignPod(t.Context(), p), f.Framework().SignPod(t.Context(), p); !bytes.Equal(got, want) {
			t.Fatalf("%s: signature %q, upstream's %q", p.Name, got, want)
		}
	}
	check(pod("a", "", cpu("100m")))
	check(pod("b", "", cpu("100m"))) // compared with a: a's encoding kept
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "db"}}}
	if err := f.AddObject(svc); err != nil {
		t.Fatal(err)
	}
	check(pod("c", "", cpu("200m"))) // a write since: signed, not compared
	check(pod("d", "", cpu("100m")))
}

// TestSignPodMemoAllocs: reusing the signature of a pod equal to the
// last one signed, decoded apart from it as an API server's pods are
// (no list, map or pointer shared), allocates nothing once the memo's
// buffers have grown. reflect.DeepEqual allocated 16 times per pod.
func TestSignPodMemoAllocs(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
	pods := []*v1.Pod{pod("a", ""), pod("b", ""), pod("c", "")}
	for _, p := range pods {
		p.ResourceVersion = "1" + p.Name
		p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
	}
	want := f.SignPod(t.Context(), pods[0])
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		if got := f.SignPod(t.Context(), pods[1+i%2]); !bytes.Equal(got, want) {
			t.Fatalf("signature %q, want the first pod's %q", got, want)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per reused signature, want 0", allocs)
	}
}

// renamed is a shallow copy of p, sharing its lists and maps, with
// another name and UID.
func renamed(p *v1.Pod, name string) *v1.Pod {
	cp := *p
	cp.Name, cp.UID = name, "uid-"+types.UID(name)
	return &cp
}

// TestPodHasNoFloats: sameBytesForSigning's comparison of bytes is exact only
// for types without floating-point fields (a NaN's bytes equal themselves,
// DeepEqual's NaN does not); this fails if kube's Pod gains one.
func TestPodHasNoFloats(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		switch ty.Kind() {
		case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
			t.Errorf("%s is a %s", path, ty)
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(ty.Elem(), path+"[]")
		case reflect.Map:
			walk(ty.Key(), path+"{key}")
			walk(ty.Elem(), path+"{}")
		case reflect.Struct:
			for i := range ty.NumField() {
				walk(ty.Field(i).Type, path+"."+ty.Field(i).Name)
			}
		case reflect.Interface:
			t.Errorf("%s is an interface, whose value may hold a float", path)
		}
	}
	walk(reflect.TypeFor[v1.Pod](), "Pod")
}
