package sim

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestOverCommitted: the checked runs' node check counts every pod bound
// to the node, terminating ones too, against each allocatable resource.
func TestOverCommitted(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	node.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods: resource.MustParse("3"), "example.com/gpu": resource.MustParse("1"),
	}
	pod := func(name, nodeName, cpu string, gpu bool, terminating bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: name}}
		p.Spec.NodeName = nodeName
		req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		if gpu {
			req["example.com/gpu"] = resource.MustParse("1")
		}
		p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []*v1.Pod
		want string // "" for no error
	}{
		{"fits", []*v1.Pod{pod("a", "n", "1", true, false), pod("b", "n", "1", false, false), pod("c", "m", "8", true, false)}, ""},
		{"cpu", []*v1.Pod{pod("a", "n", "1", false, false), pod("b", "n", "1500m", false, false)}, "node n over-committed: cpu (milli) 2500 requested of 2000"},
		{"terminating pods count", []*v1.Pod{pod("a", "n", "2", false, true), pod("b", "n", "1", false, false)}, "cpu (milli) 3000"},
		{"pod count", []*v1.Pod{pod("a", "n", "0", false, false), pod("b", "n", "0", false, false), pod("c", "n", "0", false, false), pod("d", "n", "0", false, false)}, "pods 4 requested of 3"},
		{"extended resource", []*v1.Pod{pod("a", "n", "0", true, false), pod("b", "n", "0", true, false)}, "example.com/gpu 2 requested of 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]*v1.Pod{}
			for _, p := range tc.pods {
				m[p.Name] = p
			}
			err := overCommitted(node, m)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckBindOnce: a checked run fails on a second binding of a pod
// whose binding is under way, or of a pod already bound.
func TestCheckBindOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		bind func(s *sim, p *v1.Pod)
		want string
	}{
		{"once", func(s *sim, p *v1.Pod) { binder{s}.Bind(context.Background(), p, "n-0", nil, func(error) {}) }, ""},
		{"twice in flight", func(s *sim, p *v1.Pod) {
			binder{s}.Bind(context.Background(), p, "n-0", nil, func(error) {})
			binder{s}.Bind(context.Background(), p, "n-1", nil, func(error) {})
		}, "bound to n-1 while its binding to n-0 is under way"},
		{"already bound", func(s *sim, p *v1.Pod) {
			b := *p
			b.Spec.NodeName = "n-0"
			s.cl.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &b
			binder{s}.Bind(context.Background(), p, "n-1", nil, func(error) {})
		}, "bound to n-1 while bound to n-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSim(parse(t, "name: x\nnodes: [{name: n, count: 2, capacity: {cpu: \"2\"}}]\npods: [{name: q, count: 1, arrival: {at: 1m}}]\n"), Options{CheckInvariants: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p", UID: "u"}}
			s.cl.pods[types.NamespacedName{Namespace: "d", Name: "p"}] = p
			tc.bind(s, p)
			if tc.want == "" && s.violation != nil || tc.want != "" && (s.violation == nil || !strings.Contains(s.violation.Error(), tc.want)) {
				t.Fatalf("violation %v, want %q", s.violation, tc.want)
			}
		})
	}
}
