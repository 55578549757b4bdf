package sim

import (
	"cmp"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// draFullestFirst is the DRA manager the framework's plugins get when
// DRA allocates a trace's GPUs under a policy (profile.Setup.WrapDRA): the
// same objects, but each GPU node's devices are listed to DRA's allocator
// fullest first (least capacity left; index order among equals). The
// allocator takes the first devices that hold a request, so it then takes
// the best fit: for a share, the GPU with the least left that holds it;
// for whole GPUs, the first fully free ones. That is the choice of GPUs
// of DotProd, GpuClustering, GpuPacking and BestFit, made by DRA's own
// allocation. Without a policy the order is the published one.
//
// Its slice lists are for one cycle at a time (the framework's
// parallelism is 1).
type draFullestFirst struct {
	fwk.SharedDRAManager
	m     *gpuDRAModel
	cache map[string]orderedSlice // by pool
}

// orderedSlice is a slice in fullest-first order, for as long as src and
// the capacity its devices have left are unchanged.
type orderedSlice struct {
	src  *resourceapi.ResourceSlice
	left []int64
	out  *resourceapi.ResourceSlice
}

func newDRAFullestFirst(m *gpuDRAModel) func(fwk.SharedDRAManager) fwk.SharedDRAManager {
	return func(inner fwk.SharedDRAManager) fwk.SharedDRAManager {
		return &draFullestFirst{SharedDRAManager: inner, m: m, cache: map[string]orderedSlice{}}
	}
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
// published order.
func (l fullestFirstLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	list, err := l.ResourceSliceLister.ListWithDeviceTaintRules()
	if err != nil || !l.d.m.hasPolicy {
		return list, err
	}
	state, err := l.d.SharedDRAManager.ResourceClaims().GatherAllocatedState()
	if err != nil {
		return list, nil
	}
	used := map[string]map[string]int64{} // pool: device: thousandths consumed
	for id, c := range state.AggregatedCapacity {
		q := c[traceGPUCapacity]
		if id.Driver.String() != traceGPUDriver || q == nil {
			continue
		}
		pool := id.Pool.String()
		if used[pool] == nil {
			used[pool] = map[string]int64{}
		}
		used[pool][id.Device.String()] += q.Value()
	}
	out := slices.Clone(list)
	for i, sl := range list {
		if u := used[sl.Spec.Pool.Name]; sl.Spec.Driver == traceGPUDriver && len(u) > 0 {
			out[i] = l.d.ordered(sl, u)
		}
	}
	return out, nil
}

// ordered returns sl with its devices fullest first, given what each has
// used; from the cache if neither changed. O(devices log devices).
func (d *draFullestFirst) ordered(sl *resourceapi.ResourceSlice, used map[string]int64) *resourceapi.ResourceSlice {
	left := make([]int64, len(sl.Spec.Devices))
	for i, dev := range sl.Spec.Devices {
		left[i] = 1000 - used[dev.Name]
		if q, ok := dev.Capacity[traceGPUCapacity]; ok {
			left[i] = q.Value.Value() - used[dev.Name]
		}
	}
	if c, ok := d.cache[sl.Spec.Pool.Name]; ok && c.src == sl && slices.Equal(c.left, left) {
		return c.out
	}
	idx := make([]int, len(left))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(left[a], left[b]) })
	c := *sl
	c.Spec.Devices = make([]resourceapi.Device, len(idx))
	for i, j := range idx {
		c.Spec.Devices[i] = sl.Spec.Devices[j]
	}
	d.cache[sl.Spec.Pool.Name] = orderedSlice{src: sl, left: left, out: &c}
	return &c
}
