package profile

import (
	"context"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
)

// reversingLister is a DRA manager that lists each slice with its
// devices in reverse order (so that the allocator's first fit depends
// on which list it is given), and lists node by node when lazy.
type reversingLister struct {
	fwk.SharedDRAManager
	lazy  bool
	lazys int // the NodeLists that said yes
	lists int // the PublishedSlices asked
	nodes int // the NodeSlices given (unguarded: the plugin serialises them)
	rev   map[*resourceapi.ResourceSlice]*resourceapi.ResourceSlice
}

// reversed is sl with its devices reversed, one object per slice.
func (r *reversingLister) reversed(sl *resourceapi.ResourceSlice) *resourceapi.ResourceSlice {
	if o, ok := r.rev[sl]; ok {
		return o
	}
	c := *sl
	c.Spec.Devices = slices.Clone(sl.Spec.Devices)
	slices.Reverse(c.Spec.Devices)
	r.rev[sl] = &c
	return &c
}

func (r *reversingLister) ResourceSlices() fwk.ResourceSliceLister {
	return reversingSlices{ResourceSliceLister: r.SharedDRAManager.ResourceSlices(), r: r}
}

func (r *reversingLister) PublishedSlices() ([]*resourceapi.ResourceSlice, error) {
	r.lists++
	return r.SharedDRAManager.ResourceSlices().ListWithDeviceTaintRules()
}

func (r *reversingLister) NodeLists(*structured.AllocatedState) bool {
	if r.lazy {
		r.lazys++
	}
	return r.lazy
}

func (r *reversingLister) NodeSlice(sl *resourceapi.ResourceSlice, _ *structured.AllocatedState) *resourceapi.ResourceSlice {
	r.nodes++
	return r.reversed(sl)
}

type reversingSlices struct {
	fwk.ResourceSliceLister
	r *reversingLister
}

func (l reversingSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	list, err := l.ResourceSliceLister.ListWithDeviceTaintRules()
	out := make([]*resourceapi.ResourceSlice, len(list))
	for i, sl := range list {
		out[i] = l.r.reversed(sl)
	}
	return out, err
}

// scoreResource has prof's NodeResourcesFit score name besides.
func scoreResource(t *testing.T, prof *config.KubeSchedulerProfile, name string) {
	t.Helper()
	for _, pc := range prof.PluginConfig {
		if a, ok := pc.Args.(*config.NodeResourcesFitArgs); ok && a.ScoringStrategy != nil {
			a.ScoringStrategy.Resources = append(a.ScoringStrategy.Resources, config.ResourceSpec{Name: name, Weight: 1})
			return
		}
	}
	t.Fatal("no NodeResourcesFit args with a scoring strategy")
}

