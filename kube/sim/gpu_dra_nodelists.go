package sim

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/schedq/schedq/kube/profile"
)

var _ profile.DRANodeLister = (*draFullestFirst)(nil)

// draNodeListsOn turns on NodeLists; tests turn it off to compare with
// the cycles that list every slice.
var draNodeListsOn = true

// draNodeListsSeen, if set (by tests), is told of each NodeLists that
// said yes, with whether it lists the published order.
var draNodeListsSeen func(plain bool)

// PublishedSlices is the tracker's list, which ListWithDeviceTaintRules
// orders (profile.DRANodeLister). Its length bounds what is kept by
// slice object in a lazy cycle.
func (d *draFullestFirst) PublishedSlices() ([]*resourceapi.ResourceSlice, error) {
	list, err := d.SharedDRAManager.ResourceSlices().ListWithDeviceTaintRules()
	d.published = len(list)
	return list, err
}

// NodeLists reports whether NodeSlice gives, slice by slice, what
// ListWithDeviceTaintRules would list in state for the pod noted, as a
// function of the published slice, its pool's use in state, its node's
// NodeInfo and the pod's request alone (profile.DRANodeLister): without
// a policy (the published order), and on the kept state under every
// policy but Random for a share (whose draw is the pod's own: two pods
// of one request list a node apart). If so it takes state, as the list
// would have, and reads the pod's request once for the cycle's
// NodeSlices (listContext). O(the pod's containers).
func (d *draFullestFirst) NodeLists(state *structured.AllocatedState) bool {
	if !draNodeListsOn {
		return false
	}
	if !d.m.hasPolicy {
		d.gathered, d.lazyState, d.lazyPlain = nil, state, true
		if draNodeListsSeen != nil {
			draNodeListsSeen(true)
		}
		return true
	}
	if !draListKeptOn || !d.kept.serves(state) {
		return false
	}
	lc := d.listContext()
	if lc.rnd {
		return false
	}
	d.bound(d.published)
	d.gathered, d.lazyState, d.lazyPlain, d.lazyCtx = nil, state, false, lc
	if draNodeListsSeen != nil {
		draNodeListsSeen(false)
	}
	return true
}

// NodeSlice is sl as ListWithDeviceTaintRules would list it in state
// for the pod noted at the last NodeLists that said yes (listKept's
// keptSlice). sl itself for a state other than that one's, which no
// lazy cycle asks (profile.DRANodeLister's contract). O(1) while what
// is kept of sl holds.
func (d *draFullestFirst) NodeSlice(sl *resourceapi.ResourceSlice, state *structured.AllocatedState) *resourceapi.ResourceSlice {
	if d.lazyPlain || state != d.lazyState {
		return sl
	}
	return d.keptSlice(sl, state, &d.lazyCtx)
}
