package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/framework"
)

// TestCacheCountsPodsWithRequiredAntiAffinity: the snapshot says no node
// holds a pod with required anti-affinity only when none is cached, on a
// known node or not, through adds, removals and node deletions. (Assumed
// pods go through the same placeLocked and removeLocked.)
func TestCacheCountsPodsWithRequiredAntiAffinity(t *testing.T) {
	c := NewCache()
	may := func() bool {
		var got bool
		c.View(func(s framework.Snapshot) { got = s.MayHavePodsWithRequiredAntiAffinity() })
		return got
	}
	anti := func(name, node string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PodSpec{NodeName: node}}
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, TopologyKey: "kubernetes.io/hostname",
		}}}}
		return p
	}
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}, Spec: v1.PodSpec{NodeName: "n"}}
	c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"empty", func() {}, false},
		{"a pod without terms", func() { mustAdd(t, c, plain) }, false},
		{"a pod with anti-affinity", func() { mustAdd(t, c, anti("a", "n")) }, true},
		{"the same pod updated", func() { mustAdd(t, c, anti("a", "n")) }, true},
		{"its node deleted: orphaned, still counted", func() { c.RemoveNode("n") }, true},
		{"the orphan removed", func() { c.RemovePod(framework.Key(anti("a", "n"))) }, false},
		{"a pod on a node not seen yet", func() { mustAdd(t, c, anti("b", "later")) }, true},
		{"the node arrives", func() { c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "later"}}) }, true},
		{"the pod removed from it", func() { c.RemovePod(framework.Key(anti("b", "later"))) }, false},
	}
	for _, s := range steps {
		s.do()
		if got := may(); got != s.want {
			t.Fatalf("after %s: MayHavePodsWithRequiredAntiAffinity = %v, want %v", s.name, got, s.want)
		}
	}
}

func mustAdd(t *testing.T, c *Cache, p *v1.Pod) {
	t.Helper()
	if err := c.AddPod(p); err != nil {
		t.Fatal(err)
	}
}
