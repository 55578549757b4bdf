package sim

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	dra "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/profile"
)

// draFullestFirst is the DRA manager the framework's plugins get when
// DRA allocates a trace's GPUs under a policy (profile.Setup.WrapDRA): the
// same objects, but each GPU node's devices are listed to DRA's allocator
// fullest first (least capacity left; index order among equals). The
// allocator takes the first devices that hold a request, so it then takes
// the best fit: for a share, the GPU with the least left that holds it;
// for whole GPUs, the first fully free ones. That is the choice of GPUs
// of DotProd, GpuClustering, GpuPacking and BestFit, made by DRA's own
// allocation. Under FGD and Random, for the share of the pod being
// scheduled (a lone pod, or a group's member: DynamicResources' PreFilter
// names it, notePod), each node's devices are listed with the GPU
// the policy chooses there first, so that DRA's allocation takes it.
// Without a policy the order is the published one.
//
// Its slice lists are for one cycle at a time (the framework's
// parallelism is 1).
type draFullestFirst struct {
	fwk.SharedDRAManager
	m     *gpuDRAModel
	cache map[string]orderedSlice // by pool and order
	key   []byte                  // ordered's scratch
	idx   []int                   // ordered's scratch
	// devs is each GPU slice's device IDs and capacities, by slice
	// object; last is the order each slice was last listed in, and the
	// slice so listed (ordered's fast path, before cache).
	devs map[*resourceapi.ResourceSlice]*sliceDevs
	last map[*resourceapi.ResourceSlice]lastOrder
	// pools is usedPools' set, cleared and refilled at each list of a
	// state that is not the kept one (the keeper keeps its own,
	// allocKeeper.gpuPools).
	pools map[dra.UniqueString]struct{}
	// lefts is what each GPU slice's devices have left in the kept
	// state, by slice object, with the keeper's count of changes then.
	lefts map[*resourceapi.ResourceSlice]keptLeft
	// picks is FGD's last choice on each slice's node, by slice object,
	// with what it was computed from (fgdChoice); fgdComputes counts the
	// choices computed, for tests.
	picks       map[*resourceapi.ResourceSlice]*fgdPicks
	fgdComputes int
	// entries is what listKept keeps of each GPU slice, by slice
	// object; requests numbers the shares FGD chose for (listKept's
	// picks), and epoch is the numbering's (a new one once it is full).
	entries  map[*resourceapi.ResourceSlice]*sliceEntry
	requests map[fgdRequest]int
	epoch    uint64
	// gathered is the allocated state the last GatherAllocatedState
	// returned, until the slice list that follows it reads it: the
	// state DynamicResources' PreFilter gathers just before it lists
	// the slices.
	gathered *structured.AllocatedState
	// kept is the allocated state kept from the claims' events, given
	// by GatherAllocatedState while it is usable (allocKeeper).
	kept *allocKeeper
	// published is the length of the last PublishedSlices; lazyState,
	// lazyPlain and lazyCtx are the last NodeLists' state, whether it
	// lists the published order, and what it read of the pod.
	published int
	lazyState *structured.AllocatedState
	lazyPlain bool
	lazyCtx   listContext
}

// orderedSlice is a slice with its devices in an order, the same object
// for as long as src and the order are unchanged (so that what reads it
// once per slice object, as DynamicResources' memo does, reads it once).
type orderedSlice struct {
	src *resourceapi.ResourceSlice
	out *resourceapi.ResourceSlice
}

func newDRAFullestFirst(m *gpuDRAModel) func(fwk.SharedDRAManager) profile.DRAWrap {
	return func(inner fwk.SharedDRAManager) profile.DRAWrap {
		d := &draFullestFirst{SharedDRAManager: inner, m: m, cache: map[string]orderedSlice{},
			devs: map[*resourceapi.ResourceSlice]*sliceDevs{}, last: map[*resourceapi.ResourceSlice]lastOrder{},
			pools: map[dra.UniqueString]struct{}{}, picks: map[*resourceapi.ResourceSlice]*fgdPicks{}, kept: newAllocKeeper(),
			lefts: map[*resourceapi.ResourceSlice]keptLeft{}, entries: map[*resourceapi.ResourceSlice]*sliceEntry{},
			requests: map[fgdRequest]int{}}
		m.claims = d.kept
		return profile.DRAWrap{Manager: d, Keeper: d}
	}
}

