package profile

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	dra "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// poolCounts is a PoolVersioner whose counts the test sets: known says
// whether it knows them for state.
type poolCounts struct {
	state  *structured.AllocatedState
	counts map[dra.UniqueString]uint64
}

func (p *poolCounts) PoolVersion(state *structured.AllocatedState, pool dra.UniqueString) (uint64, bool) {
	if state != p.state {
		return 0, false
	}
	return p.counts[pool], true
}

// TestDRAMemoKeepsWhatASliceHoldsByPoolCount: the filter key of a node
// is the one read afresh from the state after each kind of change, the
// manager's count of the pool changed with it (a device allocated whole,
// a share and its capacity, a deallocation, a claim deleted: all changes
// of the state); a change on another pool, counted there, leaves the
// node's key as it was; without a count (the manager does not know the
// state) or with another state, the key is read afresh, and a key kept
// while the count stays the same is the state's as it was then.
func TestDRAMemoKeepsWhatASliceHoldsByPoolCount(t *testing.T) {
	nd, sl := gpuNode("a", "V100", 2)
	_, other := gpuNode("b", "V100", 2)
	ni := framework.NewNodeInfo()
	ni.SetNode(nd)
	newState := func() *structured.AllocatedState {
		return &structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
			AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	}
	dev := func(pool, name string) structured.DeviceID { return structured.MakeDeviceID(memoDriver, pool, name) }
	share := func(st *structured.AllocatedState, pool, name, uid string, milli int64, add bool) {
		id := dev(pool, name)
		u := types.UID(uid)
		sid := structured.MakeSharedDeviceID(id, &u)
		used := structured.NewDeviceConsumedCapacity(id, map[resourceapi.QualifiedName]resource.Quantity{"milli": *resource.NewQuantity(milli, resource.DecimalSI)})
		if add {
			st.AllocatedSharedDeviceIDs.Insert(sid)
			st.AggregatedCapacity.Insert(used)
		} else {
			st.AllocatedSharedDeviceIDs.Delete(sid)
			st.AggregatedCapacity.Remove(used)
		}
	}
	type change struct {
		pool    string // whose count moves; "" none
		write   func(st *structured.AllocatedState)
		unknown bool // the manager does not know the state's counts
		same    bool // the key stays the one before
	}
	for _, tc := range []struct {
		name  string
		steps []change
	}{
		{"a device allocated whole", []change{{pool: "a", write: func(st *structured.AllocatedState) { st.AllocatedDevices.Insert(dev("a", "gpu-1")) }}}},
		{"a share and its capacity", []change{{pool: "a", write: func(st *structured.AllocatedState) { share(st, "a", "gpu-0", "s1", 300, true) }},
			{pool: "a", write: func(st *structured.AllocatedState) { share(st, "a", "gpu-0", "s2", 200, true) }}}},
		{"a deallocation", []change{{pool: "a", write: func(st *structured.AllocatedState) { share(st, "a", "gpu-0", "s1", 300, true) }},
			{pool: "a", write: func(st *structured.AllocatedState) { share(st, "a", "gpu-0", "s1", 300, false) }}}},
		{"a claim deleted", []change{{pool: "a", write: func(st *structured.AllocatedState) { st.AllocatedDevices.Insert(dev("a", "gpu-0")) }},
			{pool: "a", write: func(st *structured.AllocatedState) { st.AllocatedDevices.Delete(dev("a", "gpu-0")) }}}},
		{"another pool changed", []change{{pool: "b", write: func(st *structured.AllocatedState) { share(st, "b", "gpu-0", "s1", 300, true) }, same: true}}},
		{"the counts unknown", []change{{write: func(st *structured.AllocatedState) { st.AllocatedDevices.Insert(dev("a", "gpu-1")) }, unknown: true}}},
		{"nothing changed", []change{{same: true}, {same: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &draMemo{shapes: map[*resourceapi.ResourceSlice]sliceShape{}, ids: map[string]string{}, uses: map[*resourceapi.ResourceSlice]sliceUse{}}
			d.shape(sl)
			d.shape(other)
			st := newState()
			pc := &poolCounts{state: st, counts: map[dra.UniqueString]uint64{}}
			pools := map[string]*nodeSlices{"a": groupOf([][]*resourceapi.ResourceSlice{{sl}}), "b": groupOf([][]*resourceapi.ResourceSlice{{other}})}
			cycle := func(vers PoolVersioner) *draCycle {
				return &draCycle{pools: pools, state: st, shares: countShares(st), vers: vers}
			}
			fresh := func() string { return d.filterKey(cycle(nil), ni) }
			before := d.filterKey(cycle(pc), ni)
			if want := fresh(); before != want {
				t.Fatalf("first key %q, want %q", before, want)
			}
			for i, s := range tc.steps {
				if s.write != nil {
					s.write(st)
				}
				if s.pool != "" {
					pc.counts[dra.MakeUniqueString(s.pool)]++
				}
				var vers PoolVersioner = pc
				if s.unknown {
					vers = &poolCounts{}
				}
				got := d.filterKey(cycle(vers), ni)
				if want := fresh(); got != want {
					t.Errorf("step %d: key %q, want the fresh %q", i, got, want)
				}
				if (got == before) != s.same {
					t.Errorf("step %d: key the same as before: %v, want %v", i, got == before, s.same)
				}
				before = got
			}
			// A key kept while the count stays: another state object
			// with the same counts is read afresh.
			st2 := newState()
			st2.AllocatedDevices.Insert(dev("a", "gpu-0"), dev("a", "gpu-1"))
			got := d.filterKey(&draCycle{pools: pools, state: st2, shares: countShares(st2), vers: &poolCounts{state: st2, counts: pc.counts}}, ni)
			if want := d.filterKey(&draCycle{pools: pools, state: st2, shares: countShares(st2)}, ni); got != want {
				t.Errorf("another state: key %q, want the fresh %q", got, want)
			}
		})
	}
}
