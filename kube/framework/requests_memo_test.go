package framework

import (
	"runtime"
	"testing"
	"time"
	"weak"

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
// nor grow with every pod ever seen. Once a collection finds the pods
// unreachable, the memo's cleanups drop each of their entries; the test
// waits for those drops (forgotten), not on the clock.
func TestRequestsOfForgetsCollectedPods(t *testing.T) {
	const n = 100
	dropped := make(chan weak.Pointer[v1.Pod], n)
	hook := func(k weak.Pointer[v1.Pod]) { dropped <- k }
	forgotten.Store(&hook)
	defer forgotten.Store(nil)
	base := memoSize()
	ours := memoize(n)
	if got := memoSize(); got != base+n {
		t.Fatalf("the memo holds %d pods after %d new ones, %d before", got, n, base)
	}
	runtime.GC()                        // a whole cycle: the pods, unreachable, are collected
	watchdog := time.After(time.Minute) // fails a memo that keeps them; not waited for otherwise
	for len(ours) > 0 {
		select {
		case k := <-dropped:
			delete(ours, k)
		case <-watchdog:
			t.Fatalf("%d of %d collected pods still in the memo (%d entries, %d before)", len(ours), n, memoSize(), base)
		}
	}
	if got := memoSize(); got > base {
		t.Fatalf("the memo holds %d pods, %d before: collected pods stay", got, base)
	}
}

// memoize asks RequestsOf for n new pods and returns weak pointers to
// them, the memo's keys: nothing else keeps the pods alive.
func memoize(n int) map[weak.Pointer[v1.Pod]]bool {
	keys := map[weak.Pointer[v1.Pod]]bool{}
	for i := range n {
		p := memoPod("gone-" + string(rune('a'+i%26)))
		_, _ = RequestsOf(p)
		keys[weak.Make(p)] = true
	}
	return keys
}
