package app

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

const testDriver = "gpu.example.com"

// draRepeats is how many times TestUpstreamDRAWaitsForWhatIsMissing runs
// each case.
const draRepeats = 10

// draClass is a DeviceClass that selects every device of testDriver.
func draClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: testDriver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + testDriver + `"`},
		}}},
	}
}

// draSlice is node's ResourceSlice of testDriver, with one device.
func draSlice(node string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + testDriver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   testDriver,
			NodeName: &node,
			Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices:  []resourceapi.Device{{Name: "gpu-0"}},
		},
	}
}

// draClaim is a ResourceClaim asking for one device of class, with the
// fields the API server defaults set.
func draClaim(name, class string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		// A resourceVersion, as the API server gives: the DRA manager's
		// assume cache refuses a claim without one.
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

// claimingPod is a pending pod of ours that uses the ResourceClaim claim.
func claimingPod(name, claim string) *v1.Pod {
	p := uidPod(name)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	return p
}

// failedScheduling returns the notes of the FailedScheduling events about
// the pod name.
func failedScheduling(t *testing.T, client *fake.Clientset, name string) []string {
	t.Helper()
	evs, err := client.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range evs.Items {
		if e.Reason == "FailedScheduling" && e.Regarding.Name == name {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// TestUpstreamDRAWaitsForWhatIsMissing: a pod whose ResourceClaim does
// not exist is gated by DynamicResources' PreEnqueue, as in
// kube-scheduler: no attempt, so no PodScheduled condition and no
// FailedScheduling event. A pod whose claim names a DeviceClass that does
// not exist is tried and waits with DynamicResources' reason in its
// PodScheduled condition and its FailedScheduling event. Either way, when
// the missing object is created (with n2's slice), its event wakes the
// pod, long before the queue's 5-minute flush, and it is bound to n2, the
// node with a device.
//
// What went wrong was an order between goroutines (an informer's handlers
// each run on one of their own; the pod's and the claim's informers
// too), so each case runs draRepeats times: before the fixes about half
// the runs of each failed.
func TestUpstreamDRAWaitsForWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object // there from the start
		missing runtime.Object   // created later
		reason  string           // "": gated, not tried
	}{
		{"claim", []runtime.Object{draClass()}, draClaim("gpu-claim", testDriver), ""},
		{"device class", []runtime.Object{draClaim("gpu-claim", testDriver)}, draClass(), "0/2 nodes are available: request gpu: device class " + testDriver + " does not exist."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range draRepeats {
				synctest.Test(t, func(t *testing.T) {
					objs := append([]runtime.Object{testNode("n1", "2"), testNode("n2", "2"), claimingPod("dra", "gpu-claim")}, tc.objs...)
					client := fakeCluster(objs...)
					runUpstream(t, client, upstreamOptions(t))
					p, err := client.CoreV1().Pods("default").Get(context.Background(), "dra", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if p.Spec.NodeName != "" {
						t.Fatalf("dra is bound to %s while its %s is missing", p.Spec.NodeName, tc.name)
					}
					c, notes := scheduledCondition(p), failedScheduling(t, client, "dra")
					switch {
					case tc.reason == "" && (c != nil || len(notes) > 0):
						t.Fatalf("a gated pod was reported: PodScheduled %+v, events %q", c, notes)
					case tc.reason != "" && (c == nil || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable || !strings.HasPrefix(c.Message, tc.reason)):
						t.Fatalf("PodScheduled of dra: %+v, want Unschedulable %q", c, tc.reason)
					case tc.reason != "" && (len(notes) != 1 || !strings.HasPrefix(notes[0], tc.reason)):
						t.Fatalf("FailedScheduling events %q, want one %q", notes, tc.reason)
					}
					if _, err := client.ResourceV1().ResourceSlices().Create(context.Background(), draSlice("n2"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					if err := client.Tracker().Add(tc.missing); err != nil {
						t.Fatal(err)
					}
					time.Sleep(time.Minute)
					synctest.Wait()
					if n := nodeOf(t, client, "dra"); n != "n2" {
						t.Fatalf("dra is on %q a minute after its %s came, want n2", n, tc.name)
					}
				})
			}
		})
	}
}
