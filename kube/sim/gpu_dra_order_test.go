package sim

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/gpu"
)

// stepDRA is a DRA manager whose allocated state and slice list a test
// sets between calls: GatherAllocatedState returns state, or fails if
// gatherErr; ListWithDeviceTaintRules returns slices, or fails if
// listErr.
type stepDRA struct {
	fwk.SharedDRAManager
	state     *structured.AllocatedState
	gatherErr bool
	slices    []*resourceapi.ResourceSlice
	listErr   bool
}

func (s *stepDRA) ResourceClaims() fwk.ResourceClaimTracker { return stepClaims{s: s} }
func (s *stepDRA) ResourceSlices() fwk.ResourceSliceLister  { return stepSlices{s: s} }

type stepClaims struct {
	fwk.ResourceClaimTracker
	s *stepDRA
}

func (c stepClaims) GatherAllocatedState() (*structured.AllocatedState, error) {
	if c.s.gatherErr {
		return nil, errors.New("concurrent modification")
	}
	return c.s.state, nil
}

type stepSlices struct {
	fwk.ResourceSliceLister
	s *stepDRA
}

func (l stepSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	if l.s.listErr {
		return nil, errors.New("listing failed")
	}
	return l.s.slices, nil
}

// usedState is an allocated state in which node's device gpu-i has
// consumed milli thousandths, for each i: milli given.
func usedState(node string, used map[int]int64) *structured.AllocatedState {
	st := &structured.AllocatedState{AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	for i, milli := range used {
		q := resource.NewQuantity(milli, resource.DecimalSI)
		id := structured.MakeDeviceID(traceGPUDriver, node, "gpu-"+strconv.Itoa(i))
		st.AggregatedCapacity[id] = structured.ConsumedCapacity{traceGPUCapacity: q}
	}
	return st
}

// deviceNames lists the names of a slice's devices in its order.
func deviceNames(sl *resourceapi.ResourceSlice) []string {
	var out []string
	for _, d := range sl.Spec.Devices {
		out = append(out, d.Name)
	}
	return out
}

// TestFullestFirstReadsOnlyTheStateJustGathered: the fullest-first lister
// reads the allocated state gathered just before it, and never one that
// an earlier gather left behind: after a list that failed, or after a
// gather that failed, the next list orders the devices by the state as it
// is now (here: nothing used, so the published order), not by the state
// of before (gpu-1 used, so gpu-1 first).
func TestFullestFirstReadsOnlyTheStateJustGathered(t *testing.T) {
	sl := gpuSlice("n1", "V100", 2)
	before := usedState("n1", map[int]int64{1: 700})
	now := usedState("n1", nil)
	for _, tc := range []struct {
		name string
		// steps run on the manager m, over the underlying one s,
		// before the list checked; they end with s's state as now.
		steps func(m fwk.SharedDRAManager, s *stepDRA)
	}{
		{"a list that failed after its gather", func(m fwk.SharedDRAManager, s *stepDRA) {
			s.state = before
			if _, err := m.ResourceClaims().GatherAllocatedState(); err != nil {
				t.Fatal(err)
			}
			s.listErr = true
			if _, err := m.ResourceSlices().ListWithDeviceTaintRules(); err == nil {
				t.Fatal("the list did not fail")
			}
			s.listErr, s.state = false, now
		}},
		{"a gather that failed after one no list read", func(m fwk.SharedDRAManager, s *stepDRA) {
			s.state = before
			if _, err := m.ResourceClaims().GatherAllocatedState(); err != nil {
				t.Fatal(err)
			}
			s.gatherErr = true
			if _, err := m.ResourceClaims().GatherAllocatedState(); err == nil {
				t.Fatal("the gather did not fail")
			}
			s.gatherErr, s.state = false, now
		}},
		{"a gather and its list, then a list alone", func(m fwk.SharedDRAManager, s *stepDRA) {
			s.state = before
			if _, err := m.ResourceClaims().GatherAllocatedState(); err != nil {
				t.Fatal(err)
			}
			list, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				t.Fatal(err)
			}
			if got := deviceNames(list[0]); !slices.Equal(got, []string{"gpu-1", "gpu-0"}) {
				t.Fatalf("the list after its gather has the devices %v, want gpu-1 (700 used) first", got)
			}
			s.state = now
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stepDRA{slices: []*resourceapi.ResourceSlice{sl}}
			model := &gpuDRAModel{policy: gpu.BestFit, hasPolicy: true}
			m := newDRAFullestFirst(model)(s).Manager
			tc.steps(m, s)
			list, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				t.Fatal(err)
			}
			if got := deviceNames(list[0]); !slices.Equal(got, []string{"gpu-0", "gpu-1"}) {
				t.Fatalf("devices listed %v: the order of a state gathered before, want gpu-0, gpu-1 (nothing used now)", got)
			}
		})
	}
}

