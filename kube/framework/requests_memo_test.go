package framework

import (
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func memoPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("1Gi"),
			"example.com/gpu": resource.MustParse("2")}}}}}}
}

// TestRequestsOfComputesOncePerPod: after the first call for a pod
// object, RequestsOf gives PodRequests' answer without computing it
// again: for a pod without extended resources it allocates nothing.
func TestRequestsOfComputesOncePerPod(t *testing.T) {
	p := memoPod("p")
	want, _ := PodRequests(p)
	got, err := RequestsOf(p)
	if err != nil || got.MilliCPU != want.MilliCPU || got.Memory != want.Memory || got.Pods != 1 || got.Scalar["example.com/gpu"] != 2 {
		t.Fatalf("RequestsOf = %+v, %v; PodRequests = %+v", got, err, want)
	}
	got.Scalar["example.com/gpu"] = 99 // the caller's own copy
	if again, _ := RequestsOf(p); again.Scalar["example.com/gpu"] != 2 {
		t.Fatalf("a caller's write reached the memo: %+v", again)
	}
	plain := memoPod("plain")
	delete(plain.Spec.Containers[0].Resources.Requests, "example.com/gpu")
	if a := testing.AllocsPerRun(100, func() { _, _ = RequestsOf(plain) }); a != 0 {
		t.Fatalf("RequestsOf of a known pod allocates %v times per call: it computes the requests again", a)
	}
	runtime.KeepAlive(p)
	runtime.KeepAlive(plain)
}

// TestRequestsOfForgetsCollectedPods: the memo does not keep pods alive
// nor grow with every pod ever seen.
func TestRequestsOfForgetsCollectedPods(t *testing.T) {
	base := memoSize()
	for i := range 100 {
		_, _ = RequestsOf(memoPod("gone-" + string(rune('a'+i%26))))
	}
	deadline := time.Now().Add(10 * time.Second)
	for memoSize() > base {
		if time.Now().After(deadline) {
			t.Fatalf("the memo holds %d pods, %d before: collected pods stay", memoSize(), base)
		}
		runtime.GC()
		runtime.Gosched()
	}
}