// ResourceClaims is the claims of the DRA manager, whose gathered state
// the slice list that follows reads.
func (d *draFullestFirst) ResourceClaims() fwk.ResourceClaimTracker {
	return gatherNoter{ResourceClaimTracker: d.SharedDRAManager.ResourceClaims(), d: d}
}

// gatherNoter notes the allocated state it gathers in d.gathered.
type gatherNoter struct {
	fwk.ResourceClaimTracker
	d *draFullestFirst
}

// WatchClaims keeps the allocated state from the claims' events
// (profile.DRAKeeper).
func (d *draFullestFirst) WatchClaims(src profile.EventSource) error {
	return d.kept.watch(src)
}

// GatherAllocatedState is the state kept from the claims' events while
// it is usable (allocKeeper), else upstream's gather; it is noted for
// the slice list that follows, and a failed gather notes none, so that
// no state of an earlier gather outlives it. Upstream's gather clones
// every allocated device and the consumed capacity of every shared
// device: once per cycle, it was a quarter of a loaded replay's CPU.
func (g gatherNoter) GatherAllocatedState() (*structured.AllocatedState, error) {
	var s *structured.AllocatedState
	var err error
	if g.d.kept.usable() {
		s = g.d.kept.served()
		if draStateCheck != nil {
			draStateCheck(g.d.kept, s, g.ResourceClaimTracker)
		}
	} else {
		s, err = g.ResourceClaimTracker.GatherAllocatedState()
	}
	g.d.gathered = nil
	if err == nil {
		g.d.gathered = s
	}
	return s, err
}

// SignalClaimPendingAllocation is the tracker's; the keeper notes
// whether the claim's allocation is then in flight.
func (g gatherNoter) SignalClaimPendingAllocation(uid types.UID, claim *resourceapi.ResourceClaim) error {
	err := g.ResourceClaimTracker.SignalClaimPendingAllocation(uid, claim)
	g.d.kept.noteInFlight(uid, g.ResourceClaimTracker.GetPendingAllocation(uid) != nil)
	return err
}

// MaybeRemoveClaimPendingAllocation is the tracker's; the keeper notes
// whether the claim's allocation is still in flight.
func (g gatherNoter) MaybeRemoveClaimPendingAllocation(uid types.UID, force bool) bool {
	deleted := g.ResourceClaimTracker.MaybeRemoveClaimPendingAllocation(uid, force)
	g.d.kept.noteInFlight(uid, g.ResourceClaimTracker.GetPendingAllocation(uid) != nil)
	return deleted
}

// ResourceSlices lists the slices in fullest-first order.
func (d *draFullestFirst) ResourceSlices() fwk.ResourceSliceLister {
	return fullestFirstLister{ResourceSliceLister: d.SharedDRAManager.ResourceSlices(), d: d}
}

type fullestFirstLister struct {
	fwk.ResourceSliceLister
	d *draFullestFirst
}

// ListWithDeviceTaintRules lists the slices, each GPU slice whose devices
// hold some claims in fullest-first order. O(allocated devices + GPU
// slices), and O(devices) more for a slice whose use changed since the
// last call. If the allocated state cannot be read consistently, the
// published order. The state noted by the gather just before is read by
// this list only, even one that fails: a later list gathers its own.
func (l fullestFirstLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	state := l.d.gathered
	l.d.gathered = nil
	list, err := l.ResourceSliceLister.ListWithDeviceTaintRules()
	if err != nil || !l.d.m.hasPolicy {
		return list, err
	}
	if state == nil {
		if state, err = l.d.SharedDRAManager.ResourceClaims().GatherAllocatedState(); err != nil {
			return list, nil
		}
	}
	used := l.d.usedPoolsOf(state)
	l.d.bound(len(list))
	if draListKeptOn && l.d.kept.serves(state) {
		return l.d.listKept(list, state), nil
	}
	choose := l.d.choice()
	out := slices.Clone(list)
	for i, sl := range list {
		if sl.Spec.Driver != traceGPUDriver {
			continue
		}
		devs := l.d.devsOf(sl)
		if _, ok := used[devs.pool]; !ok {
			continue
		}
		left := l.d.leftOf(sl, devs, state)
		first := -1
		if choose != nil {
			first = choose(sl, left)
		}
		out[i] = l.d.ordered(sl, left, first)
	}
	return out, nil
}

