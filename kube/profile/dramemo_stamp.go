package profile

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	dra "k8s.io/dynamic-resource-allocation/api"
	fwk "k8s.io/kube-scheduler/framework"
)

// DRAStamp is what DynamicResources' answer on a node reads in a cycle
// besides the node's NodeInfo and what the pod asks (DRAFilterKey): the
// node's one ResourceSlice object (nil on a node without slices) and the
// DRA manager's count of the changes of that slice's pool in the
// allocated state (PoolVersioner). Two cycles of the same key that see a
// node of the same NodeInfo generation and the same stamp get the same
// answer from DynamicResources there: the allocator reads nothing else
// of the node (filterKey), a slice object is never changed in place, and
// the count is another once anything allocated on the pool changed.
// Comparable.
//
// In a lazy cycle (DRANodeLister) the slice is the published one, and
// the stamp is marked lazy: the slice the allocator is given there is
// a function of the published slice, its pool's count, the node's
// NodeInfo and the pod's requests (NodeLists' terms), so the same
// stamp, generation, key and signature without claims (which holds the
// requests, where DRAFilterKey may not) still give the same answer. A lazy stamp is
// never equal to a stamp of a cycle that lists every slice.
type DRAStamp struct {
	slice *resourceapi.ResourceSlice
	pool  uint64
	lazy  bool
}

// DRAFilterKey returns what DynamicResources' answers in the cycle of cs
// depend on besides each node's DRAStamp and the pod's requests (what
// the pod asks: its claims' specs and classes, the classes that serve
// extended resources, and its requests only if there are such classes:
// asksOf), and true, if they may be kept from cycle to
// cycle node by node: DynamicResources' memo serves the cycle (every
// claim still to allocate, each node's slices its own, not a PodGroup's
// cycle) and the allocated state is the one the DRA manager keeps and
// counts the changes of (the simulator's). False otherwise, and on a
// real cluster, whose DRA manager counts nothing. O(1).
func DRAFilterKey(cs fwk.CycleState) (string, bool) {
	c := cycleMemo(cs)
	if c == nil || c.key == "" {
		return "", false
	}
	return c.key, true
}

// DRANodeStamp returns ni's DRAStamp in the cycle of cs, and true, if
// DRAFilterKey serves the cycle and ni has no slice or one of a pool of
// its own; false otherwise (several slices or pools: not kept). O(1).
func DRANodeStamp(cs fwk.CycleState, ni fwk.NodeInfo) (DRAStamp, bool) {
	s, ok := DRAStamperOf(cs)
	if !ok {
		return DRAStamp{}, false
	}
	return s.c.stamp(s.c.stampOf(ni))
}

// DRAStamper gives the DRAStamps of a cycle's nodes: DRANodeStamp's,
// with the cycle read once (DRAStamperOf) instead of at each node.
type DRAStamper struct{ c *draCycle }

// DRAStamperOf returns the stamper of the cycle of cs, and true, if
// DRAFilterKey serves the cycle; false otherwise. O(1).
func DRAStamperOf(cs fwk.CycleState) (DRAStamper, bool) {
	c := cycleMemo(cs)
	if c == nil || c.key == "" {
		return DRAStamper{}, false
	}
	return DRAStamper{c}, true
}

// Stamp is DRANodeStamp(cs, ni) for the cycle of s, ni of generation
// gen at place at of the list the cycle filters. What the stamp reads
// of the node's published slices in a lazy cycle is kept in front at
// that place, with ni, gen and the published grouping it was read from
// (DRAStampFront), and read from there while all three are the same:
// no look-up by the node's name. O(1).
func (s DRAStamper) Stamp(ni fwk.NodeInfo, gen int64, at int, front *DRAStampFront) (DRAStamp, bool) {
	c := s.c
	if !c.lazy || c.pubTok == nil || front == nil || at < 0 {
		return c.stamp(c.stampOf(ni))
	}
	if at < len(front.at) {
		if p := &front.at[at]; p.ni == ni && p.gen == gen && p.tok == c.pubTok {
			return c.stamp(p.src)
		}
	}
	src := c.stampOf(ni)
	if at >= len(front.at) {
		front.at = append(front.at, make([]stampPlace, at+1-len(front.at))...)
	}
	front.at[at] = stampPlace{ni: ni, gen: gen, tok: c.pubTok, src: src}
	return c.stamp(src)
}

