package sim

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq/kube/gpu"
)

// stepDRA is a DRA manager whose allocated state and slice list a test
// sets between calls: GatherAllocatedState returns state, or fails if
// gatherErr; ListWithDeviceTaintRules returns slices, or fails if
// listErr.
type stepDRA struct {
	fwk.SharedDRAManager
	state     *structured.AllocatedState
	gatherErr bool
	slices    []*resourceapi.ResourceSlice
	listErr   bool
}

func (s *stepDRA) ResourceClaims() fwk.ResourceClaimTracker { return stepClaims{s: s} }
func (s *stepDRA) ResourceSlices() fwk.ResourceSliceLister  { return stepSlices{s: s} }

type stepClaims struct {
	fwk.ResourceClaimTracker
	s *stepDRA
}

func (c stepClaims) GatherAllocatedState() (*structured.AllocatedState, error) {
	if c.s.gatherErr {
		return nil, errors.New("concurrent modification")
	}
	return c.s.state, nil
}

type stepSlices struct {
	fwk.ResourceSliceLister
	s *stepDRA
}

func (l stepSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	if l.s.listErr {
		return nil, errors.New("listing failed")
	}
	return l.s.slices, nil
}

// usedState is an allocated state in which node's device gpu-i has
// consumed milli thousandths, for each i: milli given.
func usedState(node string, used map[int]int64) *structured.AllocatedState {
	st := &structured.AllocatedState{AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	for i, milli := range used {
		q := resource.NewQuantity(milli, resource.DecimalSI)
		id := structured.MakeDeviceID(traceGPUDriver, node, "gpu-"+strconv.Itoa(i))
		st.AggregatedCapacity[id] = structured.ConsumedCapacity{traceGPUCapacity: q}
	}
	return st
}

// deviceNames lists the names of a slice's devices in its order.
func deviceNames(sl *resourceapi.ResourceSlice) []string {
	var out []string
	for _, d := range sl.Spec.Devices {
		out = append(out, d.Name)
	}
	return out
}

// TestFullestFirstReadsOnlyTheStateJustGathered: the fullest-first lister
// reads the allocated state gathered just before it, and never one that
// an earlier gather left behind: after a list that failed, or after a
// gather that failed, the next list orders the devices by the state as it
// is now (here: nothing used, so the published order), not by the state
// of before (gpu-1 used, so gpu-1 first).
func TestFullestFirstReadsOnlyTheStateJustGathered(t *testing.T) {
	sl := gpuSlice("n1", "V100", 2)
	before := usedState("n1", map[int]int64{1: 700})
	now := usedState("n1", nil)
	for _, tc := range []struct {
		name string
		// steps run on the manager m, over the underlying one s,
		// before the list checked; they end with s's state as now.
		steps func(m fwk.SharedDRAManager, s *stepDRA)
	}{
		{"a list that failed after its gather", func(m fwk.SharedDRAManager, s *stepDRA) {
			s.state = before
			if _, err := m.ResourceClaims().GatherAllocatedState(); err != nil {
				t.Fatal(err)
			}
			s.listErr = true
			if _, err := m.ResourceSlices().ListWithDeviceTaintRules(); err == nil {
				t.Fatal("the list did not fail")
			}
			s.listErr, s.state = false, now
		}},
		{"a gather that failed after one no list read", func(m fwk.SharedDRAManager, s *stepDRA) {
			s.state = before
			if _, err := m.ResourceClaims().GatherAllocatedState(); err != nil {
				t.Fatal(err)
			}
			s.gatherErr = true
			if _, err := m.ResourceClaims().GatherAllocatedState(); err == nil {
				t.Fatal("the gather did not fail")
			}
			s.gatherErr, s.state = false, now
		}},
		{"a gather and its list, then a list alone", func(m fwk.SharedDRAManager, s *stepDRA) {
			s.state = before
			if _, err := m.ResourceClaims().GatherAllocatedState(); err != nil {
				t.Fatal(err)
			}
			list, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				t.Fatal(err)
			}
			if got := deviceNames(list[0]); !slices.Equal(got, []string{"gpu-1", "gpu-0"}) {
				t.Fatalf("the list after its gather has the devices %v, want gpu-1 (700 used) first", got)
			}
			s.state = now
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stepDRA{slices: []*resourceapi.ResourceSlice{sl}}
			model := &gpuDRAModel{policy: gpu.BestFit, hasPolicy: true}
			m := newDRAFullestFirst(model)(s)
			tc.steps(m, s)
			list, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				t.Fatal(err)
			}
			if got := deviceNames(list[0]); !slices.Equal(got, []string{"gpu-0", "gpu-1"}) {
				t.Fatalf("devices listed %v: the order of a state gathered before, want gpu-0, gpu-1 (nothing used now)", got)
			}
		})
	}
}
