package profile

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// draMemo is kube-scheduler's DynamicResources with its Filter answered
// once per kind of node in a cycle. The structured allocator that Filter
// runs is a function of the pod's claims, the node's ResourceSlices and
// what is allocated of their devices, and of nothing else of the node
// when every claim is still to allocate and asks for devices Exactly
// (filterKey lists what it reads). Two nodes whose slices are alike up to
// their names and pools, with the same devices used alike, get the same
// answer; a cluster of a few kinds of nodes, such as a trace's GPU
// nodes, runs the allocator on a few nodes per cycle instead of on every
// node examined.
//
// A node answered from the memo has no allocation kept for Reserve, so
// Reserve runs the real Filter on the chosen node first: what is
// reserved and bound is always the allocator's own result for that node.
// Score needs none either: for claims of Exactly requests upstream's
// score is 0 on every node.
//
// Whenever a cycle is not of that kind (a claim allocated or reserved
// already, a request with alternatives, a slice that is not one node's),
// every call goes to upstream's plugin unchanged.
type draMemo struct {
	*dynamicresources.DynamicResources
	h fwk.Handle

	mu     sync.Mutex
	shapes map[*resourceapi.ResourceSlice]string // shape's name of each slice seen
	ids    map[string]string                     // shape's name of each spec seen, as JSON
	next   uint64                                // the last name given; never reused
}

// forget drops the shapes kept once they are many more than the n
// slices listed (slices replaced, or devices reordered): kept, they
// would hold every slice object ever seen. Names are never reused, so a
// cycle's keys made before stay apart from those made after.
func (d *draMemo) forget(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.shapes) > 2*n+1024 || len(d.ids) > 2*n+1024 {
		clear(d.shapes)
		clear(d.ids)
	}
}

// memoDRA wraps the registry's DynamicResources factory so that the
// plugin it builds is a draMemo.
func memoDRA(inner frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := inner(ctx, args, h)
		if err != nil {
			return nil, err
		}
		dr, ok := pl.(*dynamicresources.DynamicResources)
		if !ok || h.SharedDRAManager() == nil {
			return pl, nil
		}
		return &draMemo{DynamicResources: dr, h: h, shapes: map[*resourceapi.ResourceSlice]string{}, ids: map[string]string{}}, nil
	}
}

const draMemoKey fwk.StateKey = "schedq.io/dra-memo"

// draCycle is a cycle's memo: the slices of each node, what is used of
// each pool's devices, the answers by filterKey, and the nodes answered
// from the memo (which Reserve filters for real).
type draCycle struct {
	mu       sync.Mutex
	slices   map[string][]*resourceapi.ResourceSlice // by node name
	used     map[string]string                       // by driver/pool: its devices' uses (usesByPool)
	answers  map[string]memoAnswer
	answered map[string]bool
	buf      []byte
}

type memoAnswer struct {
	code    fwk.Code
	reasons []string
}

// Clone shares the memo: DynamicResources' answers do not depend on the
// pods of a NodeInfo (it has no AddPod or RemovePod), so a preemption's
// or a nominated pod's copy of the state gets the same answers.
func (c *draCycle) Clone() fwk.StateData { return c }

// PreFilter is upstream's, and starts the cycle's memo when the cycle
// is one it can serve. O(slices + allocated devices + the pod's claims).
func (d *draMemo) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	res, st := d.DynamicResources.PreFilter(ctx, cs, pod, nodes)
	if !st.IsSuccess() {
		return res, st
	}
	if c := d.newCycle(pod); c != nil {
		cs.Write(draMemoKey, c)
	}
	return res, st
}

// newCycle is the memo for pod's cycle, or nil if its answers could
// depend on more than filterKey reads.
func (d *draMemo) newCycle(pod *v1.Pod) *draCycle {
	m := d.h.SharedDRAManager()
	for i := range pod.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			return nil
		}
		claim, err := m.ResourceClaims().Get(pod.Namespace, *name)
		if err != nil || !plainClaim(claim) {
			return nil
		}
	}
	list, err := m.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil
	}
	d.forget(len(list))
	c := &draCycle{slices: map[string][]*resourceapi.ResourceSlice{}, answers: map[string]memoAnswer{}, answered: map[string]bool{}}
	for _, sl := range list {
		if sl.Spec.NodeName == nil || *sl.Spec.NodeName == "" {
			return nil
		}
		c.slices[*sl.Spec.NodeName] = append(c.slices[*sl.Spec.NodeName], sl)
	}
	state, err := m.ResourceClaims().GatherAllocatedState()
	if err != nil {
		return nil
	}
	c.used = usesByPool(state.AllocatedDevices.UnsortedList(), state.AllocatedSharedDeviceIDs.UnsortedList(), state.AggregatedCapacity)
	return c
}

// plainClaim reports whether claim is still to allocate, reserved for no
// one, and asks only Exactly requests.
func plainClaim(c *resourceapi.ResourceClaim) bool {
	if c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 {
		return false
	}
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly == nil || len(r.FirstAvailable) > 0 {
			return false
		}
	}
	return true
}

