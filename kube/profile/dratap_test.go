package profile

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

type countingClaims struct {
	fwk.ResourceClaimTracker
	gathers int
}

func (c *countingClaims) GatherAllocatedState() (*structured.AllocatedState, error) {
	c.gathers++
	return &structured.AllocatedState{}, nil
}

type oneSlice struct{ sl *resourceapi.ResourceSlice }

func (o oneSlice) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return []*resourceapi.ResourceSlice{o.sl}, nil
}

type fakeDRA struct {
	fwk.SharedDRAManager
	claims *countingClaims
	slice  *resourceapi.ResourceSlice
}

func (f fakeDRA) ResourceClaims() fwk.ResourceClaimTracker { return f.claims }
func (f fakeDRA) ResourceSlices() fwk.ResourceSliceLister  { return oneSlice{f.slice} }

// TestDRATapKeepsOnlyWhileArmed: between arm and take the tap keeps the
// last allocated state gathered and slices listed (and passes each call
// through once); disarmed it keeps nothing, and a nil tap is inert.
func TestDRATapKeepsOnlyWhileArmed(t *testing.T) {
	inner := fakeDRA{claims: &countingClaims{}, slice: &resourceapi.ResourceSlice{}}
	tap := newDRATap(inner, nil, nil)
	tap.ResourceClaims().GatherAllocatedState()
	if l, s, _ := tap.take(); l != nil || s != nil {
		t.Fatal("kept a state gathered while disarmed")
	}
	tap.arm()
	want, _ := tap.ResourceClaims().GatherAllocatedState()
	tap.ResourceSlices().ListWithDeviceTaintRules()
	l, s, _ := tap.take()
	if s != want || len(l) != 1 || l[0] != inner.slice {
		t.Errorf("took %v, %v; want the state and the slice read while armed", l, s)
	}
	if l, s, _ := tap.take(); l != nil || s != nil {
		t.Error("a second take returned them again")
	}
	if inner.claims.gathers != 2 {
		t.Errorf("%d gathers reached the manager, want 2", inner.claims.gathers)
	}
	var none *draTap
	none.arm()
	if l, s, _ := none.take(); l != nil || s != nil {
		t.Error("a nil tap returned something")
	}
}
