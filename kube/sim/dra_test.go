package sim

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestDeviceClaimsAllocateWithinTheDevices runs DeviceClaims with the
// invariants checked after every step (no device allocated twice, none
// that no slice has). The training pods take the 8 GPUs; 4 waiting pods
// are bound within a second of the third node's slice (60s), the other 4
// within a second of the training pods' end, when the simulator
// deallocates their claims. At the end every allocated claim is reserved
// for one bound pod, on the node whose slice has its devices, and the
// claims made for the ended pods are gone.
func TestDeviceClaimsAllocateWithinTheDevices(t *testing.T) {
	s, err := newSim(load(t, "DeviceClaims"), Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := s.loop(); err != nil {
		t.Fatal(err)
	}
	trainEnd := epoch.Add(2 * time.Minute)
	var atSlice, atEnd int
	for _, st := range s.order {
		p := s.cl.pods[st.key]
		group := strings.TrimRight(st.key.Name, "-0123456789")
		switch {
		case st.bound.IsZero():
			t.Errorf("%s: never bound (%s)", st.key.Name, st.lastMessage)
		case group == "train":
			if st.bound.After(epoch.Add(time.Second)) {
				t.Errorf("%s: bound at %v, want at once", st.key.Name, st.bound.Sub(epoch))
			}
		case st.bound.Before(epoch.Add(time.Minute)):
			t.Errorf("%s: bound at %v, while the 8 GPUs were taken", st.key.Name, st.bound.Sub(epoch))
		case st.bound.Sub(epoch.Add(time.Minute)) < time.Second:
			atSlice++
		case !st.bound.Before(trainEnd) && st.bound.Sub(trainEnd) < time.Second:
			atEnd++
		default:
			t.Errorf("%s: bound at %v, want within 1s of 1m or 2m", st.key.Name, st.bound.Sub(epoch))
		}
		if group == "train" && p != nil {
			t.Errorf("%s: still running after its 2m lifetime", p.Name)
		}
	}
	if atSlice != 4 || atEnd != 4 {
		t.Errorf("%d pods bound after the third node's slice, %d after the training pods ended; want 4 and 4", atSlice, atEnd)
	}
	checkClaimsMatchPods(t, s)
}

// checkClaimsMatchPods: every allocated claim is reserved for exactly one
// pod that exists, is bound, and is on the node of its devices' slice;
// every bound pod's claims are allocated and reserved for it; no claim
// made for a pod outlives it.
func checkClaimsMatchPods(t *testing.T, s *sim) {
	t.Helper()
	sliceNode := map[string]string{} // pool: node
	pods := map[string]*v1.Pod{}     // uid: pod
	for _, p := range s.cl.pods {
		pods[string(p.UID)] = p
	}
	var claims []*resourceapi.ResourceClaim
	for _, o := range s.obj.byKey {
		switch x := o.(type) {
		case *resourceapi.ResourceSlice:
			sliceNode[x.Spec.Pool.Name] = *x.Spec.NodeName
		case *resourceapi.ResourceClaim:
			claims = append(claims, x)
		}
	}
	reserved := map[string]int{} // pod uid: claims reserved for it
	for _, c := range claims {
		if ref := metav1.GetControllerOf(c); ref != nil && pods[string(ref.UID)] == nil {
			t.Errorf("claim %s outlives its pod %s", c.Name, ref.Name)
		}
		if c.Status.Allocation == nil {
			if len(c.Status.ReservedFor) > 0 {
				t.Errorf("claim %s: reserved but not allocated", c.Name)
			}
			continue
		}
		if len(c.Status.ReservedFor) != 1 {
			t.Errorf("claim %s: allocated, reserved for %d pods", c.Name, len(c.Status.ReservedFor))
			continue
		}
		p := pods[string(c.Status.ReservedFor[0].UID)]
		if p == nil || p.Spec.NodeName == "" {
			t.Errorf("claim %s: reserved for %s, which is not a bound pod", c.Name, c.Status.ReservedFor[0].Name)
			continue
		}
		reserved[string(p.UID)]++
		for _, r := range c.Status.Allocation.Devices.Results {
			if sliceNode[r.Pool] != p.Spec.NodeName {
				t.Errorf("claim %s: device %s/%s of node %s, its pod %s is on %s", c.Name, r.Pool, r.Device, sliceNode[r.Pool], p.Name, p.Spec.NodeName)
			}
		}
	}
	for _, p := range s.cl.pods {
		if n := len(ClaimNames(p)); p.Spec.NodeName != "" && reserved[string(p.UID)] != n {
			t.Errorf("%s: %d of its %d claims reserved for it", p.Name, reserved[string(p.UID)], n)
		}
	}
}

// TestCheckDevicesCatches: the invariant finds a device allocated to two
// claims, and one that no slice has.
func TestCheckDevicesCatches(t *testing.T) {
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n-gpus"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "n"}, Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}
	slice.Spec.Devices[1].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"milli": {Value: resource.MustParse("1000")}}
	claim := func(name, device string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: "gpu.example.com", Pool: "n", Device: device}}}}}}
	}
	share := func(name string, milli int64) *resourceapi.ResourceClaim {
		c := claim(name, "gpu-1")
		r := &c.Status.Allocation.Devices.Results[0]
		r.ShareID = ptrTo(types.UID(name))
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"milli": *resource.NewQuantity(milli, resource.DecimalSI)}
		return c
	}
	for _, tc := range []struct {
		name   string
		claims []*resourceapi.ResourceClaim
		want   string
	}{
		{"apart", []*resourceapi.ResourceClaim{claim("a", "gpu-0"), claim("b", "gpu-1")}, ""},
		{"twice", []*resourceapi.ResourceClaim{claim("a", "gpu-0"), claim("b", "gpu-0")}, "allocated to two claims"},
		{"missing", []*resourceapi.ResourceClaim{claim("a", "gpu-7")}, "which no ResourceSlice has"},
		{"shares within the capacity", []*resourceapi.ResourceClaim{share("a", 600), share("b", 400)}, ""},
		{"shares beyond the capacity", []*resourceapi.ResourceClaim{share("a", 600), share("b", 500)}, "consume 1100 of milli, more than its 1000"},
	} {
		s := &sim{}
		s.obj.byKey = map[string]runtime.Object{objectKey(slice): slice}
		for _, c := range tc.claims {
			s.obj.byKey[objectKey(c)] = c
		}
		err := s.checkDevices()
		if got := ""; err != nil {
			got = err.Error()
			if tc.want == "" || !strings.Contains(got, tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
		}
	}
}

