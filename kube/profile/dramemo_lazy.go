package profile

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// DRANodeLister is a DRA manager (Setup.WrapDRA's) whose slice list is
// the published slices, each given as it is or replaced by one of its
// own (its devices in another order, say), slice by slice, and which
// can give one slice so on its own. DynamicResources' memo then lists a
// cycle's slices node by node, for the nodes it runs upstream's
// allocator on, instead of listing, ordering and grouping every slice
// and building the allocator over all of them in every cycle (a lazy
// cycle, draMemo.lazyPlan).
type DRANodeLister interface {
	// PublishedSlices lists the slices the manager's list is made
	// from: the DRA manager's slice tracker's list, the same slice
	// objects for as long as the tracker sends no event (lazyPlan
	// then keeps their grouping without asking, where it counts the
	// tracker's events).
	PublishedSlices() ([]*resourceapi.ResourceSlice, error)
	// NodeLists is asked, by the slice list that follows a gather of
	// state in DynamicResources' PreFilter, instead of that list,
	// whether NodeSlice serves the cycle: for the pod noted
	// (Setup.NotePod), the list would give each published slice as
	// NodeSlice gives it, and what NodeSlice gives is a function of
	// the published slice object, what state holds of its pool's
	// devices, its node's NodeInfo in the snapshot and the pod's
	// requests (its signature without claims, which the scheduler's memo
	// keys verdicts by besides DRAFilterKey), and of
	// nothing else. If so the manager takes state as its list would
	// have (a later list gathers its own).
	NodeLists(state *structured.AllocatedState) bool
	// NodeSlice is sl as the manager's list would give it in state for
	// the pod noted, within the cycle NodeLists said yes for.
	NodeSlice(sl *resourceapi.ResourceSlice, state *structured.AllocatedState) *resourceapi.ResourceSlice
}

// draLazyOn turns on lazy cycles; tests turn it off to compare with the
// cycles that list every slice.
var draLazyOn = true

// draLazyForce, set by tests, makes lazyPlan serve a cycle whose
// published slices fail the memo's preconditions (a pool on several
// nodes), to show what the preconditions guard against.
var draLazyForce bool

// lazyPlan is what a lazy cycle starts from: what the pod asks (asksOf),
// and the published slices grouped by node and pool, with their number.
type lazyPlan struct {
	asks string
	pub  map[string]*nodeSlices
	tok  *grouping // pub's identity (pubPoolsOf); nil for a grouping made for this plan alone
	n    int
}

// lazyPlan is the plan of a lazy cycle for pod, or nil if the cycle
// cannot be lazy: the manager is not a DRANodeLister; a score plugin
// lists the slices itself (scoresDRA: while a lazy cycle's Filter or
// Reserve restricts the tap's list to a node's, a cycle run
// concurrently on the same framework would read that); what the pod asks
// is not the memo's to answer (asksOf); some DeviceClass serves
// extended resources (upstream's PreFilter then makes a claim of its
// own, with a UID of its own, in every run); or the published slices
// are not each one node's, each pool on one node (the allocator's
// answer for a node then reads other nodes' slices: a pool's
// completeness and its newest generation). When the plan holds,
// upstream's allocator for a node reads, of the slices, only that
// node's: its Allocate takes the node's slices and the slices without a
// node (none here), and reads the whole list only to count a pool's
// slices when the node's are fewer than the pool's count (the pool's
// other slices, on the same node here). The published slices are
// listed and checked only if the slice tracker sent an event since the
// last list, or its events are not counted (pubKept). O(1), else
// O(published slices) map look-ups; plus asksOf's cost.
func (d *draMemo) lazyPlan(pod *v1.Pod) *lazyPlan {
	nl := d.tap.nodeLister()
	if !draLazyOn || nl == nil || d.tap.scoresDRA || asksNoDevices(pod) {
		return nil
	}
	asks, ext, ok := d.asksOfExt(pod)
	if !ok || ext {
		return nil
	}
	count, counted := d.tap.publishedCount()
	if counted {
		if pools, tok, n, ok := d.pubKept(count); ok {
			return &lazyPlan{asks: asks, pub: pools, tok: tok, n: n}
		}
	}
	pub, err := nl.PublishedSlices()
	if err != nil {
		return nil
	}
	pools, tok, ok := d.pubPoolsOf(pub, count, counted)
	if !ok {
		if !draLazyForce {
			return nil
		}
		pools, tok = forcedPools(pub), nil
	}
	return &lazyPlan{asks: asks, pub: pools, tok: tok, n: len(pub)}
}

