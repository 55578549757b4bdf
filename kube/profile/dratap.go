package profile

import (
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	dra "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

// draTap is the DRA manager the plugins are given: the framework's own,
// which, between arm and take, keeps the last slices listed and the last
// allocated state gathered, so that draMemo reads what upstream's
// PreFilter read instead of gathering it again (O(allocated devices) per
// cycle, about 10% of a loaded replay). Nothing is kept while disarmed.
// Concurrency-safe; draMemo serialises its PreFilters, so each take
// returns what its own PreFilter read.
type draTap struct {
	fwk.SharedDRAManager
	keeper  DRAKeeper     // DRAWrap.Keeper, or nil
	notePod func(*v1.Pod) // Setup.NotePod

	mu     sync.Mutex
	armed  bool
	slices []*resourceapi.ResourceSlice
	state  *structured.AllocatedState
	// lazy: the armed PreFilter's slice list is empty if the manager
	// lists node by node for the state gathered just before it
	// (DRANodeLister.NodeLists), and lazied notes that it was.
	lazy, lazied bool
	// restricted: the slice list is only and the gather is onlyState,
	// neither asked of the manager (restrict).
	restricted bool
	only       []*resourceapi.ResourceSlice
	onlyState  *structured.AllocatedState

	// ext are the extended resources' claims in flight (drahold.go).
	ext extendedInFlight

	// pubEvents counts the slice tracker's events, if pubCounted
	// (countPublished): the tracker lists the same slice objects while
	// the count is the same.
	pubEvents  atomic.Uint64
	pubCounted bool

	// scoresDRA: a score plugin of the profile lists the slices and
	// gathers the state itself (NodeResourcesFit or
	// BalancedAllocation scoring a DRA-backed extended resource),
	// which a concurrent cycle could do while restrict holds: lazy
	// cycles stand aside (draMemo.lazyPlan).
	scoresDRA bool
}

func newDRATap(m fwk.SharedDRAManager, keeper DRAKeeper, notePod func(*v1.Pod)) *draTap {
	return &draTap{SharedDRAManager: m, keeper: keeper, notePod: notePod}
}

// countPublished counts the events of the slice tracker src (pubEvents),
// whose events come for every change of the slice objects it lists. It
// is called once, before the first cycle.
func (t *draTap) countPublished(src EventSource) error {
	count := func() { t.pubEvents.Add(1) }
	if _, err := src.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { count() },
		UpdateFunc: func(any, any) { count() },
		DeleteFunc: func(any) { count() },
	}); err != nil {
		return err
	}
	t.pubCounted = true
	return nil
}

// publishedCount is the count of the slice tracker's events, and true,
// if they are counted (countPublished): while it is the same, the
// tracker lists the same slice objects. A count read before a list
// names that list or an older one. A nil tap counts nothing. O(1).
func (t *draTap) publishedCount() (uint64, bool) {
	if t == nil || !t.pubCounted || !draPubCountOn {
		return 0, false
	}
	return t.pubEvents.Load(), true
}

// draPubCountOn turns on the count of the slice tracker's events by
// which a lazy cycle's plan keeps the published slices' grouping
// without listing them (lazyPlan); tests turn it off to compare.
var draPubCountOn = true

// preFilterFor tells Setup.NotePod, if set, that DynamicResources'
// PreFilter runs for pod. A nil tap does nothing.
func (t *draTap) preFilterFor(pod *v1.Pod) {
	if t != nil && t.notePod != nil {
		t.notePod(pod)
	}
}

// arm starts keeping what is read. A nil tap does nothing.
func (t *draTap) arm() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.armed, t.slices, t.state, t.lazy, t.lazied = true, nil, nil, false, false
	t.mu.Unlock()
}

// armLazy is arm, with the slice list left empty if the manager lists
// node by node (lazy). A nil tap does nothing.
func (t *draTap) armLazy() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.armed, t.slices, t.state, t.lazy, t.lazied = true, nil, nil, true, false
	t.mu.Unlock()
}

// restrict makes the slice list only and the gather state, without
// asking the manager, until unrestrict: upstream's PreFilter then builds
// its allocator over only, from state. A nil tap does nothing.
func (t *draTap) restrict(only []*resourceapi.ResourceSlice, state *structured.AllocatedState) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.restricted, t.only, t.onlyState = true, only, state
	t.mu.Unlock()
}

// unrestrict ends restrict. A nil tap does nothing.
func (t *draTap) unrestrict() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.restricted, t.only, t.onlyState = false, nil, nil
	t.mu.Unlock()
}

// nodeLister is the manager as a DRANodeLister, nil if it is not one.
// A nil tap has none.
func (t *draTap) nodeLister() DRANodeLister {
	if t == nil {
		return nil
	}
	nl, _ := t.SharedDRAManager.(DRANodeLister)
	return nl
}

