package sim

import (
	"errors"
	"fmt"
	"maps"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	feature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	dra "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"github.com/schedq/schedq/kube/profile"
)

// draStateKeptOn turns on the allocated state kept from the claims'
// events (allocKeeper); tests turn it off to compare.
var draStateKeptOn = true

// draStateCheck, if set (by tests), is given each kept state served, its
// keeper and the tracker whose gather it stands for.
var draStateCheck func(k *allocKeeper, served *structured.AllocatedState, tracker fwk.ResourceClaimTracker)

// allocKeeper is the allocated state DynamicResources' PreFilter gathers,
// kept up to date from the events of the DRA manager's assume cache of
// claims instead of gathered anew: upstream's gather clones every
// allocated device and every shared device's consumed capacity, once per
// cycle (a quarter of a loaded replay's CPU). Upstream's tracker derives
// its devices from the same events, each claim's allocation added when
// it appears (added, or updated from none) and removed when it goes
// (deleted, or updated to none), an update from one allocation to
// another changing nothing; the keeper does the same, so the two agree
// event by event. What is in flight (allocations between Reserve and
// PreBind) is not in the keeper: while some claim is, the gather is
// upstream's.
//
// The state is handed out as it is, not a copy, and changed in place by
// later events: a caller must not keep it past the next write of a claim.
// DynamicResources reads it from its PreFilter to its Reserve, before its
// PreBind writes; the simulator writes claims between cycles and at
// PreBind, on one goroutine. Not safe for concurrent use.
type allocKeeper struct {
	state structured.AllocatedState
	// view is the state served (served): state's devices and capacities,
	// with bare for its shares. bare is the shares of state whose device
	// has no capacity consumed in state, and byDev each device's shares.
	// Upstream's allocator reads the shares only to tell whether a device
	// without capacity consumed is shared (it ranges over them all, for
	// every device it tries that has none consumed: the whole set per
	// free GPU tried, 8% of the 130% draw's CPU); a share of a device with
	// capacity consumed never answers that, so bare answers as the whole
	// set (TestKeptAllocatedStateIsUpstreams, sameAsGather).
	view     structured.AllocatedState
	bare     sets.Set[structured.SharedDeviceID]
	byDev    map[structured.DeviceID]sets.Set[structured.SharedDeviceID]
	watching bool
	// broken is set by an event the keeper cannot read (not a claim):
	// the gather is upstream's from then on.
	broken bool
	// inFlight are the claims whose allocation the tracker has in
	// flight, as the tracker answers after each signal and removal.
	inFlight sets.Set[types.UID]
	// ver counts the changes applied; poolVer is, for each pool (by
	// name, of any driver) changed at least once, the cell of the count
	// at its last change: what was read of a pool's devices at count v
	// is still the state's while *poolVer[pool] <= v (0 for a pool
	// without a cell). A pool's cell is never replaced, so a reader may
	// keep it (PoolVersionCell).
	ver     uint64
	poolVer map[dra.UniqueString]*uint64
	// cells is where newCell takes the pools' count cells from, side by
	// side: a cycle reads the cells of every node it visits, which then
	// share cache lines (cells made one by one lay among other objects,
	// a cache miss each).
	cells []uint64
	// shares is the number of shares of each device in state.
	shares map[structured.DeviceID]int
	// claimEvents counts, per pool name, the claims' events whose claim,
	// before or after, has a device of the pool allocated: what a claim
	// lookup returns of a pool's allocations is the same while its count
	// is (claimCount). A pool's count lives in a cell of its own, which
	// a caller may keep to read the count without the lookup by name.
	claimEvents map[string]*claimCell
	// gpuPools is usedPools(&state), kept as devices are applied:
	// gpuDevs counts, per pool, its devices of the trace's driver with
	// thousandths of GPU consumed in state, and gpuPools holds the
	// pools whose count is not zero.
	gpuDevs  map[dra.UniqueString]map[structured.DeviceID]struct{}
	gpuPools map[dra.UniqueString]struct{}
}

func newAllocKeeper() *allocKeeper {
	return &allocKeeper{
		state: structured.AllocatedState{
			AllocatedDevices:         sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
			AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
		},
		bare:     sets.New[structured.SharedDeviceID](),
		byDev:    map[structured.DeviceID]sets.Set[structured.SharedDeviceID]{},
		inFlight: sets.New[types.UID](),
		poolVer:  map[dra.UniqueString]*uint64{},
		shares:   map[structured.DeviceID]int{},

		claimEvents: map[string]*claimCell{},
		gpuDevs:     map[dra.UniqueString]map[structured.DeviceID]struct{}{},
		gpuPools:    map[dra.UniqueString]struct{}{},
	}
}

