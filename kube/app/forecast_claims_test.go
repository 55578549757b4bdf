package app

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// boundMidList is a claim tracker in which the claim's PreBind ends
// between the forecast's List and its GetPendingAllocation: List gives
// the claim unallocated (its allocation then in flight), and by the time
// of the look-up the allocation has left the in-flight set for the
// tracker's assume cache, as DynamicResources' PreBind does it (assume
// first, then drop the in-flight entry).
type boundMidList struct {
	listed, assumed *resourceapi.ResourceClaim
}

func (b boundMidList) List() ([]*resourceapi.ResourceClaim, error) {
	return []*resourceapi.ResourceClaim{b.listed}, nil
}

func (b boundMidList) GetPendingAllocation(types.UID) *resourceapi.AllocationResult { return nil }

func (b boundMidList) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	return b.assumed, nil
}

// TestListClaimsSeesAClaimBoundDuringTheList: the pod's claim was listed
// unallocated and in flight, and its binding wrote it before the in-flight
// look-up. The copy must still show it allocated: the pod is on its node
// in the copy of the cache, so a free device there would be given twice.
func TestListClaimsSeesAClaimBoundDuringTheList(t *testing.T) {
	listed := draClaim("held", testDriver)
	assumed := listed.DeepCopy()
	assumed.ResourceVersion = "2"
	assumed.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: testDriver, Pool: "n1", Device: "gpu-0"}}}}
	got := listClaims(boundMidList{listed: listed, assumed: assumed})
	if len(got) != 1 {
		t.Fatalf("got %d claims, want 1", len(got))
	}
	if c := got[0].(*resourceapi.ResourceClaim); c.Status.Allocation == nil {
		t.Errorf("claim %s is unallocated in the copy, want its allocation: its pod is bound", c.Name)
	}
}
