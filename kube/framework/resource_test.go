package framework

import (
	"errors"
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const maxInt64 = math.MaxInt64

// TestConvertResourcesEdges converts amounts at and around the edges of
// int64, for cpu (milli-units) and for the others (units).
func TestConvertResourcesEdges(t *testing.T) {
	for _, tc := range []struct {
		name     v1.ResourceName
		quantity string
		want     int64
		problem  string // "" if the amount fits
	}{
		{"cpu", "9223372036854775807m", maxInt64, ""},
		{"cpu", "9223372036854775806m", maxInt64 - 1, ""},
		{"cpu", "9223372036854775808m", maxInt64, "overflows int64 milli-units"},
		{"cpu", "9223372036854775", 9223372036854775000, ""},
		{"cpu", "9223372036854776", maxInt64, "overflows int64 milli-units"},
		{"cpu", "9223372036854775807", maxInt64, "overflows int64 milli-units"},
		{"cpu", "1e18", maxInt64, "overflows int64 milli-units"},
		{"cpu", "100P", maxInt64, "overflows int64 milli-units"},
		{"cpu", "1e100", maxInt64, "overflows int64 milli-units"},
		{"cpu", "0.5m", 1, ""}, // rounds up, as MilliValue does
		{"cpu", "-1", 0, "is negative"},
		{"memory", "9223372036854775807", maxInt64, ""},
		{"memory", "9223372036854775806", maxInt64 - 1, ""},
		{"memory", "9223372036854775806.5", maxInt64, ""}, // rounds up to the edge
		{"memory", "9223372036854775807.5", maxInt64, "overflows int64"},
		{"memory", "9223372036854775808", maxInt64, "overflows int64"},
		{"memory", "8E", 8e18, ""},
		// The parser itself caps binary-suffixed amounts at MaxInt64.
		{"memory", "8Ei", maxInt64, ""},
		{"cpu", "8Ei", maxInt64, "overflows int64 milli-units"},
		{"memory", "10E", maxInt64, "overflows int64"},
		{"memory", "-1Gi", 0, "is negative"},
		{"ephemeral-storage", "1e19", maxInt64, "overflows int64"},
		{"pods", "9223372036854775808", maxInt64, "overflows int64"},
		{"example.com/gpu", "9223372036854775807", maxInt64, ""},
		{"example.com/gpu", "1e19", maxInt64, "overflows int64"},
	} {
		t.Run(string(tc.name)+"="+tc.quantity, func(t *testing.T) {
			r, err := ConvertResources(v1.ResourceList{tc.name: resource.MustParse(tc.quantity)})
			if got := amount(r, tc.name); got != tc.want {
				t.Errorf("amount %d, want %d", got, tc.want)
			}
			var qe *QuantityError
			switch {
			case tc.problem == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.problem != "" && !errors.As(err, &qe):
				t.Errorf("error %v, want a QuantityError", err)
			case tc.problem != "" && (qe.Problem != tc.problem || qe.Name != tc.name):
				t.Errorf("error %v, want %s %s", err, tc.name, tc.problem)
			}
		})
	}
}

func amount(r Resource, name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.Pods
	}
	return r.Scalar[name]
}

func TestConvertResourcesReportsEveryProblemInNameOrder(t *testing.T) {
	_, err := ConvertResources(v1.ResourceList{
		"memory": resource.MustParse("10E"), "cpu": resource.MustParse("1e18"), "example.com/gpu": resource.MustParse("1"),
	})
	want := "cpu=1e18: overflows int64 milli-units; memory=10E: overflows int64"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func podRequesting(name string, rls ...v1.ResourceList) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	for _, rl := range rls {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: rl}})
	}
	return p
}

func TestPodInfoInvalidRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		message string // "" if valid
	}{
		{"cpu 1e18", podRequesting("a", v1.ResourceList{"cpu": resource.MustParse("1e18")}),
			"invalid resource request cpu=1e18: overflows int64 milli-units"},
		{"cpu 100P", podRequesting("a", v1.ResourceList{"cpu": resource.MustParse("100P")}),
			"invalid resource request cpu=100P: overflows int64 milli-units"},
		{"cpu max int64 cores", podRequesting("a", v1.ResourceList{"cpu": resource.MustParse("9223372036854775807")}),
			"invalid resource request cpu=9223372036854775807: overflows int64 milli-units"},
		{"memory 10E", podRequesting("a", v1.ResourceList{"memory": resource.MustParse("10E")}),
			"invalid resource request memory=10E: overflows int64"},
		{"two containers that overflow only together", podRequesting("a",
			v1.ResourceList{"memory": resource.MustParse("5E")}, v1.ResourceList{"memory": resource.MustParse("5E")}),
			"invalid resource request memory=10E: overflows int64"},
		{"max int64 memory", podRequesting("a", v1.ResourceList{"memory": resource.MustParse("9223372036854775807")}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pi, err := NewPodInfo(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.message == "" && pi.InvalidRequests != nil:
				t.Fatalf("InvalidRequests %v", pi.InvalidRequests)
			case tc.message != "" && (pi.InvalidRequests == nil || pi.InvalidRequests.Error() != tc.message):
				t.Fatalf("InvalidRequests %v, want %q", pi.InvalidRequests, tc.message)
			}
			if pi.Requests.MilliCPU < 0 || pi.Requests.Memory < 0 {
				t.Fatalf("negative amounts: %+v", pi.Requests)
			}
		})
	}
}

// TestNodeInfoSaturates: sums of large requests stop at MaxInt64 instead
// of wrapping negative, and removing a pod from a saturated sum gives the
// exact sum of the pods left.
func TestNodeInfoSaturates(t *testing.T) {
	n := NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		"cpu": resource.MustParse("4"), "memory": resource.MustParse("10E"),
	}}})
	if n.Allocatable.Memory != maxInt64 || n.AllocatableInvalid == nil {
		t.Fatalf("allocatable memory %d (%v), want clamped to MaxInt64 and reported", n.Allocatable.Memory, n.AllocatableInvalid)
	}
	big := func(name string) *PodInfo {
		pi, err := NewPodInfo(podRequesting(name, v1.ResourceList{"memory": resource.MustParse("5E"), "cpu": resource.MustParse("5e15")}))
		if err != nil || pi.InvalidRequests != nil {
			t.Fatal(err, pi.InvalidRequests)
		}
		return pi
	}
	a, b := big("a"), big("b")
	n.AddPod(a)
	n.AddPod(b)
	if n.Requested.Memory != maxInt64 || n.Requested.MilliCPU != maxInt64 {
		t.Fatalf("requested %+v: want memory and cpu saturated", n.Requested)
	}
	if !n.RemovePod(Key(a.Pod)) {
		t.Fatal("RemovePod")
	}
	if n.Requested.Memory != 5e18 || n.Requested.MilliCPU != 5e18 || n.Requested.Pods != 1 {
		t.Fatalf("after removing a: requested %+v; want b's alone", n.Requested)
	}
	n.RemovePod(Key(b.Pod))
	if n.Requested.Memory != 0 || n.Requested.MilliCPU != 0 || n.Requested.Pods != 0 {
		t.Fatalf("empty node: requested %+v", n.Requested)
	}
}

// TestNodeInfoAccountsAnInvalidPodAsFull: a pod bound by someone else
// whose request overflows fills the node instead of freeing it.
func TestNodeInfoAccountsAnInvalidPodAsFull(t *testing.T) {
	n := NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{"cpu": resource.MustParse("1")}}})
	bad, _ := NewPodInfo(podRequesting("bad", v1.ResourceList{"cpu": resource.MustParse("9223372036854775807")}))
	n.AddPod(bad)
	if n.Requested.MilliCPU != maxInt64 {
		t.Fatalf("requested cpu %d, want MaxInt64", n.Requested.MilliCPU)
	}
	small, _ := NewPodInfo(podRequesting("small", v1.ResourceList{"cpu": resource.MustParse("1")}))
	n.AddPod(small)
	if n.Requested.MilliCPU != maxInt64 {
		t.Fatalf("requested cpu %d after another pod, want MaxInt64", n.Requested.MilliCPU)
	}
	n.RemovePod(Key(bad.Pod))
	if n.Requested.MilliCPU != 1000 {
		t.Fatalf("requested cpu %d after the invalid pod left, want 1000", n.Requested.MilliCPU)
	}
}