// watch adds the keeper's handler to the assume cache of claims.
func (k *allocKeeper) watch(src profile.EventSource) error {
	if _, err := src.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: k.onAdd, UpdateFunc: k.onUpdate, DeleteFunc: k.onDelete}); err != nil {
		return err
	}
	k.watching = true
	return nil
}

// usable reports whether the kept state is the one upstream's gather
// would return: the keeper sees the claims' events, understood them all,
// nothing is in flight, and consumable capacity is on (without it
// upstream counts shared devices as whole ones).
func (k *allocKeeper) usable() bool {
	return draStateKeptOn && k != nil && k.watching && !k.broken && k.inFlight.Len() == 0 &&
		feature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity)
}

func (k *allocKeeper) onAdd(obj any) {
	if c := k.claimOf(obj); c != nil {
		k.countEvent(c)
		k.apply(c, true)
	}
}

func (k *allocKeeper) onUpdate(oldObj, newObj any) {
	old, nw := k.claimOf(oldObj), k.claimOf(newObj)
	k.countEvent(old)
	k.countEvent(nw)
	switch {
	case old == nil || nw == nil:
	case old.Status.Allocation == nil && nw.Status.Allocation != nil:
		k.apply(nw, true)
	case old.Status.Allocation != nil && nw.Status.Allocation == nil:
		k.apply(old, false)
	}
}

func (k *allocKeeper) onDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if c := k.claimOf(obj); c != nil {
		k.countEvent(c)
		k.apply(c, false)
	}
}

// countEvent counts an event of claim (nil: none) against each pool
// its allocation has a device of (admin access included: a claim
// lookup returns those too). O(the allocation's results).
func (k *allocKeeper) countEvent(claim *resourceapi.ResourceClaim) {
	if claim == nil || claim.Status.Allocation == nil {
		return
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		k.cellOf(r.Pool).n++
	}
}

// claimCell is one pool's count of the claims' events in keeper k.
type claimCell struct {
	k *allocKeeper
	n uint64
}

// cellOf is pool's cell, made (at 0) if the pool has none yet. O(1).
func (k *allocKeeper) cellOf(pool string) *claimCell {
	c := k.claimEvents[pool]
	if c == nil {
		c = &claimCell{k: k}
		k.claimEvents[pool] = c
	}
	return c
}

// claimCount is the number of the claims' events counted against pool
// (countEvent), and true; false while the keeper may have missed one
// (not watching, or broken by an event it could not read). A claim
// lookup (the tracker's Get, which reads the same assume cache) returns
// the same allocations on pool as long as the count is the same: every
// change of a claim object there is an event. cell, if not nil, is
// the caller's memory of pool's cell: once set (here, at the first
// call that counts, which makes the pool a cell), the count is read
// from it without looking the pool up, while it is k's. Read-only
// otherwise. O(1).
func (k *allocKeeper) claimCount(pool string, cell **claimCell) (uint64, bool) {
	if !draNodeClaimsKeptOn || k == nil || !k.watching || k.broken {
		return 0, false
	}
	if cell == nil {
		if c := k.claimEvents[pool]; c != nil {
			return c.n, true
		}
		return 0, true
	}
	if *cell == nil || (*cell).k != k {
		*cell = k.cellOf(pool)
	}
	return (*cell).n, true
}

// claimOf is obj as a claim; anything else breaks the keeper.
func (k *allocKeeper) claimOf(obj any) *resourceapi.ResourceClaim {
	c, ok := obj.(*resourceapi.ResourceClaim)
	if !ok {
		k.broken = true
		return nil
	}
	return c
}

// apply adds (or removes) what claim's allocation holds: each device
// taken whole, each share and the capacity it consumes; devices for
// admin access hold nothing. O(the allocation's results).
func (k *allocKeeper) apply(claim *resourceapi.ResourceClaim, add bool) {
	if claim.Status.Allocation == nil {
		return
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		k.ver++
		cell := k.poolVer[id.Pool]
		if cell == nil {
			cell = k.newCell()
			k.poolVer[id.Pool] = cell
		}
		*cell = k.ver
		switch {
		case r.ShareID == nil && add:
			k.state.AllocatedDevices.Insert(id)
		case r.ShareID == nil:
			k.state.AllocatedDevices.Delete(id)
		default:
			k.share(id, structured.MakeSharedDeviceID(id, r.ShareID), add)
		}
		if r.ShareID == nil {
			continue
		}
		if r.ConsumedCapacity != nil {
			used := structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity)
			if add {
				k.state.AggregatedCapacity.Insert(used)
			} else {
				k.state.AggregatedCapacity.Remove(used)
			}
			k.noteGPUUse(id)
		}
		if draBareSettles {
			k.settle(id)
		}
	}
}

