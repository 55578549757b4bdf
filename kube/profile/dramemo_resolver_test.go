package profile

import (
	"context"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/utils/ptr"
)

// laggingResolver is a DRA manager whose class resolver can be held at
// an earlier view (held: extended resource name to class), as a real
// cluster's is between the DeviceClass informer's store taking an event
// and the resolver's handler taking it.
type laggingResolver struct {
	fwk.SharedDRAManager
	mu   sync.Mutex
	held map[v1.ResourceName]*resourceapi.DeviceClass // nil: the manager's own
	// calls, if above 0, is the number of resolvers given with held
	// before held is let go (the resolver catches up).
	calls int
}

func (l *laggingResolver) DeviceClassResolver() fwk.DeviceClassResolver {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return l.SharedDRAManager.DeviceClassResolver()
	}
	r := heldResolver(l.held)
	if l.calls > 0 {
		if l.calls--; l.calls == 0 {
			l.held = nil
		}
	}
	return r
}

func (l *laggingResolver) hold(m map[v1.ResourceName]*resourceapi.DeviceClass) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = m
}

// heldResolver resolves from a fixed map.
type heldResolver map[v1.ResourceName]*resourceapi.DeviceClass

func (h heldResolver) GetDeviceClass(name v1.ResourceName) *resourceapi.DeviceClass { return h[name] }

// TestDRAMemoKeyFollowsTheResolver: upstream's DynamicResources reads
// which class serves a pod's extended resource from the DRA manager's
// class resolver, which on a real cluster takes a DeviceClass event
// after the informer's store (the lister what the pod asks is read
// from) has it. An answer computed while the two disagree must not be
// kept under what the pod asks once they agree: on every node, the
// memo then answers what upstream answers. The class accel (V100s)
// gains or loses its extendedResourceName example.com/accel; node c
// has one V100 of two half used, so that the claim "want" (600 of a
// shared V100) fits there alone, not beside a whole device of accel.
func TestDRAMemoKeyFollowsTheResolver(t *testing.T) {
	named := v1.ResourceName("example.com/accel")
	accel := func(served bool) *resourceapi.DeviceClass {
		c := modelClass("accel", "V100")
		if served {
			c.Spec.ExtendedResourceName = ptr.To(string(named))
		}
		return c
	}
	for _, tc := range []struct {
		name          string
		before, after bool // accel serves example.com/accel before the change, after it
		// midCycle: the store and the resolver agree when the first
		// pod's PreFilter runs, and the resolver, alone, loses the name
		// for the first pod's Filters (upstream's reads it at each node).
		midCycle bool
		// inPreFilter: the resolver, alone, gains the name while the
		// first pod's PreFilter runs, after upstream's read it.
		inPreFilter   bool
		first, second *v1.Pod
	}{{
		name:   "the name taken away: a later pod without it asks the same claim",
		before: true, after: false,
		first:  pod("p1", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
		second: pod("p2", "", withResourceClaim("want")),
	}, {
		name:   "the name given: a later pod with it asks the same",
		before: false, after: true,
		first:  pod("p1", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
		second: pod("p2", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
	}, {
		name:   "the resolver changed between PreFilter and Filter, then back",
		before: true, after: true, midCycle: true,
		first:  pod("p1", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
		second: pod("p2", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
	}, {
		name:   "the resolver caught up inside PreFilter, after upstream's read it",
		before: false, after: true, inPreFilter: true,
		first:  pod("p1", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
		second: pod("p2", "", withResourceClaim("want"), asks(v1.ResourceList{named: milli(1)})),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := memoCluster()
			c.Objects = append(c.Objects, accel(tc.before))
			cfg, err := Default()
			if err != nil {
				t.Fatal(err)
			}
			prof := &cfg.Profiles[0]
			prof.Plugins.MultiPoint.Enabled = slices.DeleteFunc(prof.Plugins.MultiPoint.Enabled, func(p config.Plugin) bool { return p.Name == dynamicresources.Name })
			var lag *laggingResolver
			f, err := NewFrameworkOn(context.Background(), prof, Setup{
				Snapshot: backendcache.NewSnapshot(c.Pods, c.Nodes),
				Objects:  append(podsAndNodes(c), c.Objects...),
				WrapDRA: func(m fwk.SharedDRAManager) DRAWrap {
					lag = &laggingResolver{SharedDRAManager: m}
					return DRAWrap{Manager: lag}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			m, ok := registryPlugin(t, f, dynamicresources.Name, pluginArgs(cfg.Profiles[0], dynamicresources.Name)).(*draMemo)
			if !ok {
				t.Fatal("the registry's DynamicResources is not a draMemo")
			}
			nodes, err := f.Snapshot().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			held := map[v1.ResourceName]*resourceapi.DeviceClass{}
			if tc.before {
				held[named] = accel(true)
			}
			switch {
			case tc.inPreFilter:
				// The memo's PreFilter reads it first, then upstream's.
				lag.hold(held)
				lag.calls = 2
			case !tc.midCycle:
				lag.hold(held)
			}
			if err := f.UpdateObject(accel(tc.after)); err != nil {
				t.Fatal(err)
			}
			// The store has the change, the resolver not yet.
			ctx := context.Background()
			first, _ := preFilterBoth(t, m, tc.first)
			if tc.midCycle {
				lag.hold(map[v1.ResourceName]*resourceapi.DeviceClass{})
			}
			for _, ni := range nodes {
				m.Filter(ctx, first, tc.first, ni)
			}
			lag.hold(nil)
			memoAgreesOnEveryNode(t, m, tc.second, nodes)
		})
	}
}