// bound forgets what is kept by slice object once it is much more than
// a list of n slices holds (slices replaced since). O(1), or O(kept)
// when it forgets.
func (d *draFullestFirst) bound(n int) {
	if len(d.cache) > 4*n+64 {
		clear(d.cache)
	}
	if len(d.devs) > 4*n+64 {
		clear(d.devs)
		clear(d.last)
		clear(d.picks)
		clear(d.lefts)
		clear(d.entries)
	}
}

// notePod notes the pod DynamicResources' PreFilter runs for
// (profile.Setup.NotePod): the slices the manager lists then put the GPU
// the policy chooses for the pod's share first.
func (m *gpuDRAModel) notePod(pod *v1.Pod) { m.pod = pod }

// choice is how the policy chooses the GPU of the share of the pod
// being scheduled (m.pod) on a GPU slice, given what each device has
// left: the index of a device to list first, or -1 to keep the fullest
// first. nil if the best fit is the policy's choice: the policy is
// neither FGD nor Random, the pod asks for no share, or no pod is
// noted.
func (d *draFullestFirst) choice() func(sl *resourceapi.ResourceSlice, left []int64) int {
	pod := d.m.pod
	if pod == nil {
		return nil
	}
	r, ok := usageOfPod(pod).request()
	switch {
	case !ok || !r.Shared():
		return nil
	case d.m.fgdChooses(pod, r):
		return func(sl *resourceapi.ResourceSlice, left []int64) int { return d.fgdChoice(sl, left, r) }
	case d.m.policy == gpu.Random:
		draw := randomDraw(d.m.seed, pod)
		return func(_ *resourceapi.ResourceSlice, left []int64) int { return randomChoice(left, r.Share, draw) }
	}
	return nil
}