// draBareSettles turns on settle; tests turn it off to show what it
// guards against.
var draBareSettles = true

// settle puts device id's shares in bare if state has no capacity
// consumed on id, else takes them out. O(id's shares).
func (k *allocKeeper) settle(id structured.DeviceID) {
	_, consumed := k.state.AggregatedCapacity[id]
	for sid := range k.byDev[id] {
		if consumed {
			k.bare.Delete(sid)
		} else {
			k.bare.Insert(sid)
		}
	}
}

// draBareSharesOn turns on the view's bare shares; tests turn it off to
// compare. The bare shares are served only with the share counts kept
// (draSharesKeptOn), which DynamicResources' memo then reads instead of
// counting the state's shares.
var draBareSharesOn = true

// served is the state to serve: view, its maps state's, its shares bare
// (or state's, draBareSharesOn off). O(1).
func (k *allocKeeper) served() *structured.AllocatedState {
	k.view = k.state
	if draBareSharesOn && draSharesKeptOn {
		k.view.AllocatedSharedDeviceIDs = k.bare
	}
	return &k.view
}

// sameAsGather reports how served, a state gathered through the
// manager, differs from want, upstream's gather (nil if it does not):
// if served is the kept one, the keeper's state is want and served's
// shares are those of want whose device has no capacity consumed (all
// of want's, draBareSharesOn off). For tests and checks.
func (k *allocKeeper) sameAsGather(served, want *structured.AllocatedState) error {
	if !k.serves(served) {
		return sameState(served, want)
	}
	if err := sameState(&k.state, want); err != nil {
		return err
	}
	if served.AllocatedSharedDeviceIDs.Equal(k.state.AllocatedSharedDeviceIDs) {
		return nil
	}
	bare := sets.New[structured.SharedDeviceID]()
	for sid := range want.AllocatedSharedDeviceIDs {
		if _, consumed := want.AggregatedCapacity[sid.GetDeviceID()]; !consumed {
			bare.Insert(sid)
		}
	}
	if !served.AllocatedSharedDeviceIDs.Equal(bare) {
		return fmt.Errorf("bare shares: %v, want %v", served.AllocatedSharedDeviceIDs.UnsortedList(), bare.UnsortedList())
	}
	return nil
}

// noteGPUUse puts device id in gpuDevs, and its pool in gpuPools, as
// the state has thousandths of GPU consumed on it or not (what
// usedPools reads of it). O(1).
func (k *allocKeeper) noteGPUUse(id structured.DeviceID) {
	if id.Driver != dra.MakeUniqueString(traceGPUDriver) {
		return
	}
	devs := k.gpuDevs[id.Pool]
	if k.state.AggregatedCapacity[id][traceGPUCapacity] != nil {
		if devs == nil {
			devs = map[structured.DeviceID]struct{}{}
			k.gpuDevs[id.Pool] = devs
		}
		devs[id] = struct{}{}
		k.gpuPools[id.Pool] = struct{}{}
		return
	}
	delete(devs, id)
	if len(devs) == 0 {
		delete(k.gpuDevs, id.Pool)
		delete(k.gpuPools, id.Pool)
	}
}

// serves reports whether state is the kept one.
func (k *allocKeeper) serves(state *structured.AllocatedState) bool {
	return k != nil && state == &k.view
}

// share adds (or removes) the share sid of device id, and counts it.
func (k *allocKeeper) share(id structured.DeviceID, sid structured.SharedDeviceID, add bool) {
	switch had := k.state.AllocatedSharedDeviceIDs.Has(sid); {
	case add && !had:
		k.state.AllocatedSharedDeviceIDs.Insert(sid)
		k.shares[id]++
		if k.byDev[id] == nil {
			k.byDev[id] = sets.New[structured.SharedDeviceID]()
		}
		k.byDev[id].Insert(sid)
	case !add && had:
		k.state.AllocatedSharedDeviceIDs.Delete(sid)
		k.bare.Delete(sid)
		if k.byDev[id].Delete(sid); k.byDev[id].Len() == 0 {
			delete(k.byDev, id)
		}
		if k.shares[id]--; k.shares[id] <= 0 {
			delete(k.shares, id)
		}
	}
}

