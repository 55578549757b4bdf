package sim

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dra "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/profile"
)

// keptWorld is a framework whose DRA manager keeps the allocated state
// (draFullestFirst), and the manager.
type keptWorld struct {
	fw *profile.Framework
	d  *draFullestFirst
	// pool is what the last compare saw of pool "n" in the kept state
	// and the manager's count of it.
	pool *poolSeen
}

// poolSeen is what a state holds of a pool's devices, printed, and the
// manager's count of the pool then (ok: it gave one).
type poolSeen struct {
	held string
	ver  uint64
	ok   bool
	cell *uint64 // the pool's count cell, once it has one
}

// poolHeld prints what state holds of pool's devices: taken whole,
// shares, capacity consumed.
func poolHeld(state *structured.AllocatedState, pool string) string {
	var out []string
	for id := range state.AllocatedDevices {
		if id.Pool.String() == pool {
			out = append(out, "whole "+id.String())
		}
	}
	for id := range state.AllocatedSharedDeviceIDs {
		if id.Pool.String() == pool {
			out = append(out, "share "+id.String())
		}
	}
	for id, caps := range state.AggregatedCapacity {
		if id.Pool.String() == pool {
			for name, q := range caps {
				out = append(out, "used "+id.String()+" "+string(name)+"="+q.String())
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func newKeptWorld(t *testing.T) keptWorld {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	var d *draFullestFirst
	wrap := newDRAFullestFirst(&gpuDRAModel{policy: gpu.BestFit, hasPolicy: true})
	fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot(),
		WrapDRA: func(m fwk.SharedDRAManager) profile.DRAWrap {
			out := wrap(m)
			d = out.Manager.(*draFullestFirst)
			return out
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	return keptWorld{fw: fw, d: d, pool: &poolSeen{}}
}

// check compares the gather through the manager, which serves the kept
// state when it can, with upstream's, and whether it served the kept
// one with wantKept.
func (w keptWorld) check(t *testing.T, wantKept bool) {
	t.Helper()
	if kept := w.compare(t); kept != wantKept {
		t.Errorf("the kept state served: %v, want %v", kept, wantKept)
	}
}

// compare compares the gather through the manager with upstream's, and
// reports whether the manager served the kept state.
func (w keptWorld) compare(t *testing.T) bool {
	t.Helper()
	got, err := w.fw.Framework().SharedDRAManager().ResourceClaims().GatherAllocatedState()
	if err != nil {
		t.Fatal(err)
	}
	want, err := w.d.SharedDRAManager.ResourceClaims().GatherAllocatedState()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.d.kept.sameAsGather(got, want); err != nil {
		t.Errorf("the state gathered differs from upstream's: %v", err)
	}
	counts := w.d.ShareCounts(got)
	if kept := w.d.kept.serves(got); kept != (counts != nil) {
		t.Errorf("share counts given: %v, for the kept state: %v", counts != nil, kept)
	}
	if counts != nil {
		wantCounts := map[structured.DeviceID]int{}
		for id := range want.AllocatedSharedDeviceIDs {
			wantCounts[structured.MakeDeviceID(id.Driver.String(), id.Pool.String(), id.Device.String())]++
		}
		if !maps.Equal(counts, wantCounts) {
			t.Errorf("share counts %v, want %v", counts, wantCounts)
		}
	}
	w.checkPoolCount(t, got)
	if w.d.kept.serves(got) {
		if used, want := w.d.usedPoolsOf(got), maps.Clone(w.d.usedPools(want)); !maps.Equal(used, want) {
			t.Errorf("the keeper's pools in use %v, want %v", used, want)
		}
	}
	return w.d.kept.serves(got)
}

// checkPoolCount checks the manager's count of pool "n" for state (the
// one gathered through it): given for the kept state only, and another
// whenever what the state holds of the pool changed since the last
// compare that was given one.
func (w keptWorld) checkPoolCount(t *testing.T, state *structured.AllocatedState) {
	t.Helper()
	ver, ok := w.d.PoolVersion(state, dra.MakeUniqueString("n"))
	if kept := w.d.kept.serves(state); ok != kept {
		t.Errorf("a pool count given: %v, for the kept state: %v", ok, kept)
	}
	if !ok {
		return
	}
	held := poolHeld(state, "n")
	if w.pool.ok && held != w.pool.held && ver == w.pool.ver {
		t.Errorf("pool n holds %q, before %q, and its count is still %d", held, w.pool.held, ver)
	}
	// The pool's cell, once it has one, is the count, and stays the
	// pool's: a reader that kept it reads the count after every write.
	cell := w.d.PoolVersionCell(dra.MakeUniqueString("n"))
	switch {
	case cell != nil && *cell != ver:
		t.Errorf("pool n's cell holds %d, its count is %d", *cell, ver)
	case w.pool.cell != nil && cell != w.pool.cell:
		t.Error("pool n's cell replaced")
	case w.pool.cell != nil && *w.pool.cell != ver:
		t.Errorf("pool n's cell kept before holds %d, its count is %d", *w.pool.cell, ver)
	case ver != 0 && cell == nil:
		t.Errorf("pool n's count is %d, and it has no cell", ver)
	}
	if cell == nil {
		cell = w.pool.cell
	}
	*w.pool = poolSeen{held: held, ver: ver, ok: true, cell: cell}
}

// keptClaim is a claim of uid with results: whole devices of node n
// (share < 0) or a share of share thousandths of each.
func keptClaim(name string, share int64, devices ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "1"}}
	if len(devices) == 0 {
		return c
	}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for i, dev := range devices {
		r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: traceGPUDriver, Pool: "n", Device: dev}
		if share >= 0 {
			id := types.UID(name + "-" + string(rune('a'+i)))
			r.ShareID = &id
			r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{traceGPUCapacity: *resource.NewQuantity(share, resource.DecimalSI)}
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, r)
	}
	return c
}

// uncounted is c with no capacity consumed by its shares (a device
// shared without a per-share capacity).
func uncounted(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	for i := range c.Status.Allocation.Devices.Results {
		c.Status.Allocation.Devices.Results[i].ConsumedCapacity = nil
	}
	return c
}

func withVersion(c *resourceapi.ResourceClaim, v string) *resourceapi.ResourceClaim {
	c.ResourceVersion = v
	return c
}

// TestKeptAllocatedStateIsUpstreams: after each kind of write of claims
// (a claim added allocated, an allocation, a deallocation, a claim
// deleted, a slice changed, an allocation in flight and its removal, an
// allocation assumed and restored, a device for admin access, an
// allocation replaced by another), the state the manager gathers is
// upstream's, and it is the kept one except while an allocation is in
// flight; for the kept one, and only for it, the manager gives the
// number of shares of each device (ShareCounts), which are the state's,
// and a count of the pool that is another after every write that
// changed what the state holds of the pool's devices (PoolVersion), and
// the pools with thousandths of GPU consumed that the keeper keeps are
// those read from upstream's gather (usedPools).
func TestKeptAllocatedStateIsUpstreams(t *testing.T) {
	type step func(t *testing.T, w keptWorld)
	add := func(c *resourceapi.ResourceClaim) step {
		return func(t *testing.T, w keptWorld) {
			if err := w.fw.AddObject(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	update := func(c *resourceapi.ResourceClaim) step {
		return func(t *testing.T, w keptWorld) {
			if err := w.fw.UpdateObject(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	del := func(c *resourceapi.ResourceClaim) step {
		return func(t *testing.T, w keptWorld) {
			if err := w.fw.DeleteObject(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	tracker := func(w keptWorld) fwk.ResourceClaimTracker {
		return w.fw.Framework().SharedDRAManager().ResourceClaims()
	}
	for _, tc := range []struct {
		name     string
		steps    []step
		wantKept bool
	}{
		{name: "nothing allocated", wantKept: true},
		{name: "a claim added allocated", steps: []step{add(keptClaim("a", 300, "gpu-0"))}, wantKept: true},
		{name: "allocation", steps: []step{add(keptClaim("a", 0)), update(withVersion(keptClaim("a", 300, "gpu-0", "gpu-1"), "2")),
			add(keptClaim("b", -1, "gpu-2"))}, wantKept: true},
		{name: "two shares of one device", steps: []step{add(keptClaim("a", 300, "gpu-0")), add(keptClaim("b", 500, "gpu-0"))}, wantKept: true},
		{name: "deallocation", steps: []step{add(keptClaim("a", 300, "gpu-0")), add(keptClaim("b", 500, "gpu-0")), add(keptClaim("c", -1, "gpu-1")),
			update(withVersion(keptClaim("a", 0), "2")), update(withVersion(keptClaim("c", 0), "2"))}, wantKept: true},
		{name: "claim deleted", steps: []step{add(keptClaim("a", 300, "gpu-0")), add(keptClaim("c", -1, "gpu-1")),
			del(keptClaim("a", 300, "gpu-0")), del(keptClaim("c", -1, "gpu-1"))}, wantKept: true},
		{name: "slice changed", steps: []step{add(keptClaim("a", 300, "gpu-0")), func(t *testing.T, w keptWorld) {
			sl := gpuSlice("n", "V100", 2)
			if err := w.fw.AddObject(sl); err != nil {
				t.Fatal(err)
			}
			sl = gpuSlice("n", "V100", 4)
			sl.ResourceVersion = "2"
			if err := w.fw.UpdateObject(sl); err != nil {
				t.Fatal(err)
			}
		}}, wantKept: true},
		{name: "allocation in flight", steps: []step{add(keptClaim("a", 0)), func(t *testing.T, w keptWorld) {
			if err := tracker(w).SignalClaimPendingAllocation("uid-a", keptClaim("a", 300, "gpu-0")); err != nil {
				t.Fatal(err)
			}
		}}, wantKept: false},
		{name: "allocation in flight, then written", steps: []step{add(keptClaim("a", 0)), func(t *testing.T, w keptWorld) {
			if err := tracker(w).SignalClaimPendingAllocation("uid-a", keptClaim("a", 300, "gpu-0")); err != nil {
				t.Fatal(err)
			}
		}, update(withVersion(keptClaim("a", 300, "gpu-0"), "2")), func(t *testing.T, w keptWorld) {
			if !tracker(w).MaybeRemoveClaimPendingAllocation("uid-a", false) {
				t.Fatal("the allocation in flight was not removed")
			}
		}}, wantKept: true},
		{name: "allocation assumed, then restored", steps: []step{add(keptClaim("a", 0)), func(t *testing.T, w keptWorld) {
			if err := tracker(w).AssumeClaimAfterAPICall(withVersion(keptClaim("a", 300, "gpu-0"), "2")); err != nil {
				t.Fatal(err)
			}
			w.compare(t)
			tracker(w).AssumedClaimRestore("default", "a")
		}}, wantKept: true},
		{name: "a device for admin access", steps: []step{func(t *testing.T, w keptWorld) {
			c := keptClaim("a", -1, "gpu-0", "gpu-1")
			yes := true
			c.Status.Allocation.Devices.Results[0].AdminAccess = &yes
			if err := w.fw.AddObject(c); err != nil {
				t.Fatal(err)
			}
		}}, wantKept: true},
		{name: "two shares of a device, one deleted", steps: []step{add(keptClaim("a", 300, "gpu-0")), add(keptClaim("b", 300, "gpu-0")),
			update(withVersion(keptClaim("a", 300, "gpu-0"), "2")), del(keptClaim("b", 300, "gpu-0"))}, wantKept: true},
		{name: "a share without capacity consumed", steps: []step{add(uncounted(keptClaim("a", 300, "gpu-0")))}, wantKept: true},
		{name: "a share without capacity consumed, then one with", steps: []step{add(uncounted(keptClaim("a", 300, "gpu-0"))),
			add(keptClaim("b", 300, "gpu-0"))}, wantKept: true},
		{name: "a share with capacity consumed and one without, then the first deleted", steps: []step{add(keptClaim("b", 300, "gpu-0")),
			add(uncounted(keptClaim("a", 300, "gpu-0"))), del(keptClaim("b", 300, "gpu-0"))}, wantKept: true},
		{name: "a share without capacity consumed, deallocated", steps: []step{add(uncounted(keptClaim("a", 300, "gpu-0", "gpu-1"))),
			update(withVersion(keptClaim("a", 0), "2"))}, wantKept: true},
		{name: "an allocation replaced by another", steps: []step{add(keptClaim("a", 300, "gpu-0")),
			update(withVersion(keptClaim("a", 600, "gpu-1"), "2")), del(withVersion(keptClaim("a", 600, "gpu-1"), "2"))}, wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newKeptWorld(t)
			for _, s := range tc.steps {
				s(t, w)
				w.compare(t)
			}
			w.check(t, tc.wantKept)
		})
	}
}

// TestKeptStateChangesNoPlacement: replays of the differential cases
// (pods that end, probes that arrive together, every policy; and a
// cluster of 250 nodes) place the same pods on the same nodes and
// devices with the kept allocated state, what the lister reads of it,
// the share counts kept with it and the pool counts by which
// DynamicResources' memo keeps what it read of each slice, and without
// them, and every kept state served is upstream's gather of
// that moment.
func TestKeptStateChangesNoPlacement(t *testing.T) {
	seeds := diffSeeds()
	served := 0
	defer func() { draStateCheck = nil }()
	draStateCheck = func(k *allocKeeper, kept *structured.AllocatedState, tracker fwk.ResourceClaimTracker) {
		served++
		want, err := tracker.GatherAllocatedState()
		if err != nil {
			t.Fatal(err)
		}
		if err := k.sameAsGather(kept, want); err != nil {
			t.Errorf("a kept state served differs from upstream's gather: %v", err)
		}
	}
	diffEveryPolicy(t, seeds, "the kept state", func(t *testing.T, c diffCase, keep bool) []draPlacement {
		defer func(on, left, shares, uses bool) {
			draStateKeptOn, draLeftKeptOn, draSharesKeptOn, draUsesKeptOn = on, left, shares, uses
		}(draStateKeptOn, draLeftKeptOn, draSharesKeptOn, draUsesKeptOn)
		draStateKeptOn, draLeftKeptOn, draSharesKeptOn, draUsesKeptOn = keep, keep, keep, keep
		return draProbePlacements(t, c)
	})
	if served == 0 {
		t.Error("no kept state was served")
	}
}

// TestListerReadsTheKeptStateAsItIs: what the fullest-first lister
// keeps of the kept state (each GPU slice's devices' use, the pools in
// use) is what it reads of the state afresh, after each kind of change:
// an allocation, a deallocation, a claim deleted, a slice changed (a
// new object with more devices), an allocation in flight (the state
// served is then upstream's gather).
func TestListerReadsTheKeptStateAsItIs(t *testing.T) {
	type step func(t *testing.T, w keptWorld)
	write := func(op string, obj runtime.Object) step {
		return func(t *testing.T, w keptWorld) {
			var err error
			switch op {
			case "add":
				err = w.fw.AddObject(obj)
			case "update":
				err = w.fw.UpdateObject(obj)
			default:
				err = w.fw.DeleteObject(obj)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	bigger := gpuSlice("n", "V100", 4)
	bigger.ResourceVersion = "2"
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "allocation", steps: []step{write("add", keptClaim("a", 0)), write("update", withVersion(keptClaim("a", 300, "gpu-1"), "2")),
			write("add", keptClaim("b", 200, "gpu-0"))}},
		{name: "deallocation", steps: []step{write("add", keptClaim("a", 300, "gpu-1")), write("add", keptClaim("b", 200, "gpu-0")),
			write("update", withVersion(keptClaim("a", 0), "2"))}},
		{name: "claim deleted", steps: []step{write("add", keptClaim("a", 300, "gpu-1")), write("add", keptClaim("b", 200, "gpu-0")),
			write("delete", keptClaim("b", 200, "gpu-0")), write("delete", keptClaim("a", 300, "gpu-1"))}},
		{name: "slice changed", steps: []step{write("add", keptClaim("a", 300, "gpu-1")), write("update", bigger),
			write("add", keptClaim("b", 900, "gpu-3"))}},
		{name: "allocation in flight", steps: []step{write("add", keptClaim("a", 300, "gpu-1")), write("add", keptClaim("b", 0)),
			func(t *testing.T, w keptWorld) {
				tr := w.fw.Framework().SharedDRAManager().ResourceClaims()
				if err := tr.SignalClaimPendingAllocation("uid-b", keptClaim("b", 500, "gpu-0")); err != nil {
					t.Fatal(err)
				}
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newKeptWorld(t)
			write("add", gpuSlice("n", "V100", 2))(t, w)
			write("add", gpuSlice("m", "V100", 2))(t, w)
			w.list(t)
			for _, s := range tc.steps {
				s(t, w)
				w.list(t)
			}
		})
	}
}

// list gathers and lists the slices through the manager (which keeps
// what it reads), then compares what it kept of each slice and of the
// pools in use with a fresh reading of the state gathered.
func (w keptWorld) list(t *testing.T) {
	t.Helper()
	m := w.fw.Framework().SharedDRAManager()
	state, err := m.ResourceClaims().GatherAllocatedState()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ResourceSlices().ListWithDeviceTaintRules(); err != nil {
		t.Fatal(err)
	}
	used := maps.Clone(w.d.usedPoolsOf(state))
	want := maps.Clone(w.d.usedPools(state))
	if !maps.Equal(used, want) {
		t.Errorf("pools in use %v, want %v", used, want)
	}
	list, err := w.d.SharedDRAManager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range list {
		devs := w.d.devsOf(sl)
		if got, want := w.d.leftOf(sl, devs, state), devs.left(state); !slices.Equal(got, want) {
			t.Errorf("slice %s: devices have left %v, want %v", sl.Name, got, want)
		}
	}
}

// onPool is c with every result's device on pool.
func onPool(c *resourceapi.ResourceClaim, pool string) *resourceapi.ResourceClaim {
	for i := range c.Status.Allocation.Devices.Results {
		c.Status.Allocation.Devices.Results[i].Pool = pool
	}
	return c
}

// TestKeeperCountsClaimEventsPerPool: the keeper's count of the claims'
// events on pool n (by which GPUDevices' node memo skips its claim
// lookups) moves after every write that changes what a lookup returns
// of a claim allocated there, before or after: a claim added allocated,
// an allocation, one replaced by another (the state unchanged, the
// object not), a move to another pool, a deallocation, a claim deleted,
// an allocation assumed and restored; and not after writes that change
// nothing there (a claim without allocation, a claim on pool m). An
// event that is not a claim's, or a keeper not watching, gives no count.
func TestKeeperCountsClaimEventsPerPool(t *testing.T) {
	type step struct {
		op    string // add, update, delete, assume (and restore)
		claim *resourceapi.ResourceClaim
		moves bool // the count of pool n moves
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a claim added allocated", []step{{"add", keptClaim("a", 300, "gpu-0"), true}}},
		{"a claim without allocation", []step{{"add", keptClaim("a", 0), false}}},
		{"an allocation", []step{{"add", keptClaim("a", 0), false}, {"update", withVersion(keptClaim("a", 300, "gpu-1"), "2"), true}}},
		{"an allocation replaced by another", []step{{"add", keptClaim("a", 300, "gpu-0"), true},
			{"update", withVersion(keptClaim("a", 600, "gpu-1"), "2"), true}}},
		{"an allocation moved to another pool", []step{{"add", keptClaim("a", 300, "gpu-0"), true},
			{"update", withVersion(onPool(keptClaim("a", 300, "gpu-0"), "m"), "2"), true}}},
		{"a deallocation", []step{{"add", keptClaim("a", -1, "gpu-0"), true}, {"update", withVersion(keptClaim("a", 0), "2"), true}}},
		{"a claim deleted", []step{{"add", keptClaim("a", 300, "gpu-0"), true}, {"delete", keptClaim("a", 300, "gpu-0"), true}}},
		{"a claim on another pool", []step{{"add", onPool(keptClaim("a", 300, "gpu-0"), "m"), false},
			{"delete", onPool(keptClaim("a", 300, "gpu-0"), "m"), false}}},
		{"an allocation assumed, then restored", []step{{"add", keptClaim("a", 0), false}, {"assume", withVersion(keptClaim("a", 300, "gpu-0"), "2"), true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newKeptWorld(t)
			tracker := w.fw.Framework().SharedDRAManager().ResourceClaims()
			var cell *claimCell
			count := func() uint64 {
				t.Helper()
				n, ok := w.d.kept.claimCount("n", nil)
				if !ok {
					t.Fatal("the watching keeper gives no count")
				}
				if byCell, _ := w.d.kept.claimCount("n", &cell); byCell != n {
					t.Fatalf("the count read from the pool's cell is %d, by its name %d", byCell, n)
				}
				return n
			}
			for i, s := range tc.steps {
				before := count()
				var err error
				switch s.op {
				case "add":
					err = w.fw.AddObject(s.claim)
				case "update":
					err = w.fw.UpdateObject(s.claim)
				case "delete":
					err = w.fw.DeleteObject(s.claim)
				case "assume":
					if err = tracker.AssumeClaimAfterAPICall(s.claim); err == nil {
						if moved := count() != before; !moved {
							t.Errorf("step %d: the count did not move when the allocation was assumed", i)
						}
						before = count()
						tracker.AssumedClaimRestore(s.claim.Namespace, s.claim.Name)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if moved := count() != before; moved != s.moves {
					t.Errorf("step %d (%s): the count moved: %v, want %v", i, s.op, moved, s.moves)
				}
			}
		})
	}
	t.Run("an event that is not a claim's", func(t *testing.T) {
		w := newKeptWorld(t)
		w.d.kept.onAdd(gpuSlice("n", "V100", 2))
		if _, ok := w.d.kept.claimCount("n", nil); ok {
			t.Error("a count given after an event the keeper could not read")
		}
	})
	t.Run("a cell kept from another keeper", func(t *testing.T) {
		a, b := newAllocKeeper(), newAllocKeeper()
		a.watching, b.watching = true, true
		a.countEvent(keptClaim("a", 300, "gpu-0"))
		var cell *claimCell
		if n, _ := a.claimCount("n", &cell); n != 1 {
			t.Fatalf("the first keeper's count %d, want 1", n)
		}
		if n, _ := b.claimCount("n", &cell); n != 0 {
			t.Errorf("the second keeper's count, read with the first's cell, is %d, want its own 0", n)
		}
		b.countEvent(keptClaim("a", 300, "gpu-0"))
		b.countEvent(keptClaim("a", 300, "gpu-0"))
		if n, _ := b.claimCount("n", &cell); n != 2 {
			t.Errorf("the second keeper's count %d, want 2", n)
		}
	})
	t.Run("a keeper not watching", func(t *testing.T) {
		if _, ok := newAllocKeeper().claimCount("n", nil); ok {
			t.Error("a count given by a keeper that sees no events")
		}
	})
}

// diffSeeds is how many seeds the differential replays of the DRA
// shortcuts run: 12, or 4 with -short or under the race detector, whose
// replays are several times slower.
func diffSeeds() uint64 {
	if testing.Short() || raceDetector {
		return 4
	}
	return 12
}