// lazyPlugin is memoPlugin over c with a reversingLister as the DRA
// manager, and NodeResourcesFit scoring the resource scored besides if
// it is not empty.
func lazyPlugin(t *testing.T, c Cluster, lazy bool, scored string) (*draMemo, *Framework, *reversingLister) {
	t.Helper()
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	if scored != "" {
		scoreResource(t, prof, scored)
	}
	prof.Plugins.MultiPoint.Enabled = slices.DeleteFunc(prof.Plugins.MultiPoint.Enabled, func(p config.Plugin) bool { return p.Name == dynamicresources.Name })
	r := &reversingLister{lazy: lazy, rev: map[*resourceapi.ResourceSlice]*resourceapi.ResourceSlice{}}
	f, err := NewFrameworkOn(context.Background(), prof, Setup{
		Snapshot: backendcache.NewSnapshot(c.Pods, c.Nodes),
		Objects:  append(podsAndNodes(c), c.Objects...),
		WrapDRA: func(m fwk.SharedDRAManager) DRAWrap {
			r.SharedDRAManager = m
			return DRAWrap{Manager: r}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, ok := registryPlugin(t, f, dynamicresources.Name, pluginArgs(cfg.Profiles[0], dynamicresources.Name)).(*draMemo)
	if !ok {
		t.Fatal("the registry's DynamicResources is not a *draMemo")
	}
	return m, f, r
}

// lazyOutcome is what a cycle gave on each node: Filter's answer, and
// the devices Reserve allocated there (nil if it did not fit).
type lazyOutcome struct {
	code    fwk.Code
	msg     string
	devices []string
}

// TestDRALazyCycleAllocatesAsUpstream: a lazy cycle (upstream's
// allocator built per node, over that node's slices as the manager
// lists them) answers every node as upstream's PreFilter and Filter
// over every slice do, and Reserve allocates the devices upstream's
// would, in the manager's order (reversed: the other order takes
// another device); where the published slices fail the memo's
// preconditions (a pool over two nodes, whose completeness the
// allocator reads from the other node's slice) the cycle is not lazy
// and the answers are upstream's all the same. The last case restricts
// the allocator to a node's slices where a precondition fails
// (draLazyForce), and requires that the answers then differ: the case
// tests the precondition. A profile that scores a DRA-backed extended
// resource (its scorer lists the slices itself) has no lazy cycle.
func TestDRALazyCycleAllocatesAsUpstream(t *testing.T) {
	poolOverTwo := func() Cluster {
		return slicesCluster(
			slice1("a-0", "a", "p", 1, 2, "gpu-0", "V100"), slice1("b-0", "b", "p", 1, 2, "gpu-1", "V100"),
			slice1("z-0", "z", "z", 1, 1, "gpu-0", "V100"))
	}
	for _, tc := range []struct {
		name     string
		c        Cluster
		force    bool   // draLazyForce
		scored   string // a resource NodeResourcesFit scores besides
		wantLazy bool
		differ   bool // the lazy cycle must disagree with upstream somewhere
	}{
		{name: "nodes with pools of their own", c: memoCluster(), wantLazy: true},
		{name: "a node of two pools and one of a pool of two slices", wantLazy: true, c: slicesCluster(
			slice1("a-0", "a", "a0", 1, 1, "gpu-0", "V100"), slice1("a-1", "a", "a1", 1, 1, "gpu-1", "V100"),
			slice1("b-0", "b", "b", 1, 2, "gpu-0", "V100"), slice1("b-1", "b", "b", 1, 2, "gpu-1", "V100"),
			slice1("z-0", "z", "z", 1, 2, "gpu-0", "V100"))},
		{name: "a pool over two nodes stands aside", c: poolOverTwo()},
		{name: "a score that lists the slices itself stands aside", c: memoCluster(), scored: "example.com/gpu"},
		{name: "a pool over two nodes, restricted anyway", c: poolOverTwo(), force: true, wantLazy: true, differ: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(was bool) { draLazyForce = was }(draLazyForce)
			draLazyForce = tc.force
			ctx := context.Background()
			m, f, r := lazyPlugin(t, tc.c, true, tc.scored)
			p := pod("p", "", withResourceClaim("want"))
			nodes, err := f.Snapshot().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			// Upstream over every slice: its PreFilter lists them all
			// (the tap is not armed), its Filter and Reserve on each
			// node in a cycle state of its own.
			want := map[string]lazyOutcome{}
			for _, ni := range nodes {
				cs := framework.NewCycleState()
				if _, st := m.DynamicResources.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
					t.Fatalf("upstream's PreFilter: %v", st)
				}
				want[ni.Node().Name] = reserveOutcome(t, f, cs, p, ni.Node().Name,
					m.DynamicResources.Filter(ctx, cs, p, ni), m.DynamicResources.Reserve, m.DynamicResources.Unreserve)
			}
			lazied := r.lazys
			got := map[string]lazyOutcome{}
			for _, ni := range nodes {
				cs := framework.NewCycleState()
				if _, st := m.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
					t.Fatalf("PreFilter: %v", st)
				}
				c := cycleMemo(cs)
				if lazy := c != nil && c.lazy; lazy != tc.wantLazy {
					t.Fatalf("lazy cycle: %v, want %v", lazy, tc.wantLazy)
				}
				// Every node filtered, the node reserved last: an
				// answer from the memo, or from a twin, as a cycle has.
				var st *fwk.Status
				for _, other := range nodes {
					s := m.Filter(ctx, cs, p, other)
					if other.Node().Name == ni.Node().Name {
						st = s
					}
				}
				got[ni.Node().Name] = reserveOutcome(t, f, cs, p, ni.Node().Name, st, m.Reserve, m.Unreserve)
			}
			if tc.wantLazy && !tc.force && r.lazys == lazied {
				t.Error("no lazy cycle")
			}
			differ := false
			for _, ni := range nodes {
				n := ni.Node().Name
				g, w := got[n], want[n]
				if g.code != w.code || g.msg != w.msg || !slices.Equal(g.devices, w.devices) {
					differ = true
					if !tc.differ {
						t.Errorf("node %s: lazy %+v, upstream over every slice %+v", n, g, w)
					}
				}
			}
			if tc.differ && !differ {
				t.Error("restricted to a node's slices where a pool is over two nodes, the answers are still upstream's: the case does not test the precondition")
			}
		})
	}
}