// take returns what was read since arm, nil for what was not, and
// whether the slice list was left empty (armLazy), and stops keeping. A
// nil tap returns nothing.
func (t *draTap) take() ([]*resourceapi.ResourceSlice, *structured.AllocatedState, bool) {
	if t == nil {
		return nil, nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l, s, lazied := t.slices, t.state, t.lazied
	t.armed, t.slices, t.state, t.lazy, t.lazied = false, nil, nil, false, false
	return l, s, lazied
}

// ShareCounter is a DRAKeeper's part that may know, for a state its
// manager's GatherAllocatedState returned, how many shares of each
// device the state holds: ShareCounts returns them (read-only, valid
// until the next write of a claim), or nil if it does not know them.
// DynamicResources' memo then reads them instead of counting the
// state's shares once per cycle.
type ShareCounter interface {
	ShareCounts(*structured.AllocatedState) map[structured.DeviceID]int
}

// PoolVersioner is a DRAKeeper's part that may know, for a state its
// manager's GatherAllocatedState returned, when what the
// state holds of a pool's devices last changed: PoolVersion returns a
// count for the pool (of any driver) that is another whenever what the
// state holds of the pool's devices (taken whole, shares, capacity
// consumed) has changed since it was returned, and true; or false if it
// does not know. Valid until the next write of a claim. DynamicResources'
// memo then keeps what it read of each slice's devices while the count
// is the same, instead of reading every device of every node it
// examines in every cycle.
type PoolVersioner interface {
	PoolVersion(state *structured.AllocatedState, pool dra.UniqueString) (uint64, bool)
}

// PoolVersionCeller is a PoolVersioner that keeps each pool's count in
// a cell of its own: PoolVersionCell returns the address of pool's
// count, which PoolVersion(state, pool) returns for every state it
// knows (true), or nil if it has none for pool (then read PoolVersion).
// A cell is the pool's for the keeper's life, and is written only with
// a claim. DynamicResources' memo keeps a node's cell with what it read
// of the node's slice (DRAStampFront), so that each node's stamp reads
// one word instead of looking the pool up.
type PoolVersionCeller interface {
	PoolVersionCell(pool dra.UniqueString) *uint64
}

// poolVersioner is the keeper's PoolVersioner, nil if there is no
// keeper. A nil tap has none.
func (t *draTap) poolVersioner() PoolVersioner {
	if t == nil || t.keeper == nil {
		return nil
	}
	return t.keeper
}

// shareCounts is the keeper's ShareCounts for state, nil if there is no
// keeper. A nil tap has none.
func (t *draTap) shareCounts(state *structured.AllocatedState) map[structured.DeviceID]int {
	if t == nil || t.keeper == nil {
		return nil
	}
	return t.keeper.ShareCounts(state)
}

// ResourceClaims is the manager's, with GatherAllocatedState kept.
func (t *draTap) ResourceClaims() fwk.ResourceClaimTracker {
	return tapClaims{ResourceClaimTracker: t.SharedDRAManager.ResourceClaims(), t: t}
}

// ResourceSlices is the manager's, with ListWithDeviceTaintRules kept.
func (t *draTap) ResourceSlices() fwk.ResourceSliceLister {
	return tapSlices{ResourceSliceLister: t.SharedDRAManager.ResourceSlices(), t: t}
}

type tapClaims struct {
	fwk.ResourceClaimTracker
	t *draTap
}

// SignalClaimPendingAllocation is the manager's; the claim of a pod's
// extended resources is also noted (extendedInFlight).
func (c tapClaims) SignalClaimPendingAllocation(uid types.UID, claim *resourceapi.ResourceClaim) error {
	err := c.ResourceClaimTracker.SignalClaimPendingAllocation(uid, claim)
	if err == nil {
		c.t.ext.note(uid, claim)
	}
	return err
}

// MaybeRemoveClaimPendingAllocation is the manager's; the note of an
// extended resources' claim whose allocation left is dropped.
func (c tapClaims) MaybeRemoveClaimPendingAllocation(uid types.UID, force bool) bool {
	deleted := c.ResourceClaimTracker.MaybeRemoveClaimPendingAllocation(uid, force)
	if deleted {
		c.t.ext.forget(uid)
	}
	return deleted
}

func (c tapClaims) GatherAllocatedState() (*structured.AllocatedState, error) {
	c.t.mu.Lock()
	if c.t.restricted {
		s := c.t.onlyState
		c.t.mu.Unlock()
		return s, nil
	}
	c.t.mu.Unlock()
	s, err := c.ResourceClaimTracker.GatherAllocatedState()
	if err == nil {
		c.t.keep(func() { c.t.state = s })
	}
	return s, err
}

// keep runs set, which stores what was read, if the tap is armed.
func (t *draTap) keep(set func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.armed {
		set()
	}
}

type tapSlices struct {
	fwk.ResourceSliceLister
	t *draTap
}

// ListWithDeviceTaintRules is the manager's list, kept if the tap is
// armed; restricted, the slices given (restrict); armed lazily, an
// empty list if the manager lists node by node for the state gathered
// just before (DRANodeLister.NodeLists, which then takes that state).
func (l tapSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	t := l.t
	t.mu.Lock()
	if t.restricted {
		only := t.only
		t.mu.Unlock()
		return only, nil
	}
	lazy, state := t.armed && t.lazy, t.state
	t.mu.Unlock()
	if lazy && state != nil {
		if nl := t.nodeLister(); nl != nil && nl.NodeLists(state) {
			t.keep(func() { t.lazied = true })
			return nil, nil
		}
	}
	list, err := l.ResourceSliceLister.ListWithDeviceTaintRules()
	if err == nil {
		l.t.keep(func() { l.t.slices = list })
	}
	return list, err
}