// TestFullestFirstOrdersByWhatIsUsed: the lister reads what each device
// has left from the state (its capacity, 1000 if it declares none, less
// what the trace driver's claims consume of it) and lists a GPU slice in
// its own order only if some device of its pool has thousandths
// consumed.
func TestFullestFirstOrdersByWhatIsUsed(t *testing.T) {
	withUse := func(st *structured.AllocatedState, driver, pool, dev string, c structured.ConsumedCapacity) *structured.AllocatedState {
		st.AggregatedCapacity[structured.MakeDeviceID(driver, pool, dev)] = c
		return st
	}
	milli := func(v int64) structured.ConsumedCapacity {
		return structured.ConsumedCapacity{traceGPUCapacity: resource.NewQuantity(v, resource.DecimalSI)}
	}
	for _, tc := range []struct {
		name  string
		slice func() *resourceapi.ResourceSlice
		state *structured.AllocatedState
		want  []string
	}{
		{name: "nothing used: the published order", slice: func() *resourceapi.ResourceSlice { return gpuSlice("n1", "V100", 3) },
			state: usedState("n1", nil), want: []string{"gpu-0", "gpu-1", "gpu-2"}},
		{name: "the least left first", slice: func() *resourceapi.ResourceSlice { return gpuSlice("n1", "V100", 3) },
			state: usedState("n1", map[int]int64{1: 300, 2: 700}), want: []string{"gpu-2", "gpu-1", "gpu-0"}},
		{name: "a device's own capacity", slice: func() *resourceapi.ResourceSlice {
			sl := gpuSlice("n1", "V100", 3)
			sl.Spec.Devices[0].Capacity[traceGPUCapacity] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(400, resource.DecimalSI)}
			return sl
		}, state: usedState("n1", map[int]int64{1: 300}), want: []string{"gpu-0", "gpu-1", "gpu-2"}},
		{name: "a device without capacity holds 1000", slice: func() *resourceapi.ResourceSlice {
			sl := gpuSlice("n1", "V100", 3)
			delete(sl.Spec.Devices[2].Capacity, traceGPUCapacity)
			sl.Spec.Devices[0].Capacity[traceGPUCapacity] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(2000, resource.DecimalSI)}
			return sl
		}, state: usedState("n1", map[int]int64{1: 100}), want: []string{"gpu-1", "gpu-2", "gpu-0"}},
		{name: "use on another node's pool", slice: func() *resourceapi.ResourceSlice { return gpuSlice("n1", "V100", 2) },
			state: usedState("n2", map[int]int64{1: 700}), want: []string{"gpu-0", "gpu-1"}},
		{name: "another driver's use of a pool of the same name", slice: func() *resourceapi.ResourceSlice { return gpuSlice("n1", "V100", 2) },
			state: withUse(usedState("n1", nil), "other.example.com", "n1", "gpu-1", milli(700)), want: []string{"gpu-0", "gpu-1"}},
		{name: "use of another capacity", slice: func() *resourceapi.ResourceSlice { return gpuSlice("n1", "V100", 2) },
			state: withUse(usedState("n1", nil), traceGPUDriver, "n1", "gpu-1",
				structured.ConsumedCapacity{"memory": resource.NewQuantity(700, resource.DecimalSI)}), want: []string{"gpu-0", "gpu-1"}},
		{name: "use of a device the slice lacks, and of one it has", slice: func() *resourceapi.ResourceSlice { return gpuSlice("n1", "V100", 2) },
			state: withUse(usedState("n1", map[int]int64{1: 100}), traceGPUDriver, "n1", "gpu-9", milli(900)), want: []string{"gpu-1", "gpu-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stepDRA{slices: []*resourceapi.ResourceSlice{tc.slice()}, state: tc.state}
			m := newDRAFullestFirst(&gpuDRAModel{policy: gpu.BestFit, hasPolicy: true})(s).Manager
			list, err := m.ResourceSlices().ListWithDeviceTaintRules()
			if err != nil {
				t.Fatal(err)
			}
			if got := deviceNames(list[0]); !slices.Equal(got, tc.want) {
				t.Errorf("devices listed %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFullestFirstListsAnOrderAsOneObject: a slice listed in an order it
// was listed in before, even with another order in between, is the same
// object as then (DynamicResources' memo reads each slice object once); a
// new slice object, or a new order, is another.
func TestFullestFirstListsAnOrderAsOneObject(t *testing.T) {
	sl := gpuSlice("n1", "V100", 2)
	s := &stepDRA{slices: []*resourceapi.ResourceSlice{sl}}
	m := newDRAFullestFirst(&gpuDRAModel{policy: gpu.BestFit, hasPolicy: true})(s).Manager
	list := func(used map[int]int64) *resourceapi.ResourceSlice {
		t.Helper()
		s.state = usedState("n1", used)
		l, err := m.ResourceSlices().ListWithDeviceTaintRules()
		if err != nil {
			t.Fatal(err)
		}
		return l[0]
	}
	first := list(map[int]int64{1: 300})
	if again := list(map[int]int64{1: 500}); again != first {
		t.Error("the same order, listed again: another object")
	}
	other := list(map[int]int64{0: 300})
	if other == first || !slices.Equal(deviceNames(other), []string{"gpu-0", "gpu-1"}) {
		t.Errorf("another order: devices %v, same object %v; want gpu-0 first, another object", deviceNames(other), other == first)
	}
	if back := list(map[int]int64{1: 300}); back != first {
		t.Error("the first order again, after another: another object")
	}
	s.slices = []*resourceapi.ResourceSlice{gpuSlice("n1", "V100", 2)}
	if renewed := list(map[int]int64{1: 300}); renewed == first || !slices.Equal(deviceNames(renewed), []string{"gpu-1", "gpu-0"}) {
		t.Errorf("a new slice object: devices %v, same object as the old one's %v", deviceNames(renewed), renewed == first)
	}
}

// snapHandle is a framework handle whose only part is a snapshot.
type snapHandle struct {
	fwk.Handle
	s *backendcache.Snapshot
}

func (h snapHandle) SnapshotSharedLister() fwk.SharedLister { return h.s }

// TestFGDChoiceKeptWhileItsInputsAre: FGD's choice of a GPU on a slice's
// node is computed again exactly when something it is computed from
// changed (the node's figures, what its devices have left, the request,
// the slice object), and is always the choice computed afresh.
func TestFGDChoiceKeptWhileItsInputsAre(t *testing.T) {
	node := memoNode(32000, "V100", 4)
	node.Name = "n1"
	share := gpu.Request{CPU: 1000, Mem: 1024, Count: 1, Share: 200}
	type inputs struct {
		sl    *resourceapi.ResourceSlice
		left  []int64
		r     gpu.Request
		nodes []*v1.Node
		pods  []*v1.Pod
	}
	sl := gpuSlice("n1", "V100", 4)
	base := func() inputs {
		return inputs{sl: sl, left: []int64{1000, 700, 300, 1000}, r: share, nodes: []*v1.Node{node}}
	}
	busy := gpuPod("busy", 0)
	busy.Spec.NodeName = "n1"
	bigger := memoNode(64000, "V100", 4)
	bigger.Name = "n1"
	for _, tc := range []struct {
		name    string
		change  func(in *inputs)
		compute bool
	}{
		{name: "nothing changed", change: func(*inputs) {}},
		{name: "a device's use changed", change: func(in *inputs) { in.left = []int64{1000, 700, 500, 1000} }, compute: true},
		{name: "another share", change: func(in *inputs) { in.r.Share = 800 }, compute: true},
		{name: "another CPU request", change: func(in *inputs) { in.r.CPU = 2000 }, compute: true},
		{name: "models named", change: func(in *inputs) { in.r.Models = []string{"V100"} }, compute: true},
		{name: "a model named empty", change: func(in *inputs) { in.r.Models = []string{""} }, compute: true},
		{name: "a pod took CPU on the node", change: func(in *inputs) { in.pods = []*v1.Pod{busy} }, compute: true},
		{name: "the node's CPU changed", change: func(in *inputs) { in.nodes = []*v1.Node{bigger} }, compute: true},
		{name: "a new slice object", change: func(in *inputs) { in.sl = gpuSlice("n1", "V100", 4) }, compute: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workload := gpu.Typical([]gpu.Request{share, {CPU: 1000, Mem: 1024, Count: 1, Share: 500}, {CPU: 8000, Mem: 8192, Count: 2, Share: 1000}}, 1)
			choose := func(d *draFullestFirst, in inputs) int {
				d.m.h = snapHandle{s: backendcache.NewSnapshot(in.pods, in.nodes)}
				return d.fgdChoice(in.sl, slices.Clone(in.left), in.r)
			}
			fresh := func(in inputs) int {
				return choose(newDRAFullestFirst(&gpuDRAModel{policy: gpu.FGD, hasPolicy: true, workload: workload})(nil).Manager.(*draFullestFirst), in)
			}
			d := newDRAFullestFirst(&gpuDRAModel{policy: gpu.FGD, hasPolicy: true, workload: workload})(nil).Manager.(*draFullestFirst)
			in := base()
			if got, want := choose(d, in), fresh(in); got != want {
				t.Fatalf("first choice %d, want %d", got, want)
			}
			tc.change(&in)
			if got, want := choose(d, in), fresh(in); got != want {
				t.Errorf("choice after the change %d, computed afresh %d", got, want)
			}
			if computed := d.fgdComputes == 2; computed != tc.compute {
				t.Errorf("computed again: %v, want %v", computed, tc.compute)
			}
		})
	}
}

// TestFGDChoiceKeptPerRequest: pods of several requests in turn on a node
// that does not change get the choices computed for each request once;
// a change of the node's use computes them again.
func TestFGDChoiceKeptPerRequest(t *testing.T) {
	node := memoNode(32000, "V100", 4)
	node.Name = "n1"
	a := gpu.Request{CPU: 1000, Mem: 1024, Count: 1, Share: 200}
	b := gpu.Request{CPU: 1000, Mem: 1024, Count: 1, Share: 600}
	workload := gpu.Typical([]gpu.Request{a, b}, 1)
	d := newDRAFullestFirst(&gpuDRAModel{policy: gpu.FGD, hasPolicy: true, workload: workload})(nil).Manager.(*draFullestFirst)
	d.m.h = snapHandle{s: backendcache.NewSnapshot(nil, []*v1.Node{node})}
	sl := gpuSlice("n1", "V100", 4)
	left := []int64{1000, 700, 300, 1000}
	for i, step := range []struct {
		r       gpu.Request
		left    []int64
		compute int
	}{
		{r: a, left: left, compute: 1}, {r: b, left: left, compute: 2}, {r: a, left: left, compute: 2}, {r: b, left: left, compute: 2},
		{r: a, left: []int64{1000, 700, 100, 1000}, compute: 3}, {r: b, left: []int64{1000, 700, 100, 1000}, compute: 4},
	} {
		got := d.fgdChoice(sl, slices.Clone(step.left), step.r)
		fresh := newDRAFullestFirst(&gpuDRAModel{policy: gpu.FGD, hasPolicy: true, workload: workload})(nil).Manager.(*draFullestFirst)
		fresh.m.h = d.m.h
		if want := fresh.fgdChoice(sl, slices.Clone(step.left), step.r); got != want {
			t.Errorf("step %d: choice %d, computed afresh %d", i, got, want)
		}
		if d.fgdComputes != step.compute {
			t.Errorf("step %d: %d choices computed, want %d", i, d.fgdComputes, step.compute)
		}
	}
}
