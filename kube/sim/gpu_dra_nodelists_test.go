package sim

import (
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestNodeListsChangeNoPlacement: replays of the differential cases
// (every policy) place the same pods on the same nodes and devices with
// lazy cycles (DynamicResources' allocator built per node, over the
// slices NodeSlice gives) and with every slice listed in every cycle;
// lazy cycles ran under every policy, on the kept state for all but
// Random's shares, and every slice NodeSlice gave from what was kept is
// in the order computed afresh then.
func TestNodeListsChangeNoPlacement(t *testing.T) {
	seeds := diffSeeds()
	var lazy, kept, checked int
	defer func() { draNodeListsSeen, draListCheck = nil, nil }()
	draNodeListsSeen = func(plain bool) {
		lazy++
		if !plain {
			kept++
		}
	}
	draListCheck = func(sl, got, fresh *resourceapi.ResourceSlice) {
		checked++
		if g, w := deviceNames(got), deviceNames(fresh); !slices.Equal(g, w) {
			t.Errorf("slice %s listed %v, afresh %v", sl.Name, g, w)
		}
	}
	diffEveryPolicy(t, seeds, "lazy cycles", func(t *testing.T, c diffCase, on bool) []draPlacement {
		defer func(was bool) { draNodeListsOn = was }(draNodeListsOn)
		draNodeListsOn = on
		return draProbePlacements(t, c)
	})
	if lazy == 0 || kept == 0 || checked == 0 {
		t.Errorf("%d lazy cycles, %d on the kept state, %d slices checked: want some of each", lazy, kept, checked)
	}
}
