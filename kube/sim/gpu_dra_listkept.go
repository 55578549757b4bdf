package sim

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq/kube/gpu"
)

// draListKeptOn turns on listKept, the lister's path for the kept
// state; tests turn it off to compare with the path that reads every
// slice's order again.
var draListKeptOn = true

// draListCheck, if set (by tests), is told each slice listKept lists
// from what it kept, with the order the other path would list it in
// (its device names), as it computes it afresh.
var draListCheck func(sl, kept, fresh *resourceapi.ResourceSlice)

// sliceEntry is what listKept keeps of a GPU slice object: what its
// devices have left in the kept state and whether its pool is in use
// there, read at the keeper's count at; the slice listed in each order
// for that use (outs, by the device listed first + 1); and FGD's choice
// on the slice's node for each request (picks, by the request's number
// + 1; 0: not known) with the node's figures they were chosen for.
type sliceEntry struct {
	devs *sliceDevs
	cell *uint64 // the keeper's count cell of devs' pool, once it has one
	read bool
	at   uint64
	left []int64
	used bool
	outs []*resourceapi.ResourceSlice

	node  *v1.Node
	head  nodeHead
	epoch uint64
	picks []int
}

// maxFGDRequests bounds the requests listKept numbers: past it, the
// numbering starts again, and every kept choice with it.
const maxFGDRequests = 1024

// listKept is ListWithDeviceTaintRules on the kept state: each GPU
// slice whose pool is in use listed in the policy's order, from what is
// kept of it while its pool's count (the keeper's) and, under FGD, its
// node's object and figures are the ones it was kept at. The order is a
// function of what the devices have left and the device listed first,
// which under FGD is a function of the node's figures, what is left and
// the request (fgdChoice): a cycle reads the slices of the nodes placed
// on since (their pools' counts moved, or their figures) and nothing
// else of the others. O(GPU slices) lookups, O(devices) more per slice
// read again.
func (d *draFullestFirst) listKept(list []*resourceapi.ResourceSlice, state *structured.AllocatedState) []*resourceapi.ResourceSlice {
	lc := d.listContext()
	out := make([]*resourceapi.ResourceSlice, len(list))
	for i, sl := range list {
		out[i] = d.keptSlice(sl, state, &lc)
	}
	return out
}

// listContext is what listKept reads of the pod noted, once per list:
// its request, whether FGD or Random chooses its GPU (fgd, rnd), the
// request's number (num) or the pod's draw, and the snapshot's nodes
// (under FGD).
type listContext struct {
	r        gpu.Request
	fgd, rnd bool
	num      int
	draw     uint64
	nodes    fwk.NodeInfoLister
}

// listContext is the listContext of the pod noted. O(the pod's
// containers).
func (d *draFullestFirst) listContext() listContext {
	var lc listContext
	if pod := d.m.pod; pod != nil {
		var ok bool
		lc.r, ok = usageOfPod(pod).request()
		switch {
		case !ok || !lc.r.Shared():
		case d.m.fgdChooses(pod, lc.r):
			lc.fgd = true
			lc.num = d.requestNumber(lc.r)
		case d.m.policy == gpu.Random:
			lc.rnd, lc.draw = true, randomDraw(d.m.seed, pod)
		}
	}
	if lc.fgd && d.m.h != nil {
		lc.nodes = d.m.h.SnapshotSharedLister().NodeInfos()
	}
	return lc
}

// keptSlice is sl as listKept lists it in the kept state for the pod
// of lc: itself unless it is a GPU slice whose pool is in use, else in
// the policy's order, kept in its entry. O(1) while what it was kept
// from holds, else O(its devices) and FGD's choice.
func (d *draFullestFirst) keptSlice(sl *resourceapi.ResourceSlice, state *structured.AllocatedState, lc *listContext) *resourceapi.ResourceSlice {
	if sl.Spec.Driver != traceGPUDriver {
		return sl
	}
	e := d.entryOf(sl, state)
	if !e.used {
		return sl
	}
	first := -1
	switch {
	case lc.fgd:
		first = d.keptFGDChoice(sl, e, lc.nodes, lc.r, lc.num)
	case lc.rnd:
		first = randomChoice(e.left, lc.r.Share, lc.draw)
	}
	o := e.outs[first+1]
	if o == nil {
		o = d.ordered(sl, e.left, first)
		e.outs[first+1] = o
	}
	if draListCheck != nil {
		draListCheck(sl, o, d.freshOrder(sl, state))
	}
	return o
}

