package profile

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/utils/ptr"
)

const memoDriver = "gpu.example.com"

// gpuNode is a node with a ResourceSlice of n GPUs of model, each of 1000
// thousandths that several claims may share.
func gpuNode(name, model string, n int) (*v1.Node, *resourceapi.ResourceSlice) {
	yes := true
	sl := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-gpus", UID: types.UID("slice-" + name)},
		Spec: resourceapi.ResourceSliceSpec{Driver: memoDriver, NodeName: &name,
			Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}},
	}
	for i := range n {
		sl.Spec.Devices = append(sl.Spec.Devices, resourceapi.Device{
			Name:                     "gpu-" + strconv.Itoa(i),
			Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &model}},
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"milli": {Value: *resource.NewQuantity(1000, resource.DecimalSI)}},
			AllowMultipleAllocations: &yes,
		})
	}
	return node(name, "z"), sl
}

// shareClaim is a claim of milli thousandths of one GPU of model;
// allocated on device of pool if pool is set.
func shareClaim(name string, milli int64, model, pool, device string) *resourceapi.ResourceClaim {
	q := *resource.NewQuantity(milli, resource.DecimalSI)
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: memoDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"milli": q}},
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes["` + memoDriver + `"].model == "` + model + `"`}}}},
		}}}},
	}
	if pool != "" {
		share := types.UID("share-" + name)
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "gpu", Driver: memoDriver, Pool: pool, Device: device, ShareID: &share,
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"milli": q},
		}}}}
		c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "holder-" + name, UID: types.UID("pod-holder-" + name)}}
	}
	return c
}

func withResourceClaim(claim string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
	}
}

// memoCluster has six nodes of four kinds for a share of 600 of a V100:
// two empty V100 nodes (fit), one with half of one GPU used (fits on the
// other GPU), two with half of each GPU used (no fit), and an empty T4
// node (no fit: the model).
func memoCluster() Cluster {
	var c Cluster
	c.Objects = append(c.Objects, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: memoDriver}})
	for _, n := range []struct{ name, model string }{{"a", "V100"}, {"b", "V100"}, {"c", "V100"}, {"d", "V100"}, {"e", "V100"}, {"f", "T4"}} {
		nd, sl := gpuNode(n.name, n.model, 2)
		c.Nodes = append(c.Nodes, nd)
		c.Objects = append(c.Objects, sl)
	}
	for _, u := range []struct{ pool, device string }{{"c", "gpu-0"}, {"d", "gpu-0"}, {"d", "gpu-1"}, {"e", "gpu-1"}, {"e", "gpu-0"}} {
		c.Objects = append(c.Objects, shareClaim("used-"+u.pool+"-"+u.device, 500, "V100", u.pool, u.device))
	}
	c.Objects = append(c.Objects, shareClaim("want", 600, "V100", "", ""))
	return c
}

// memoPlugin builds a framework of the default profile without
// DynamicResources over c, and on its handle the registry's
// DynamicResources, which is a draMemo.
func memoPlugin(t *testing.T, c Cluster) (*draMemo, *Framework) {
	t.Helper()
	pl, f := registryDRA(t, c)
	m, ok := pl.(*draMemo)
	if !ok {
		t.Fatalf("the registry's DynamicResources is a %T, want a *draMemo", pl)
	}
	return m, f
}

// registryDRA builds a framework of the default profile without
// DynamicResources over c, and on its handle the registry's
// DynamicResources.
func registryDRA(t *testing.T, c Cluster) (fwk.Plugin, *Framework) {
	t.Helper()
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	prof.Plugins.MultiPoint.Enabled = slices.DeleteFunc(prof.Plugins.MultiPoint.Enabled, func(p config.Plugin) bool { return p.Name == dynamicresources.Name })
	f, err := NewFramework(context.Background(), prof, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return registryPlugin(t, f, dynamicresources.Name, pluginArgs(cfg.Profiles[0], dynamicresources.Name)), f
}

// pluginArgs is the args prof's pluginConfig gives plugin name; nil if
// none.
func pluginArgs(prof config.KubeSchedulerProfile, name string) runtime.Object {
	for _, pc := range prof.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}

// registryPlugin builds the registry's plugin name with args on f's
// handle.
func registryPlugin(t *testing.T, f *Framework, name string, args runtime.Object) fwk.Plugin {
	t.Helper()
	r, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := r[name](context.Background(), args, f.fwk)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// preFilterBoth runs the memo's PreFilter for p on a new cycle state and
// upstream's on another, to compare their Filters.
// memoAgreesOnEveryNode checks that the memo serves p's cycle and
// answers on each of nodes what upstream's Filter answers.
func memoAgreesOnEveryNode(t *testing.T, m *draMemo, p *v1.Pod, nodes []fwk.NodeInfo) {
	t.Helper()
	memo, up := preFilterBoth(t, m, p)
	if cycleMemo(memo) == nil {
		t.Fatal("the memo does not serve the cycle")
	}
	ctx := context.Background()
	for _, ni := range nodes {
		got, want := m.Filter(ctx, memo, p, ni), m.DynamicResources.Filter(ctx, up, p, ni)
		if got.Code() != want.Code() || got.Message() != want.Message() {
			t.Errorf("node %s: memo %v, upstream %v", ni.Node().Name, got, want)
		}
	}
}

func preFilterBoth(t *testing.T, m *draMemo, p *v1.Pod) (memo, up fwk.CycleState) {
	t.Helper()
	memo, up = framework.NewCycleState(), framework.NewCycleState()
	if _, st := m.PreFilter(context.Background(), memo, p, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if _, st := m.DynamicResources.PreFilter(context.Background(), up, p, nil); !st.IsSuccess() {
		t.Fatalf("upstream's PreFilter: %v", st)
	}
	return memo, up
}

// TestDRAMemoAnswersAsUpstream: on every node the memo's Filter answers
// what upstream's Filter answers, while the allocator runs once per kind
// of node (four kinds among six nodes); the schedule over the whole
// framework finds the same nodes.
func TestDRAMemoAnswersAsUpstream(t *testing.T) {
	ctx := context.Background()
	c := memoCluster()
	m, f := memoPlugin(t, c)
	p := pod("p", "", withResourceClaim("want"))
	memoState, upState := preFilterBoth(t, m, p)
	cyc := cycleMemo(memoState)
	if cyc == nil {
		t.Fatal("no memo for a cycle of plain claims on nodes' own slices")
	}
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	var fit []string
	for _, ni := range nodes {
		got, want := m.Filter(ctx, memoState, p, ni), m.DynamicResources.Filter(ctx, upState, p, ni)
		if got.Code() != want.Code() || got.Message() != want.Message() {
			t.Errorf("node %s: memo %v, upstream %v", ni.Node().Name, got, want)
		}
		if got.IsSuccess() {
			fit = append(fit, ni.Node().Name)
		}
	}
	if len(fit) != 3 {
		t.Errorf("fit on %v, want a, b and c", fit)
	}
	if len(cyc.answers) != 4 {
		t.Errorf("%d kinds of node, want 4 (a=b, c, d=e, f)", len(cyc.answers))
	}
	res := schedule(t, defaultFramework(t, c), p)
	if len(res.Feasible) != 3 {
		t.Errorf("Schedule: feasible %v, want a, b and c", res.Feasible)
	}
}

// TestDRAMemoReserveFiltersAnsweredNode: a node upstream's Filter did
// not accept in the cycle is filtered for real at Reserve, so that
// upstream's Reserve allocates the chosen node's own device: a node the
// memo answered (its twin ran the allocator), and one the cycle never
// filtered (the scheduler's memo of verdicts answered it, DRAStamp).
func TestDRAMemoReserveFiltersAnsweredNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		filtered []string
		reserve  string
	}{
		{name: "answered from its twin", filtered: []string{"a", "b"}, reserve: "b"},
		{name: "never filtered", filtered: []string{"a"}, reserve: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m, f := memoPlugin(t, memoCluster())
			p := pod("p", "", withResourceClaim("want"))
			cs := framework.NewCycleState()
			if _, st := m.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			for _, name := range tc.filtered {
				ni, err := f.Snapshot().NodeInfos().Get(name)
				if err != nil {
					t.Fatal(err)
				}
				if st := m.Filter(ctx, cs, p, ni); !st.IsSuccess() {
					t.Fatalf("Filter %s: %v", name, st)
				}
			}
			if cycleMemo(cs).ran[tc.reserve] {
				t.Fatalf("upstream's Filter ran on %s; the case wants a node it did not run on", tc.reserve)
			}
			if st := m.Reserve(ctx, cs, p, tc.reserve); !st.IsSuccess() {
				t.Fatalf("Reserve %s: %v", tc.reserve, st)
			}
			state, err := f.fwk.SharedDRAManager().ResourceClaims().GatherAllocatedState()
			if err != nil {
				t.Fatal(err)
			}
			pools := map[string]bool{}
			for id := range state.AggregatedCapacity {
				pools[id.Pool.String()] = true
			}
			if !pools[tc.reserve] || pools["a"] {
				t.Errorf("pools with capacity in use after Reserve on %s: %v, want %s's (and the other nodes'), not a's", tc.reserve, pools, tc.reserve)
			}
			m.Unreserve(ctx, cs, p, tc.reserve)
		})
	}
}

// TestDRAMemoStandsAside: cycles whose answers could depend on more than
// the memo's key run upstream's Filter on every node: a claim allocated
// already, a request with alternatives, a slice not of one node.
func TestDRAMemoStandsAside(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Cluster)
	}{
		{"claim allocated", func(c *Cluster) {
			c.Objects[len(c.Objects)-1] = shareClaim("want", 600, "V100", "a", "gpu-0")
		}},
		{"request with alternatives", func(c *Cluster) {
			w := c.Objects[len(c.Objects)-1].(*resourceapi.ResourceClaim)
			r := &w.Spec.Devices.Requests[0]
			r.FirstAvailable = []resourceapi.DeviceSubRequest{{Name: "one", DeviceClassName: memoDriver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}
			r.Exactly = nil
		}},
		{"slice of all nodes", func(c *Cluster) {
			yes := true
			c.Objects = append(c.Objects, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
				Spec: resourceapi.ResourceSliceSpec{Driver: "net.example.com", AllNodes: &yes,
					Pool:    resourceapi.ResourcePool{Name: "shared", Generation: 1, ResourceSliceCount: 1},
					Devices: []resourceapi.Device{{Name: "nic"}}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := memoCluster()
			tc.mutate(&c)
			m, _ := memoPlugin(t, c)
			cs := framework.NewCycleState()
			_, st := m.PreFilter(context.Background(), cs, pod("p", "", withResourceClaim("want")), nil)
			if st.Code() == fwk.Error {
				t.Fatalf("PreFilter: %v", st)
			}
			if cycleMemo(cs) != nil {
				t.Error("the memo serves this cycle")
			}
		})
	}
}

// TestDRAMemoConcurrentCycles: cycles of one plugin run from several
// goroutines at once (each its own cycle state) get upstream's answers on
// every node, and each takes its own PreFilter's allocated state from the
// tap; lazy cycles too (a DRANodeLister's, whose lists are made under
// the plugin's lock: the test's manager keeps a map unguarded). Run with
// -race.
func TestDRAMemoConcurrentCycles(t *testing.T) {
	for _, tc := range []struct {
		name string
		lazy bool
	}{{"the memo", false}, {"lazy cycles", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var m *draMemo
			var f *Framework
			if tc.lazy {
				m, f, _ = lazyPlugin(t, memoCluster(), true, "")
			} else {
				m, f = memoPlugin(t, memoCluster())
			}
			concurrentCycles(ctx, t, m, f, tc.lazy)
		})
	}
}

// concurrentCycles runs TestDRAMemoConcurrentCycles on m; lazy: every
// cycle must be lazy.
func concurrentCycles(ctx context.Context, t *testing.T, m *draMemo, f *Framework, lazy bool) {
	p := pod("p", "", withResourceClaim("want"))
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fwk.Code{}
	up := framework.NewCycleState()
	if _, st := m.DynamicResources.PreFilter(ctx, up, p, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	for _, ni := range nodes {
		want[ni.Node().Name] = m.DynamicResources.Filter(ctx, up, p, ni).Code()
	}
	var wg, ready sync.WaitGroup
	errs := make(chan string, 64)
	ready.Add(8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				cs := framework.NewCycleState()
				_, st := m.PreFilter(ctx, cs, p, nil)
				if round == 0 {
					// Every goroutine's first Filters start together, on
					// shapes no cycle has seen yet.
					ready.Done()
					ready.Wait()
				}
				if !st.IsSuccess() || cycleMemo(cs) == nil || cycleMemo(cs).lazy != lazy {
					errs <- fmt.Sprintf("PreFilter %v, memo %v, lazy %v", st, cycleMemo(cs) != nil, cycleMemo(cs) != nil && cycleMemo(cs).lazy)
					return
				}
				for i := range nodes {
					ni := nodes[(i+g)%len(nodes)]
					if got := m.Filter(ctx, cs, p, ni).Code(); got != want[ni.Node().Name] {
						errs <- fmt.Sprintf("goroutine %d, node %s: %v, want %v", g, ni.Node().Name, got, want[ni.Node().Name])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// slice1 is a ResourceSlice of one shareable GPU of model on nodeName, in
// pool at generation gen of count slices.
func slice1(name, nodeName, pool string, gen, count int64, dev, model string) *resourceapi.ResourceSlice {
	yes := true
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{Driver: memoDriver, NodeName: &nodeName,
			Pool: resourceapi.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: count},
			Devices: []resourceapi.Device{{Name: dev,
				Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &model}},
				Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"milli": {Value: *resource.NewQuantity(1000, resource.DecimalSI)}},
				AllowMultipleAllocations: &yes}}}}
}

// slicesCluster has the nodes the slices name, the slices, and the claim
// "want" (600 of a V100).
func slicesCluster(sls ...*resourceapi.ResourceSlice) Cluster {
	var c Cluster
	c.Objects = append(c.Objects, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: memoDriver}})
	seen := map[string]bool{}
	for _, sl := range sls {
		if n := *sl.Spec.NodeName; !seen[n] {
			seen[n] = true
			c.Nodes = append(c.Nodes, node(n, "z"))
		}
		c.Objects = append(c.Objects, sl)
	}
	c.Objects = append(c.Objects, shareClaim("want", 600, "V100", "", ""))
	return c
}

// TestDRAMemoAnswersAsUpstreamOnPools: nodes whose slices look alike but
// whose pools differ (how the slices group into pools, a pool's newest
// generation, a pool spread over nodes), or whose declared features
// differ, get upstream's answer on every node, in the order given (the
// first node of a kind answers for the others).
func TestDRAMemoAnswersAsUpstreamOnPools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Cluster
		order []string
		gate  featuregate.Feature // enabled for the case
		plain bool                // the registry gives upstream's plugin itself
	}{
		{name: "one pool of two slices, and two incomplete pools of one", order: []string{"a", "z"}, c: slicesCluster(
			slice1("a-0", "a", "a", 1, 2, "gpu-0", "V100"), slice1("a-1", "a", "a", 1, 2, "gpu-1", "V100"),
			slice1("z-0", "z", "z0", 1, 2, "gpu-0", "V100"), slice1("z-1", "z", "z1", 1, 2, "gpu-1", "V100"))},
		{name: "a pool's newer generation, and two pools", order: []string{"a", "z"}, c: slicesCluster(
			slice1("a-0", "a", "a", 1, 1, "gpu-0", "V100"), slice1("a-1", "a", "a", 2, 1, "gpu-0", "T4"),
			slice1("z-0", "z", "z0", 1, 1, "gpu-0", "V100"), slice1("z-1", "z", "z1", 2, 1, "gpu-0", "T4"))},
		{name: "a pool over two nodes", order: []string{"a", "z", "b"}, c: slicesCluster(
			slice1("a-0", "a", "p", 1, 2, "gpu-0", "V100"), slice1("b-0", "b", "p", 1, 2, "gpu-1", "V100"),
			slice1("z-0", "z", "z", 1, 2, "gpu-0", "V100"))},
		{name: "declared features", order: []string{"a", "b"}, gate: features.DRAOptionalNodeOperations, c: func() Cluster {
			mk := func(n string) *resourceapi.ResourceSlice {
				sl := slice1(n+"-0", n, n, 1, 1, "gpu-0", "V100")
				sl.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
				return sl
			}
			c := slicesCluster(mk("a"), mk("b"))
			c.Nodes[0].Status.DeclaredFeatures = []string{string(features.DRAOptionalNodeOperations)}
			return c
		}()},
		{name: "node-allocatable resources read the node's pods", order: []string{"a", "b"}, gate: features.DRANodeAllocatableResources, plain: true, c: func() Cluster {
			seven := resource.MustParse("7")
			mk := func(n string) *resourceapi.ResourceSlice {
				sl := slice1(n+"-0", n, n, 1, 1, "gpu-0", "V100")
				sl.Spec.Devices[0].NodeAllocatableResources = map[v1.ResourceName]resourceapi.NodeAllocatableResource{
					v1.ResourceCPU: {Overhead: &resourceapi.NodeAllocatableOverhead{PerPod: &seven}}}
				return sl
			}
			c := slicesCluster(mk("a"), mk("b"))
			c.Pods = append(c.Pods, pod("busy", "b", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("4") }))
			return c
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gate != "" {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, tc.gate, true)
			}
			ctx := context.Background()
			got, f := registryDRA(t, tc.c)
			if _, isMemo := got.(*draMemo); isMemo == tc.plain {
				t.Fatalf("the registry's DynamicResources is a %T", got)
			}
			if tc.plain {
				return
			}
			pl := got.(*draMemo)
			p := pod("p", "", withResourceClaim("want"))
			ms, us := preFilterBoth(t, pl, p)
			for _, n := range tc.order {
				ni, err := f.Snapshot().NodeInfos().Get(n)
				if err != nil {
					t.Fatal(err)
				}
				got, want := pl.Filter(ctx, ms, p, ni), pl.DynamicResources.Filter(ctx, us, p, ni)
				if got.Code() != want.Code() || got.Message() != want.Message() {
					t.Errorf("node %s: memo %v, upstream %v", n, got, want)
				}
			}
		})
	}
}

// TestDRAMemoStandsAsideInPodGroupCycles: a PodGroup's cycle may reuse
// another member's pending allocation, available on its node only; the
// memo does not serve it.
func TestDRAMemoStandsAsideInPodGroupCycles(t *testing.T) {
	pl, _ := memoPlugin(t, memoCluster())
	cs := framework.NewCycleState()
	cs.SetPodGroupSchedulingCycle(framework.NewCycleState())
	if _, st := pl.PreFilter(context.Background(), cs, pod("p", "", withResourceClaim("want")), nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if cycleMemo(cs) != nil {
		t.Error("the memo serves a PodGroup's cycle")
	}
}

// TestDRAMemoAcrossCycles: a later cycle for a pod asking the same
// (another claim of the same spec) reads the earlier cycle's answers for
// nodes whose kind has not changed, and gets upstream's answer on every
// node, also on a node whose devices were allocated since (a's GPUs, each
// half used: a share of 600 no longer fits there). A pod asking for
// something else does not read them.
func TestDRAMemoAcrossCycles(t *testing.T) {
	ctx := context.Background()
	c := memoCluster()
	c.Objects = append(c.Objects, shareClaim("again", 600, "V100", "", ""), shareClaim("other", 300, "V100", "", ""))
	m, f := memoPlugin(t, c)
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := preFilterBoth(t, m, pod("p1", "", withResourceClaim("want")))
	for _, ni := range nodes {
		m.Filter(ctx, first, pod("p1", "", withResourceClaim("want")), ni)
	}
	for _, dev := range []string{"gpu-0", "gpu-1"} {
		if err := f.AddObject(shareClaim("later-"+dev, 500, "V100", "a", dev)); err != nil {
			t.Fatal(err)
		}
	}
	p2 := pod("p2", "", withResourceClaim("again"))
	memo, up := preFilterBoth(t, m, p2)
	if n := len(cycleMemo(memo).asks); n != 4 {
		t.Errorf("the second cycle starts with %d answers of the first, want 4", n)
	}
	for _, ni := range nodes {
		got, want := m.Filter(ctx, memo, p2, ni), m.DynamicResources.Filter(ctx, up, p2, ni)
		if got.Code() != want.Code() || got.Message() != want.Message() {
			t.Errorf("node %s: memo %v, upstream %v", ni.Node().Name, got, want)
		}
	}
	other, _ := preFilterBoth(t, m, pod("p3", "", withResourceClaim("other")))
	if n := len(cycleMemo(other).asks); n != 0 {
		t.Errorf("a pod asking for another share starts with %d answers, want none", n)
	}
}

// TestDRAMemoKeepsPoolsOfTheSameSlices: the slices' grouping by node is
// kept while the lister gives the same slice objects, in any order (the
// tracker lists them in no fixed order; regrouping every cycle was a
// third of what a replay allocated), and made again when a slice is
// replaced, missing or listed twice, or when the slices listed once each
// were listed before with one of them twice (the grouping kept holds it
// twice).
func TestDRAMemoKeepsPoolsOfTheSameSlices(t *testing.T) {
	var list []*resourceapi.ResourceSlice
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		_, sl := gpuNode(n, "V100", 2)
		list = append(list, sl)
	}
	newer := list[1].DeepCopy()
	moved := list[1].DeepCopy() // b's pool, on node c
	moved.Spec.NodeName = ptr.To("c")
	renamed := list[1].DeepCopy() // another pool, on node b
	renamed.Spec.Pool.Name = "b2"
	newerC := list[2].DeepCopy()
	newerD := append([]*resourceapi.ResourceSlice{list[3].DeepCopy()}, list[4:]...)
	many := []*resourceapi.ResourceSlice{list[0]}
	for _, sl := range list[1:6] {
		many = append(many, sl.DeepCopy())
	}
	many = append(many, list[6:]...)
	// with is the given slices and the rest of the list (list[3:]).
	with := func(sls ...*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
		return append(sls, list[3:]...)
	}
	for _, tc := range []struct {
		name    string
		first   []*resourceapi.ResourceSlice // nil: list
		next    []*resourceapi.ResourceSlice
		kept    bool
		patched bool
	}{
		{"the same order", nil, slices.Clone(list), true, false},
		{"another order", nil, with(list[2], list[0], list[1]), true, false},
		{"a slice replaced", nil, with(list[0], newer, list[2]), false, true},
		{"two slices replaced, in another order", nil, with(newerC, list[0], newer), false, true},
		{"a slice replaced by its pool on another node", nil, with(list[0], moved, list[2]), false, false},
		{"a slice replaced by another pool of its node", nil, with(list[0], renamed, list[2]), false, false},
		{"a slice replaced by one listed twice", nil, with(list[0], list[2], list[2]), false, false},
		{"three slices replaced", nil, append([]*resourceapi.ResourceSlice{list[0], newer, newerC}, newerD...), false, true},
		{"five slices replaced", nil, many, false, false},
		{"a slice missing", nil, with(list[0], list[1]), false, false},
		{"a slice twice", nil, with(list[0], list[1], list[1], list[2]), false, false},
		{"each once after one twice", with(list[0], list[1], list[1]), with(list[0], list[1]), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &draMemo{}
			before := tc.first
			if before == nil {
				before = list
			}
			first, ok := d.poolsOf(before)
			if !ok {
				t.Fatal("the slices are one node's each, yet not grouped")
			}
			next, _ := d.poolsOf(tc.next)
			if kept := reflect.ValueOf(next).Pointer() == reflect.ValueOf(first).Pointer(); kept != tc.kept {
				t.Fatalf("grouping kept: %v, want %v", kept, tc.kept)
			}
			if patched := d.patched == 1; patched != tc.patched {
				t.Errorf("grouping patched: %v, want %v", patched, tc.patched)
			}
			if fresh, _ := (&draMemo{}).poolsOf(tc.next); !reflect.DeepEqual(next, fresh) {
				t.Fatalf("grouping %v, want the list's own %v", next, fresh)
			}
			// Once more, from the grouping just made (kept or patched).
			again, _ := d.poolsOf(slices.Clone(list))
			if want, _ := (&draMemo{}).poolsOf(list); !reflect.DeepEqual(again, want) {
				t.Fatalf("grouping back %v, want %v", again, want)
			}
		})
	}
}