// DRAStampFront keeps, by a node's place in the list a scheduling
// loop's cycles filter, what DRAStamper.Stamp read of the node's
// published slices. A place answers only for the NodeInfo object, the
// generation and the published grouping it was read for: kube-scheduler
// gives each content of a node a generation of its own in the process,
// name included, and a grouping is kept while the published slices are
// the same objects (pubPoolsOf), so a stale place is read again, never
// wrongly. Not safe for concurrent use: one per scheduling loop and
// framework. The zero value is empty.
type DRAStampFront struct {
	at []stampPlace
}

type stampPlace struct {
	ni  fwk.NodeInfo
	gen int64
	tok *grouping
	src stampSrc
}

// grouping names one grouping of the published slices by node
// (draMemo.pubTok). Not of zero size, so that two are never one.
type grouping struct{ _ byte }

// stampSrc is what a node's DRAStamp reads of its slices: none (a node
// without slices), one slice of a pool of its own (pool named if the
// slice has devices, with the cell of its count if the cycle's
// PoolVersioner has one: PoolVersionCeller), or several (not kept).
type stampSrc struct {
	kind  uint8 // srcNone, srcOne, srcMany
	named bool
	sl    *resourceapi.ResourceSlice
	pool  dra.UniqueString
	cell  *uint64
}

const (
	srcNone uint8 = iota
	srcOne
	srcMany
)

// stampOf is what ni's DRAStamp reads of its slices in cycle c. O(1): a
// look-up by ni's name.
func (c *draCycle) stampOf(ni fwk.NodeInfo) stampSrc {
	g := c.pools[ni.Node().Name]
	if c.lazy {
		g = c.pub[ni.Node().Name]
	}
	pools := g.slices()
	switch {
	case len(pools) == 0:
		return stampSrc{kind: srcNone}
	case len(pools) > 1 || len(pools[0]) != 1:
		return stampSrc{kind: srcMany}
	}
	src := stampSrc{kind: srcOne, named: g.named, sl: pools[0][0], pool: g.pool}
	if cs, ok := c.vers.(PoolVersionCeller); ok && g.named {
		src.cell = cs.PoolVersionCell(g.pool)
	}
	return src
}

// stamp is the DRAStamp of a node whose slices src says, in cycle c,
// and true; false for a node of several slices or pools, or a pool
// whose count the manager does not know. The count is read from src's
// cell if it has one: c's state is its manager's kept one (the key is
// set only then, startCycle), for which PoolVersion reads that cell.
// O(1).
func (c *draCycle) stamp(src stampSrc) (DRAStamp, bool) {
	switch {
	case src.kind == srcNone:
		return DRAStamp{}, true
	case src.kind == srcMany:
		return DRAStamp{}, false
	case !src.named:
		return DRAStamp{slice: src.sl, lazy: c.lazy}, true // nothing of it can be allocated
	case src.cell != nil && c.key != "":
		return DRAStamp{slice: src.sl, pool: *src.cell, lazy: c.lazy}, true
	}
	ver, ok := c.vers.PoolVersion(c.state, src.pool)
	return DRAStamp{slice: src.sl, pool: ver, lazy: c.lazy}, ok
}

// SignWithoutClaims is SignPod's signature of pod with its resource
// claims left out (the spec's claims and the status' claim names): the
// signature of what every plugin but DynamicResources reads of pod
// (which refuses to sign a pod with claims), for a memo of filter
// verdicts keyed with DRAFilterKey besides. Never a batch's signature:
// pods with claims are not batched. Nil for a pod whose extended
// resources' claim is named already, and where SignPod gives nil.
// O(SignPod).
func (f *Framework) SignWithoutClaims(ctx context.Context, pod *v1.Pod) fwk.PodSignature {
	if pod.Status.ExtendedResourceClaimStatus != nil {
		return nil
	}
	if len(pod.Spec.ResourceClaims) == 0 && len(pod.Status.ResourceClaimStatuses) == 0 {
		return f.SignPod(ctx, pod)
	}
	p := *pod
	p.Spec.ResourceClaims, p.Status.ResourceClaimStatuses = nil, nil
	return f.SignPod(ctx, &p)
}