// TestDRALazyPlanFollowsSliceEvents: a lazy cycle's plan lists the
// published slices only after the slice tracker sent an event (none
// in a cycle after a cycle), and a slice deleted, updated or added
// between two cycles is in the next one's answers, which are upstream's
// over every slice on every node. The test fails if the tracker's
// events are not counted, or a count is not compared (the plan would
// keep the grouping of before the event: the deleted slice's node fits,
// the updated and the added slices' nodes do not).
func TestDRALazyPlanFollowsSliceEvents(t *testing.T) {
	withG := func() Cluster {
		c := memoCluster()
		c.Nodes = append(c.Nodes, node("g", "z"))
		return c
	}
	for _, tc := range []struct {
		name   string
		c      Cluster
		change func(f *Framework) error
		node   string // whose answer the change turns
	}{
		{name: "a slice deleted", c: memoCluster(), node: "a", change: func(f *Framework) error {
			_, sl := gpuNode("a", "V100", 2)
			return f.DeleteObject(sl)
		}},
		{name: "a slice updated", c: memoCluster(), node: "f", change: func(f *Framework) error {
			_, sl := gpuNode("f", "V100", 2)
			return f.UpdateObject(sl)
		}},
		{name: "a slice added", c: withG(), node: "g", change: func(f *Framework) error {
			_, sl := gpuNode("g", "V100", 1)
			return f.AddObject(sl)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m, f, r := lazyPlugin(t, tc.c, true, "")
			p := pod("p", "", withResourceClaim("want"))
			nodes, err := f.Snapshot().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			cycle := func() map[string]string {
				cs := framework.NewCycleState()
				if _, st := m.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
					t.Fatalf("PreFilter: %v", st)
				}
				if c := cycleMemo(cs); c == nil || !c.lazy {
					t.Fatal("not a lazy cycle")
				}
				out := map[string]string{}
				for _, ni := range nodes {
					st := m.Filter(ctx, cs, p, ni)
					out[ni.Node().Name] = st.Code().String() + ": " + st.Message()
				}
				return out
			}
			upstream := func() map[string]string {
				out := map[string]string{}
				for _, ni := range nodes {
					cs := framework.NewCycleState()
					if _, st := m.DynamicResources.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
						t.Fatalf("upstream's PreFilter: %v", st)
					}
					st := m.DynamicResources.Filter(ctx, cs, p, ni)
					out[ni.Node().Name] = st.Code().String() + ": " + st.Message()
				}
				return out
			}
			before := cycle()
			lists := r.lists
			if again := cycle(); r.lists != lists || !maps.Equal(again, before) {
				t.Errorf("a cycle after a cycle listed the published slices %d times, answered %v after %v", r.lists-lists, again, before)
			}
			if err := tc.change(f); err != nil {
				t.Fatal(err)
			}
			got, want := cycle(), upstream()
			if r.lists != lists+1 {
				t.Errorf("the cycle after the event listed the published slices %d times, want 1", r.lists-lists)
			}
			if !maps.Equal(got, want) {
				t.Errorf("after the event: lazy %v, upstream over every slice %v", got, want)
			}
			if got[tc.node] == before[tc.node] {
				t.Errorf("node %s answered %q before and after the event: the case does not change an answer", tc.node, got[tc.node])
			}
		})
	}
}

// reserveOutcome is the outcome of Filter's answer st on node, and if
// it fits, of reserve there: the devices of the claim "want" then in
// flight. unreserve gives them back.
func reserveOutcome(t *testing.T, f *Framework, cs fwk.CycleState, p *v1.Pod, node string, st *fwk.Status,
	reserve func(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status,
	unreserve func(context.Context, fwk.CycleState, *v1.Pod, string)) lazyOutcome {
	t.Helper()
	out := lazyOutcome{code: st.Code(), msg: st.Message()}
	if !st.IsSuccess() {
		return out
	}
	ctx := context.Background()
	if st := reserve(ctx, cs, p, node); !st.IsSuccess() {
		t.Fatalf("Reserve %s: %v", node, st)
	}
	defer unreserve(ctx, cs, p, node)
	alloc := f.fwk.SharedDRAManager().ResourceClaims().GetPendingAllocation("claim-want")
	if alloc == nil {
		t.Fatalf("Reserve %s: no allocation in flight", node)
	}
	for _, d := range alloc.Devices.Results {
		out.devices = append(out.devices, d.Pool+"/"+d.Device)
	}
	return out
}

// TestAsksNoDevices: a pod with no claim and no extended resource
// anywhere (upstream's PreFilter skips it before listing a slice) makes
// no lazy plan; a claim, or an extended resource in any container's
// requests or limits, the overhead or the pod's own resources (which a
// DeviceClass, or a class's implicit name, could serve) does.
func TestAsksNoDevices(t *testing.T) {
	gpu := v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   bool
	}{
		{"cpu and memory only", func(*v1.Pod) {}, true},
		{"hugepages, a native resource", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}
		}, true},
		{"a claim", func(p *v1.Pod) { p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}} }, false},
		{"a container's extended request", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = gpu }, false},
		{"an init container's extended limit", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: gpu}}}
		}, false},
		{"a class's implicit name", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpu"): resource.MustParse("1")}
		}, false},
		{"the overhead", func(p *v1.Pod) { p.Spec.Overhead = gpu }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := asksNoDevices(pod("p", "", tc.mutate)); got != tc.want {
				t.Errorf("asksNoDevices: %v, want %v", got, tc.want)
			}
		})
	}
}