// freshOrder is sl as the other path lists it for the pod noted, read
// afresh from state (for draListCheck).
func (d *draFullestFirst) freshOrder(sl *resourceapi.ResourceSlice, state *structured.AllocatedState) *resourceapi.ResourceSlice {
	devs := d.devsOf(sl)
	left := devs.left(state)
	first := -1
	if choose := d.choice(); choose != nil {
		first = choose(sl, left)
	}
	return d.orderedBy(sl, orderOf(left, first))
}

// entryOf is sl's entry, read again from the kept state if its pool's
// count moved since it was read (or it never was). The count is read
// from the pool's cell, kept in the entry once the pool has one. O(1)
// then, else O(devices).
func (d *draFullestFirst) entryOf(sl *resourceapi.ResourceSlice, state *structured.AllocatedState) *sliceEntry {
	e := d.entries[sl]
	if e == nil {
		e = &sliceEntry{devs: d.devsOf(sl)}
		d.entries[sl] = e
	}
	if e.cell == nil {
		e.cell = d.PoolVersionCell(e.devs.pool)
	}
	var ver uint64 // 0: the pool never changed
	switch {
	case e.cell != nil:
		ver = *e.cell
	case !draPoolCellsOn:
		ver = d.kept.poolCount(e.devs.pool)
	}
	if e.read && ver <= e.at {
		return e
	}
	e.read, e.at = true, d.kept.ver
	e.left = e.devs.left(state)
	_, e.used = d.kept.gpuPools[e.devs.pool]
	e.outs = make([]*resourceapi.ResourceSlice, len(e.left)+1)
	e.picks = e.picks[:0]
	return e
}

// requestNumber is r's number among the requests listKept kept choices
// for, given at its first list; once maxFGDRequests are numbered, the
// numbering (and every choice kept by it) starts again. O(r's models).
func (d *draFullestFirst) requestNumber(r gpu.Request) int {
	key := requestKey(r)
	if n, ok := d.requests[key]; ok {
		return n
	}
	if len(d.requests) >= maxFGDRequests {
		clear(d.requests)
		d.epoch++
	}
	n := len(d.requests)
	d.requests[key] = n
	return n
}

// keptFGDChoice is fgdChoice(sl, e.left, r), kept in e by r's number
// num while the node's object and figures (allocatable and requested
// CPU and memory) are the ones it was chosen for and e.left is
// unchanged (entryOf clears e.picks when it reads it again). The rest of
// what FGD reads of the node (its name, model and allocatable GPUs) is
// the node object's, which is never changed in place. O(1) then, else
// FGD's choice computed (fgdCompute: fgdChoice's own keep would not
// hold it, since it keeps the same inputs) on the figures kept with the
// choices, the node's name, model and allocatable GPUs read once per
// node object (a node's labels and scalar resources are maps: reading
// them for every choice computed was a third of its cost).
func (d *draFullestFirst) keptFGDChoice(sl *resourceapi.ResourceSlice, e *sliceEntry, nodes fwk.NodeInfoLister, r gpu.Request, num int) int {
	if nodes == nil || sl.Spec.NodeName == nil {
		return d.fgdChoice(sl, e.left, r)
	}
	ni, err := nodes.Get(*sl.Spec.NodeName)
	if err != nil || ni.Node() == nil {
		return d.fgdChoice(sl, e.left, r)
	}
	node, alloc, used := ni.Node(), ni.GetAllocatable(), ni.GetRequested()
	h := &e.head
	if e.node == nil || draListKeptNodeCheck && (e.node != node || e.epoch != d.epoch || h.usedCPU != used.GetMilliCPU() || h.usedMem != used.GetMemory() ||
		h.cpu != alloc.GetMilliCPU() || h.mem != alloc.GetMemory()) {
		if e.node != node || !draListKeptHeadOn {
			h.name, h.model, h.gpuMilli = node.Name, node.Labels[LabelGPUModel], alloc.GetScalarResources()[gpuName]
		}
		e.node, e.epoch = node, d.epoch
		h.usedCPU, h.usedMem = used.GetMilliCPU(), used.GetMemory()
		h.cpu, h.mem = alloc.GetMilliCPU(), alloc.GetMemory()
		e.picks = e.picks[:0]
	}
	if num < len(e.picks) && e.picks[num] != 0 {
		return e.picks[num] - 1
	}
	at, ok := d.fgdCompute(e.head, e.left, r)
	if !ok {
		return -1
	}
	for len(e.picks) <= num {
		e.picks = append(e.picks, 0)
	}
	e.picks[num] = at + 1
	return at
}

// draListKeptHeadOn turns on keptFGDChoice's keep of the node's name,
// model and allocatable GPUs, read once per node object; tests turn it
// off to compare.
var draListKeptHeadOn = true

// draListKeptNodeCheck turns on keptFGDChoice's check of the node's
// object and figures; tests turn it off to show what it guards against.
var draListKeptNodeCheck = true