// TestClaimTemplateCreatedLater: a pod whose ResourceClaimTemplate does
// not exist yet waits, without an attempt (DynamicResources' PreEnqueue);
// when the template is created the simulator makes its claim, the pod's
// status names it, and the pod is bound at once.
func TestClaimTemplateCreatedLater(t *testing.T) {
	sc, err := Parse([]byte(`
name: late
duration: 2m
scheduler: {plugins: upstream}
objects:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
  - apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: n-gpus}
    spec: {nodeName: n-0, driver: gpu.example.com, pool: {name: n-0, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}
nodes: [{name: n, count: 1, capacity: {cpu: "4", memory: 8Gi}}]
pods:
  - {name: p, count: 1, requests: {cpu: "1"}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
events:
  - at: 30s
    createObjects:
      - apiVersion: resource.k8s.io/v1
        kind: ResourceClaimTemplate
        metadata: {name: one-gpu}
        spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := runSim(t, sc)
	st := s.order[0]
	switch {
	case st.bound.IsZero():
		t.Fatalf("never bound (%s)", st.lastMessage)
	case st.bound.Before(epoch.Add(30*time.Second)) || st.bound.After(epoch.Add(31*time.Second)):
		t.Errorf("bound at %v, want within 1s of the template's creation at 30s", st.bound.Sub(epoch))
	case st.attempts != 1:
		t.Errorf("%d attempts, want 1 (gated until its claim exists)", st.attempts)
	}
	checkClaimsMatchPods(t, s)
}
