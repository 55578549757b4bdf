package profile

import (
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

// holdClaim is an unallocated claim (resourceVersion 1, as the assume
// cache wants one) of one device of memoDriver.
func holdClaim(name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name), ResourceVersion: "1"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: memoDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

// allocatedTo returns c with device gpu of pool allocated, at resource
// version rv.
func allocatedTo(c *resourceapi.ResourceClaim, pool, device, rv string) *resourceapi.ResourceClaim {
	c = c.DeepCopy()
	c.ResourceVersion = rv
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: memoDriver, Pool: pool, Device: device,
	}}}}
	return c
}

// holdFramework is the default profile's framework over claims, and its
// DRA manager's claims.
func holdFramework(t *testing.T, claims ...*resourceapi.ResourceClaim) (*Framework, fwk.ResourceClaimTracker) {
	t.Helper()
	var c Cluster
	for _, cl := range claims {
		c.Objects = append(c.Objects, cl)
	}
	f := defaultFramework(t, c)
	return f, f.fwk.SharedDRAManager().ResourceClaims()
}

// reserved puts c's allocation of device in flight, as DynamicResources'
// Reserve does.
func reserved(t *testing.T, tr fwk.ResourceClaimTracker, c *resourceapi.ResourceClaim, device string) {
	t.Helper()
	if err := tr.SignalClaimPendingAllocation(c.UID, allocatedTo(c, "p", device, c.ResourceVersion)); err != nil {
		t.Fatal(err)
	}
}

// deviceCounted reports whether the allocator counts device of pool p
// allocated.
func deviceCounted(t *testing.T, tr fwk.ResourceClaimTracker, device string) bool {
	t.Helper()
	got, err := tr.ListAllAllocatedDevices()
	if err != nil {
		t.Fatal(err)
	}
	return got.Has(structured.MakeDeviceID(memoDriver, "p", device))
}

// TestSettleHeldClaim: a claim whose allocation is in flight when its
// pod's binding ends in doubt is held (HoldClaims), so that the
// Unreserve that follows leaves its device counted; a read of the claim
// settles it: allocated, the claim as read is assumed and the device
// stays counted, now as the claim's; not allocated, gone, or another
// claim under its name, the device is free again. A second settling
// does nothing.
func TestSettleHeldClaim(t *testing.T) {
	for _, tc := range []struct {
		name          string
		now           func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim
		wantCounted   bool
		wantAllocated bool // the claim, as the DRA manager has it
	}{
		{name: "allocated", now: func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
			return allocatedTo(c, "p", "gpu-0", "7")
		}, wantCounted: true, wantAllocated: true},
		{name: "not allocated", now: func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
			c = c.DeepCopy()
			c.ResourceVersion = "7"
			return c
		}},
		{name: "gone", now: func(*resourceapi.ResourceClaim) *resourceapi.ResourceClaim { return nil }},
		{name: "replaced", now: func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
			c = allocatedTo(c, "p", "gpu-1", "7")
			c.UID = "another"
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := holdClaim("ca")
			f, tr := holdFramework(t, c)
			reserved(t, tr, c, "gpu-0")
			if n := f.HoldClaims(pod("a", "n1", withResourceClaim("ca"))); n != 1 {
				t.Fatalf("HoldClaims held %d claims, want 1", n)
			}
			if tr.MaybeRemoveClaimPendingAllocation(c.UID, false) { // the binding's Unreserve
				t.Fatal("Unreserve released the allocation held")
			}
			if !deviceCounted(t, tr, "gpu-0") {
				t.Fatal("the device held is not counted allocated")
			}
			held := f.HeldClaims()
			if len(held) != 1 || held[0] != (HeldClaim{Namespace: "ns", Name: "ca", UID: c.UID}) {
				t.Fatalf("HeldClaims = %+v", held)
			}
			ok, freed := f.SettleHeldClaim(held[0], tc.now(c))
			if !ok {
				t.Fatal("SettleHeldClaim: not held")
			}
			if (freed != nil) == tc.wantCounted || (freed != nil && (freed.UID != c.UID || freed.Status.Allocation == nil)) {
				t.Errorf("freed %+v, want the claim with its allocation held iff its device is free", freed)
			}
			if got := deviceCounted(t, tr, "gpu-0"); got != tc.wantCounted {
				t.Errorf("device counted allocated: %v, want %v", got, tc.wantCounted)
			}
			if tr.GetPendingAllocation(c.UID) != nil {
				t.Error("the allocation is still in flight")
			}
			if got, err := tr.Get("ns", "ca"); err != nil || (got.Status.Allocation != nil) != tc.wantAllocated {
				t.Errorf("the DRA manager's claim: %+v, %v; want allocated %v", got, err, tc.wantAllocated)
			}
			if again, _ := f.SettleHeldClaim(held[0], nil); again || len(f.HeldClaims()) != 0 {
				t.Error("settled twice")
			}
		})
	}
}

// TestHoldClaimsOnlyInFlight: a claim with no allocation in flight (an
// allocated one, say, or one whose PreBind wrote it and cleaned up) is
// not held.
func TestHoldClaimsOnlyInFlight(t *testing.T) {
	f, _ := holdFramework(t, holdClaim("ca"), allocatedTo(holdClaim("cb"), "p", "gpu-1", "1"))
	p := pod("a", "n1", func(p *v1.Pod) {
		ca, cb := "ca", "cb"
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "x", ResourceClaimName: &ca}, {Name: "y", ResourceClaimName: &cb}}
	})
	if n := f.HoldClaims(p); n != 0 || len(f.HeldClaims()) != 0 {
		t.Errorf("held %d claims (%+v), want none", n, f.HeldClaims())
	}
}

// TestHeldClaimsRaceFree runs holds (each after its claim's Reserve,
// and followed by its Unreserve, as a binding in doubt does), listings
// and settlings of claims together, under -race; two pods share each
// claim. Once a last round has settled what is left, nothing is in
// flight.
func TestHeldClaimsRaceFree(t *testing.T) {
	const n = 8
	var claims []*resourceapi.ResourceClaim
	for i := range n {
		claims = append(claims, holdClaim(fmt.Sprintf("c%d", i)))
	}
	f, tr := holdFramework(t, claims...)
	var wg sync.WaitGroup
	for i, c := range claims {
		for j := range 2 {
			wg.Go(func() {
				if err := tr.SignalClaimPendingAllocation(c.UID, allocatedTo(c, "p", fmt.Sprintf("gpu-%d", i), "1")); err != nil {
					t.Error(err)
				}
				f.HoldClaims(pod(fmt.Sprintf("p%d-%d", i, j), "n1", withResourceClaim(c.Name)))
				tr.MaybeRemoveClaimPendingAllocation(c.UID, false)
			})
		}
		wg.Go(func() {
			for _, h := range f.HeldClaims() {
				f.SettleHeldClaim(h, nil)
			}
		})
	}
	wg.Wait()
	for _, h := range f.HeldClaims() {
		f.SettleHeldClaim(h, nil)
	}
	for _, c := range claims {
		if tr.GetPendingAllocation(c.UID) != nil {
			t.Errorf("%s still in flight", c.Name)
		}
	}
}