// randomDraw is the Random policy's draw for pod's share, from the
// run's seed and the pod's namespace, name and UID: the same pod draws
// the same in a run of the same seed, on every node and in every
// attempt, whatever else the run drew. O(the pod's names).
func randomDraw(seed uint64, pod *v1.Pod) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, s := range []string{pod.Namespace, pod.Name, string(pod.UID)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	// FNV's high bits depend little on the last bytes: mix them in
	// (splitmix64's finaliser), since the draw is taken modulo a
	// small number.
	x := h.Sum64()
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// randomChoice is the Random policy's GPU for a share, given what each
// GPU of a node has left and the pod's draw: uniform among the GPUs that
// hold it. GPUs with as much left are alike (one model, one capacity),
// so the draw picks the amount left, each with the chance of the number
// of GPUs that have it, and the first GPU (in index order) of that
// amount: the node's GPUs end as a uniform draw would leave them, up to
// their names, and nodes alike stay alike for DynamicResources' memo (an
// idle node keeps its published order). -1 if the draw is the best fit
// (the fullest-first order takes it) or no GPU holds the share.
// O(GPUs log GPUs).
func randomChoice(left []int64, share int64, draw uint64) int {
	var holds []int64
	for _, l := range left {
		if l >= share {
			holds = append(holds, l)
		}
	}
	if len(holds) == 0 {
		return -1
	}
	slices.Sort(holds)
	amount := holds[draw%uint64(len(holds))]
	if amount == holds[0] {
		return -1
	}
	return slices.Index(left, amount)
}

// fgdChoice is the index of the device of sl (its node's GPUs, with what
// each has left) that FGD puts the lone pod's share r on, -1 if none (the
// share does not fit there, or the node is not in the snapshot). The
// node is the snapshot's (its CPU and memory taken by its pods) with
// the devices' thousandths left as DRA's allocated state has them. The
// choice is a function of the node's figures, what its devices have
// left and r alone (the workload is the run's), so the choices on the
// slice are kept by request with those figures and what is left, and
// given again while they are the same: a loaded cluster's nodes mostly
// are from one cycle to the next, and pods of a few kinds come in turn.
// O(FGD's cost) once per node content and request, O(devices) after.
func (d *draFullestFirst) fgdChoice(sl *resourceapi.ResourceSlice, left []int64, r gpu.Request) int {
	if sl.Spec.NodeName == nil || d.m.h == nil {
		return -1
	}
	ni, err := d.m.h.SnapshotSharedLister().NodeInfos().Get(*sl.Spec.NodeName)
	if err != nil {
		return -1
	}
	head := headOfNI(ni)
	p := d.picks[sl]
	if p == nil || p.head != head || !slices.Equal(p.left, left) {
		p = &fgdPicks{head: head, left: slices.Clone(left), at: map[fgdRequest]int{}}
		d.picks[sl] = p
	}
	key := requestKey(r)
	if at, ok := p.at[key]; ok {
		return at
	}
	at, ok := d.fgdCompute(head, left, r)
	if !ok {
		return -1
	}
	if len(p.at) >= maxFGDPicks {
		clear(p.at)
	}
	p.at[key] = at
	return at
}

// fgdCompute is the index of the device FGD puts r on, on the node of
// head (its figures, headOfNI) with its devices' thousandths left as
// left says (-1 if none); ok is false if left is not one figure per GPU
// of the node (no choice to keep). r is a share (listContext's fgd).
// O(FGD's cost; gpu.Memo.ShareGPU's lookup once it knows a node of the
// same model, GPUs' use and CPU levels).
func (d *draFullestFirst) fgdCompute(head nodeHead, left []int64, r gpu.Request) (at int, ok bool) {
	d.fgdComputes++
	n := emptyNode(nodeIn{name: head.name, model: head.model, cpu: head.cpu, mem: head.mem, gpuMilli: head.gpuMilli,
		usedCPU: head.usedCPU, usedMem: head.usedMem})
	if len(n.Free) != len(left) {
		return -1, false
	}
	copy(n.Free, left)
	return d.m.fgdMemo().ShareGPU(n, r), true
}

// maxFGDPicks bounds the requests whose choices are kept per slice.
const maxFGDPicks = 256

// fgdPicks is FGD's choices of a device on a slice's node (at, by
// request), and the node's figures and devices' use they were computed
// from.
type fgdPicks struct {
	head nodeHead
	left []int64
	at   map[fgdRequest]int
}

// fgdRequest is a gpu.Request as a map key: its models counted and
// joined.
type fgdRequest struct {
	cpu, mem, share int64
	count, nmodels  int
	models          string
}

func requestKey(r gpu.Request) fgdRequest {
	return fgdRequest{cpu: r.CPU, mem: r.Mem, share: r.Share, count: r.Count, nmodels: len(r.Models), models: strings.Join(r.Models, "\x00")}
}

// usedPoolsOf is usedPools(state): for the kept state, the keeper's
// set, kept up to date as claims come and go (allocKeeper.gpuPools;
// read-only); else usedPools'. O(1) then.
func (d *draFullestFirst) usedPoolsOf(state *structured.AllocatedState) map[dra.UniqueString]struct{} {
	if draLeftKeptOn && d.kept.serves(state) {
		return d.kept.gpuPools
	}
	return d.usedPools(state)
}

// keptLeft is what a slice's devices have left in the kept state, read
// at the keeper's count of changes at.
type keptLeft struct {
	at   uint64
	left []int64
}

// leftOf is devs.left(state), read again from the kept state only once
// the slice's pool changed there (a new slice object is read anew). The
// slice returned is shared: read-only. O(1) then, else left's.
func (d *draFullestFirst) leftOf(sl *resourceapi.ResourceSlice, devs *sliceDevs, state *structured.AllocatedState) []int64 {
	if !draLeftKeptOn || !d.kept.serves(state) {
		return devs.left(state)
	}
	if k, ok := d.lefts[sl]; ok && d.kept.poolCount(devs.pool) <= k.at {
		return k.left
	}
	left := devs.left(state)
	d.lefts[sl] = keptLeft{at: d.kept.ver, left: left}
	return left
}

// usedPools is the set of pools some of whose devices of the trace's
// driver have thousandths of GPU consumed in state (the GPU slices
// listed in an order of their own). Reused from list to list. O(entries
// of state's consumed capacity).
func (d *draFullestFirst) usedPools(state *structured.AllocatedState) map[dra.UniqueString]struct{} {
	clear(d.pools)
	driver := dra.MakeUniqueString(traceGPUDriver)
	for id, c := range state.AggregatedCapacity {
		if id.Driver != driver {
			continue
		}
		if _, ok := d.pools[id.Pool]; ok {
			continue
		}
		if c[traceGPUCapacity] != nil {
			d.pools[id.Pool] = struct{}{}
		}
	}
	return d.pools
}

// sliceDevs is what the lister reads of a GPU slice, once per slice
// object: its pool, each device's ID and thousandths of capacity (1000
// if the device declares none).
type sliceDevs struct {
	pool     dra.UniqueString
	ids      []structured.DeviceID
	capacity []int64
}

// devsOf is sl's sliceDevs, made at the first call for that object.
// O(devices) then, O(1) after.
func (d *draFullestFirst) devsOf(sl *resourceapi.ResourceSlice) *sliceDevs {
	if s, ok := d.devs[sl]; ok {
		return s
	}
	s := &sliceDevs{pool: dra.MakeUniqueString(sl.Spec.Pool.Name)}
	for _, dev := range sl.Spec.Devices {
		c := int64(1000)
		if q, ok := dev.Capacity[traceGPUCapacity]; ok {
			c = q.Value.Value()
		}
		s.ids = append(s.ids, structured.MakeDeviceID(sl.Spec.Driver, sl.Spec.Pool.Name, dev.Name))
		s.capacity = append(s.capacity, c)
	}
	d.devs[sl] = s
	return s
}

// left is what each device of the slice has left in state: its capacity
// less the thousandths its claims consume. O(devices).
func (s *sliceDevs) left(state *structured.AllocatedState) []int64 {
	left := slices.Clone(s.capacity)
	for i, id := range s.ids {
		if q := state.AggregatedCapacity[id][traceGPUCapacity]; q != nil {
			left[i] -= q.Value()
		}
	}
	return left
}

// lastOrder is the order (device indexes of src) a slice was last listed
// in, and the slice so listed.
type lastOrder struct {
	idx []int
	out *resourceapi.ResourceSlice
}

// ordered returns sl with its devices fullest first, given what each has
// left, and device first (an index of sl), if not -1, before them all;
// the same object as last time if neither the slice nor the order
// changed. O(devices log devices).
func (d *draFullestFirst) ordered(sl *resourceapi.ResourceSlice, left []int64, first int) *resourceapi.ResourceSlice {
	idx := orderInto(d.idx[:0], left, first)
	d.idx = idx
	if l, ok := d.last[sl]; ok && slices.Equal(l.idx, idx) {
		return l.out
	}
	out := d.orderedBy(sl, idx)
	d.last[sl] = lastOrder{idx: slices.Clone(idx), out: out}
	return out
}

// orderedBy is sl with its devices in the order idx, the same object as
// the last one for sl's pool and that order if sl is the same object.
func (d *draFullestFirst) orderedBy(sl *resourceapi.ResourceSlice, idx []int) *resourceapi.ResourceSlice {
	d.key = append(append(d.key[:0], sl.Spec.Pool.Name...), '/')
	for _, i := range idx {
		d.key = append(d.key, byte(i), byte(i>>8))
	}
	if c, ok := d.cache[string(d.key)]; ok && c.src == sl {
		return c.out
	}
	key := string(d.key)
	c := *sl
	c.Spec.Devices = make([]resourceapi.Device, len(idx))
	for i, j := range idx {
		c.Spec.Devices[i] = sl.Spec.Devices[j]
	}
	d.cache[key] = orderedSlice{src: sl, out: &c}
	return &c
}

// orderOf is the device indexes of left fullest first (the least left
// first, index order among equals), first (if not -1) before them all.
// O(devices log devices).
func orderOf(left []int64, first int) []int { return orderInto(nil, left, first) }

// orderInto is orderOf, appended to idx.
func orderInto(idx []int, left []int64, first int) []int {
	for i := range left {
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case a == first:
			return -1
		case b == first:
			return 1
		}
		return cmp.Compare(left[a], left[b])
	})
	return idx
}