// Filter is upstream's Filter, or its answer on a node of the same
// filterKey earlier in the cycle. O(the node's devices) on a hit.
func (d *draMemo) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	c := cycleMemo(cs)
	if c == nil {
		return d.DynamicResources.Filter(ctx, cs, pod, ni)
	}
	key := d.filterKey(c, pod, ni)
	c.mu.Lock()
	a, ok := c.answers[key]
	if ok && a.code == fwk.Success {
		c.answered[ni.Node().Name] = true
	}
	c.mu.Unlock()
	if ok {
		if a.code == fwk.Success {
			return nil
		}
		return fwk.NewStatus(a.code, a.reasons...)
	}
	st := d.DynamicResources.Filter(ctx, cs, pod, ni)
	if st.Code() != fwk.Error {
		a := memoAnswer{code: st.Code()}
		if st != nil {
			a.reasons = st.Reasons()
		}
		c.mu.Lock()
		c.answers[key] = a
		c.mu.Unlock()
	}
	return st
}

// Reserve filters the chosen node for real if the memo answered it, so
// that upstream's Reserve has the allocator's result for it, then is
// upstream's.
func (d *draMemo) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if c := cycleMemo(cs); c != nil {
		c.mu.Lock()
		answered := c.answered[nodeName]
		delete(c.answered, nodeName)
		c.mu.Unlock()
		if answered {
			ni, err := d.h.SnapshotSharedLister().NodeInfos().Get(nodeName)
			if err != nil {
				return fwk.AsStatus(err)
			}
			if st := d.DynamicResources.Filter(ctx, cs, pod, ni); !st.IsSuccess() {
				return st
			}
		}
	}
	return d.DynamicResources.Reserve(ctx, cs, pod, nodeName)
}

func cycleMemo(cs fwk.CycleState) *draCycle {
	v, err := cs.Read(draMemoKey)
	if err != nil {
		return nil
	}
	c, _ := v.(*draCycle)
	return c
}

// filterKey is what upstream's Filter reads of the node for a pod whose
// claims are plain (newCycle): each of its slices' specs without node
// and pool names, what is used of each pool's devices, and which
// extended resources the node has allocatable and whether each is zero
// (DRA serves an extended resource the pod asks for only where the node
// has none). The slices are
// sorted, so the order the lister gives them in does not matter. O(the
// node's devices), one allocation per new key.
func (d *draMemo) filterKey(c *draCycle, pod *v1.Pod, ni fwk.NodeInfo) string {
	node := ni.Node()
	var parts []string
	for _, sl := range c.slices[node.Name] {
		parts = append(parts, d.shape(sl)+"\x00"+c.used[sl.Spec.Driver+"/"+sl.Spec.Pool.Name])
	}
	if len(parts) > 1 {
		slices.Sort(parts)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf[:0]
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 1)
	}
	alloc := ni.GetAllocatable().GetScalarResources()
	names := make([]string, 0, len(alloc))
	for name := range alloc {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		b = append(b, name...)
		b = strconv.AppendBool(append(b, '='), alloc[v1.ResourceName(name)] == 0)
		b = append(b, 2)
	}
	c.buf = b
	return string(b)
}

// shape names sl's spec without its node name and pool name: specs
// alike get one name, a short decimal number. Computed once per slice
// object (O(its devices) then, O(1) after). Concurrency-safe.
func (d *draMemo) shape(sl *resourceapi.ResourceSlice) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.shapes[sl]; ok {
		return s
	}
	spec := sl.Spec
	spec.NodeName, spec.Pool.Name = nil, ""
	b, err := json.Marshal(spec)
	if err != nil {
		b = []byte("\x00" + sl.Name) // alike no other slice
	}
	id, ok := d.ids[string(b)]
	if !ok {
		d.next++
		id = strconv.FormatUint(d.next, 10)
		d.ids[string(b)] = id
	}
	d.shapes[sl] = id
	return id
}

// usesByPool lists, by driver/pool, what is used of each device: taken
// whole, its number of shares, and the capacity its shares consume;
// sorted and joined. O(allocated devices log).
func usesByPool(whole []structured.DeviceID, shared []structured.SharedDeviceID, consumed structured.ConsumedCapacityCollection) map[string]string {
	lists := map[string][]string{}
	add := func(driver, pool, use string) {
		k := driver + "/" + pool
		lists[k] = append(lists[k], use)
	}
	for _, id := range whole {
		add(id.Driver.String(), id.Pool.String(), id.Device.String()+"!")
	}
	shares := map[structured.DeviceID]int{}
	for _, id := range shared {
		shares[structured.DeviceID{Driver: id.Driver, Pool: id.Pool, Device: id.Device}]++
	}
	for id, n := range shares {
		add(id.Driver.String(), id.Pool.String(), id.Device.String()+"#"+strconv.Itoa(n))
	}
	for id, caps := range consumed {
		names := make([]string, 0, len(caps))
		for name := range caps {
			names = append(names, string(name))
		}
		slices.Sort(names)
		use := id.Device.String() + ":"
		for _, name := range names {
			use += name + "=" + caps[resourceapi.QualifiedName(name)].String() + ","
		}
		add(id.Driver.String(), id.Pool.String(), use)
	}
	out := make(map[string]string, len(lists))
	for k, l := range lists {
		slices.Sort(l)
		out[k] = strings.Join(l, "\x00")
	}
	return out
}