// ShareCounts is the number of shares of each device in state if it is
// the kept one (profile.DRAKeeper), else nil.
func (d *draFullestFirst) ShareCounts(state *structured.AllocatedState) map[structured.DeviceID]int {
	if !draSharesKeptOn || !d.kept.serves(state) {
		return nil
	}
	return d.kept.shares
}

// PoolVersion is the keeper's count at pool's last change, and true, if
// state is the kept one (profile.DRAKeeper); else false. Every
// change of what the kept state holds of a device is counted against
// its pool (apply), so the count is another once the pool's devices
// changed. Read-only: safe while no claim is written (DynamicResources'
// Filters run in parallel within a cycle).
func (d *draFullestFirst) PoolVersion(state *structured.AllocatedState, pool dra.UniqueString) (uint64, bool) {
	if !draUsesKeptOn || !d.kept.serves(state) {
		return 0, false
	}
	return d.kept.poolCount(pool), true
}

// PoolVersionCell is the cell PoolVersion reads pool's count from for
// every state it knows, nil while the pool has none (it never changed)
// or with draPoolCellsOn off (profile.PoolVersionCeller). A cell is
// the pool's for the keeper's life. O(1).
func (d *draFullestFirst) PoolVersionCell(pool dra.UniqueString) *uint64 {
	if !draPoolCellsOn {
		return nil
	}
	return d.kept.poolVer[pool]
}

// newCell is a count cell at 0, next to the cells made before it.
// O(1), O(cellsPerSlab) every cellsPerSlab cells.
func (k *allocKeeper) newCell() *uint64 {
	if len(k.cells) == cap(k.cells) {
		k.cells = make([]uint64, 0, cellsPerSlab)
	}
	k.cells = k.cells[:len(k.cells)+1]
	return &k.cells[len(k.cells)-1]
}

// cellsPerSlab is the number of count cells allocated at a time.
const cellsPerSlab = 512

// poolCount is pool's count at its last change, 0 if it never changed.
// O(1).
func (k *allocKeeper) poolCount(pool dra.UniqueString) uint64 {
	if c := k.poolVer[pool]; c != nil {
		return *c
	}
	return 0
}

// noteInFlight records whether the tracker has claim uid's allocation in
// flight, as it answers now.
func (k *allocKeeper) noteInFlight(uid types.UID, inFlight bool) {
	if inFlight {
		k.inFlight.Insert(uid)
	} else {
		k.inFlight.Delete(uid)
	}
}

// sameState reports how a differs from b, nil if it does not: the same
// devices taken whole, the same shares, the same capacities consumed
// (compared by value). For tests and checks.
func sameState(a, b *structured.AllocatedState) error {
	switch {
	case a == nil || b == nil:
		return errors.New("no state")
	case !a.AllocatedDevices.Equal(b.AllocatedDevices):
		return fmt.Errorf("devices taken whole: %v, want %v", a.AllocatedDevices.UnsortedList(), b.AllocatedDevices.UnsortedList())
	case !a.AllocatedSharedDeviceIDs.Equal(b.AllocatedSharedDeviceIDs):
		return fmt.Errorf("shares: %d, want %d", a.AllocatedSharedDeviceIDs.Len(), b.AllocatedSharedDeviceIDs.Len())
	case len(a.AggregatedCapacity) != len(b.AggregatedCapacity):
		return fmt.Errorf("devices with capacity consumed: %d, want %d", len(a.AggregatedCapacity), len(b.AggregatedCapacity))
	}
	for id, ca := range a.AggregatedCapacity {
		cb, ok := b.AggregatedCapacity[id]
		if !ok || !maps.EqualFunc(ca, cb, func(x, y *resource.Quantity) bool { return x.Cmp(*y) == 0 }) {
			return fmt.Errorf("device %s: consumed %v, want %v", id, ca, cb)
		}
	}
	return nil
}

// draLeftKeptOn turns on the lister's reuse of what it read of the kept
// state (usedPoolsOf, leftOf); tests turn it off to compare.
var draLeftKeptOn = true

// draNodeClaimsKeptOn turns on the claims' event counts by which
// GPUDevices' node memo skips its claim lookups (claimCount); tests turn
// it off to compare.
var draNodeClaimsKeptOn = true

// draUsesKeptOn turns on the pool counts given to DynamicResources'
// memo (PoolVersion); tests turn it off to compare.
var draUsesKeptOn = true

// draPoolCellsOn turns on the pools' count cells given to readers
// (PoolVersionCell, and the lister's entries); tests turn it off to
// compare.
var draPoolCellsOn = true

// draSharesKeptOn turns on the share counts kept with the state
// (ShareCounts); tests turn it off to compare.
var draSharesKeptOn = true
