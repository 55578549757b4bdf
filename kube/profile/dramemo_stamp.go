package profile

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
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
// NodeInfo and what the pod asks (NodeLists' terms), so the same
// stamp, generation and key still give the same answer. A lazy stamp is
// never equal to a stamp of a cycle that lists every slice.
type DRAStamp struct {
	slice *resourceapi.ResourceSlice
	pool  uint64
	lazy  bool
}

// DRAFilterKey returns what DynamicResources' answers in the cycle of cs
// depend on besides each node's DRAStamp (what the pod asks: its
// claims' specs and classes, its requests, the classes that serve
// extended resources), and true, if they may be kept from cycle to
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
	c := cycleMemo(cs)
	if c == nil || c.key == "" {
		return DRAStamp{}, false
	}
	g := c.pools[ni.Node().Name]
	if c.lazy {
		g = c.pub[ni.Node().Name]
	}
	pools := g.slices()
	switch {
	case len(pools) == 0:
		return DRAStamp{}, true
	case len(pools) > 1 || len(pools[0]) != 1:
		return DRAStamp{}, false
	}
	sl := pools[0][0]
	if !g.named {
		return DRAStamp{slice: sl, lazy: c.lazy}, true // nothing of it can be allocated
	}
	ver, ok := c.vers.PoolVersion(c.state, g.pool)
	return DRAStamp{slice: sl, pool: ver, lazy: c.lazy}, ok
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
