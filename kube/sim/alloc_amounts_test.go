package sim

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAllocationAmountsReuse: the allocation counts each pod's own
// requests, whether summed or taken from the last pod's (a copy bound to
// another node), and a copy with other requests gets its own.
func TestAllocationAmountsReuse(t *testing.T) {
	reqs := func(cpu string) []v1.Container {
		return []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi")}}}}
	}
	a := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1.PodSpec{NodeName: "n1", Containers: reqs("100m")}}
	on := func(p *v1.Pod, name, node string) *v1.Pod {
		cp := *p
		cp.Name, cp.Spec.NodeName = name, node
		return &cp
	}
	bigger := on(a, "c", "n3")
	bigger.Spec.Containers = reqs("2")
	var al allocation
	for _, p := range []*v1.Pod{a, on(a, "b", "n2"), bigger, on(bigger, "d", "n1"), a} {
		if got, want := al.podAmounts(p), podAmounts(p); got != want {
			t.Errorf("%s: %+v, want %+v", p.Name, got, want)
		}
	}
}

// TestAllocationAmountsOfEqualPlainPods: pods that are separate objects
// (their own maps, as an API server's are) get the last pod's amounts
// when their containers request the same, and their own when they do
// not, or when an init container or overhead adds to their containers'.
func TestAllocationAmountsOfEqualPlainPods(t *testing.T) {
	pod := func(name, cpu string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{NodeName: "n1",
			Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	withInit := pod("init", "2")
	withInit.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("6")}}}}
	withOverhead := pod("overhead", "2")
	withOverhead.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	var al allocation
	for _, p := range []*v1.Pod{pod("a", "2"), pod("b", "2000m"), withInit, pod("c", "2"), withOverhead, pod("d", "3"), pod("e", "2")} {
		if got, want := al.podAmounts(p), podAmounts(p); got != want {
			t.Errorf("%s: %+v, want %+v", p.Name, got, want)
		}
	}
}