// asksNoDevices reports whether pod has no ResourceClaim and asks for no
// extended resource, nor a DeviceClass by its implicit name (either of
// which a DeviceClass could serve): upstream's
// PreFilter then skips the pod before it lists a slice, so no plan is
// made for it. O(containers x resources).
func asksNoDevices(pod *v1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return false
	}
	ext := func(l v1.ResourceList) bool {
		for name := range l {
			// A class's implicit name is in the kubernetes.io domain, which
			// IsExtendedResourceName counts as native.
			if v1helper.IsExtendedResourceName(name) || strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix) {
				return true
			}
		}
		return false
	}
	if ext(pod.Spec.Overhead) || pod.Spec.Resources != nil && (ext(pod.Spec.Resources.Requests) || ext(pod.Spec.Resources.Limits)) {
		return false
	}
	for _, ctrs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range ctrs {
			if ext(ctrs[i].Resources.Requests) || ext(ctrs[i].Resources.Limits) {
				return false
			}
		}
	}
	return true
}

// forcedPools groups the slices by node and pool whatever their pools
// span (draLazyForce). O(slices).
func forcedPools(list []*resourceapi.ResourceSlice) map[string]*nodeSlices {
	type key struct{ node, driver, pool string }
	byPool := map[key][]*resourceapi.ResourceSlice{}
	var order []key
	for _, sl := range list {
		k := key{*sl.Spec.NodeName, sl.Spec.Driver, sl.Spec.Pool.Name}
		if byPool[k] == nil {
			order = append(order, k)
		}
		byPool[k] = append(byPool[k], sl)
	}
	byNode := map[string][][]*resourceapi.ResourceSlice{}
	for _, k := range order {
		byNode[k.node] = append(byNode[k.node], byPool[k])
	}
	out := map[string]*nodeSlices{}
	for n, g := range byNode {
		out[n] = groupOf(g)
	}
	return out
}

// pubKept is the kept grouping of the published slices (pubPoolsOf),
// its identity and the number of slices, and true, if it was made or
// checked on a list read after the slice tracker's event count was
// count (draTap.publishedCount), every slice in it once, and the slices
// meet the memo's preconditions: the tracker lists the same slice
// objects then, and no list is needed. O(1).
func (d *draMemo) pubKept(count uint64) (map[string]*nodeSlices, *grouping, int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.pubCounted || d.pubCount != count || d.pubSet == nil || !d.pubOK {
		return nil, nil, 0, false
	}
	return d.pubPools, d.pubTok, len(d.pubSet), true
}

// pubPoolsOf is groupSlices(list), kept while the list holds the same
// slice objects, each once, in any order (the tracker lists them in no
// fixed order), with the kept grouping's identity: a grouping made
// afresh gets a new one. count is the slice tracker's event count read
// before list was, if counted (pubKept). O(slices) map look-ups,
// O(slices) more when they changed.
func (d *draMemo) pubPoolsOf(list []*resourceapi.ResourceSlice, count uint64, counted bool) (map[string]*nodeSlices, *grouping, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pubCount, d.pubCounted = count, counted
	if d.pubSet != nil && len(list) == len(d.pubSet) {
		d.pubSeen++
		same := true
		for _, sl := range list {
			if v, ok := d.pubSet[sl]; !ok || v == d.pubSeen {
				same = false
				break
			}
			d.pubSet[sl] = d.pubSeen
		}
		if same {
			return d.pubPools, d.pubTok, d.pubOK
		}
	}
	d.pubPools, d.pubOK = groupSlices(list)
	d.pubTok = &grouping{}
	d.pubSeen = 0
	d.pubSet = make(map[*resourceapi.ResourceSlice]uint64, len(list))
	for _, sl := range list {
		d.pubSet[sl] = 0
	}
	if len(d.pubSet) != len(list) {
		d.pubSet = nil // a slice listed twice: grouped afresh each time
	}
	return d.pubPools, d.pubTok, d.pubOK
}

// newLazyCycle is the memo of a lazy cycle (plan's), whose upstream
// PreFilter built its allocator over no slice: every answer is the
// memo's or lazyFilter's, and Reserve filters the chosen node for real
// first. O(1).
func (d *draMemo) newLazyCycle(plan *lazyPlan, state *structured.AllocatedState) *draCycle {
	c := d.startCycle(plan.asks, plan.n, nil, state)
	c.lazy, c.pub, c.pubTok, c.lists = true, plan.pub, plan.tok, map[string]*nodeSlices{}
	return c
}

// group is the slices of node as the cycle's allocator sees them, by
// pool: in a lazy cycle, the node's published slices as the manager
// lists them (DRANodeLister.NodeSlice), made at the first call for the
// node in the cycle; otherwise the grouping of the cycle's list. nil
// for a node without slices. O(1), O(the node's slices) at a lazy
// cycle's first call for the node. Lock order: c.mu, then the memo's
// pre (never held when group is called).
func (c *draCycle) group(node string) *nodeSlices {
	if !c.lazy {
		return c.pools[node]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.lists[node]; ok {
		return g
	}
	pub := c.pub[node]
	g := pub
	if pub != nil {
		// The manager's lists are made under pre, as its full list is
		// in upstream's PreFilter.
		c.memo.pre.Lock()
		defer c.memo.pre.Unlock()
		nl := c.memo.tap.nodeLister()
		// The lists are copied only from the first slice the lister
		// gives otherwise: most nodes' are the published ones.
		var pools [][]*resourceapi.ResourceSlice // nil while every slice is the same
		for i, pool := range pub.pools {
			var row []*resourceapi.ResourceSlice // nil while pool's slices are the same
			for j, sl := range pool {
				o := nl.NodeSlice(sl, c.state)
				if o != sl && row == nil {
					row = make([]*resourceapi.ResourceSlice, len(pool))
					copy(row, pool[:j])
				}
				if row != nil {
					row[j] = o
				}
			}
			if row != nil && pools == nil {
				pools = make([][]*resourceapi.ResourceSlice, len(pub.pools))
				for k := range i {
					pools[k] = append(make([]*resourceapi.ResourceSlice, 0, len(pub.pools[k])), pub.pools[k]...)
				}
			}
			if pools != nil {
				if row == nil {
					row = append(make([]*resourceapi.ResourceSlice, 0, len(pool)), pool...)
				}
				pools[i] = row
			}
		}
		if pools != nil {
			g = pub.derivedLike(pools)
		}
	}
	c.lists[node] = g
	return g
}

// derivedLike is groupLike(pools, g) for the slices the lister gave for
// g's (group), or, for a node of one slice, the grouping made last time
// the lister gave that same object: made once per object the lister
// gives instead of once per cycle and node. Called with the memo's pre
// held, which guards derived. O(1).
func (g *nodeSlices) derivedLike(pools [][]*resourceapi.ResourceSlice) *nodeSlices {
	one := len(pools) == 1 && len(pools[0]) == 1
	if one && draDerivedKeptOn && g.derived != nil && g.derivedOf == pools[0][0] {
		return g.derived
	}
	out := groupLike(pools, g)
	if one {
		g.derived, g.derivedOf = out, pools[0][0]
	}
	return out
}

// draDerivedKeptOn turns on derivedLike's keep; tests turn it off to
// compare.
var draDerivedKeptOn = true

// restrictedPreFilter runs upstream's PreFilter for pod on cs with the
// slice list restricted to node's (group) and the cycle's allocated
// state: the allocator it builds is the one upstream's PreFilter would
// build, for that node (lazyPlan). O(the node's slices + the pod's
// claims).
func (d *draMemo) restrictedPreFilter(ctx context.Context, c *draCycle, cs fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	var only []*resourceapi.ResourceSlice
	for _, pool := range c.group(node).slices() {
		only = append(only, pool...)
	}
	d.pre.Lock()
	defer d.pre.Unlock()
	d.tap.restrict(only, c.state)
	defer d.tap.unrestrict()
	_, st := d.DynamicResources.PreFilter(ctx, cs, pod, nil)
	return st
}

// lazyFilter is upstream's Filter of pod on ni in a lazy cycle: on a
// cycle state of its own, after upstream's PreFilter restricted to ni's
// slices (restrictedPreFilter). What it keeps for Reserve is dropped:
// Reserve filters the chosen node again on the cycle's state.
func (d *draMemo) lazyFilter(ctx context.Context, c *draCycle, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	fresh := fwframework.NewCycleState()
	if st := d.restrictedPreFilter(ctx, c, fresh, pod, ni.Node().Name); !st.IsSuccess() {
		return st
	}
	return d.DynamicResources.Filter(ctx, fresh, pod, ni)
}

// scoresDRA reports whether a score plugin of prof may read the DRA
// manager's slices and allocated state itself: NodeResourcesFit's or
// NodeResourcesBalancedAllocation's args name a resource that a
// DeviceClass may back (any but the node's own, schedutil's
// IsDRAExtendedResourceName). O(the plugins' args).
func scoresDRA(prof *config.KubeSchedulerProfile) bool {
	var specs []config.ResourceSpec
	for _, pc := range prof.PluginConfig {
		switch a := pc.Args.(type) {
		case *config.NodeResourcesFitArgs:
			if a.ScoringStrategy != nil {
				specs = append(specs, a.ScoringStrategy.Resources...)
			}
		case *config.NodeResourcesBalancedAllocationArgs:
			specs = append(specs, a.Resources...)
		}
	}
	for _, r := range specs {
		if schedutil.IsDRAExtendedResourceName(v1.ResourceName(r.Name)) {
			return true
		}
	}
	return false
}
