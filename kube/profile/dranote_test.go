package profile

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// podNoter is a DRA manager that records the pods it is told of, and
// whether the slices were listed after each.
type podNoter struct {
	fwk.SharedDRAManager
	told   []string
	listed []bool
}

func (n *podNoter) notePod(pod *v1.Pod) {
	n.told = append(n.told, pod.Name)
	n.listed = append(n.listed, false)
}

func (n *podNoter) ResourceSlices() fwk.ResourceSliceLister {
	return noterSlices{ResourceSliceLister: n.SharedDRAManager.ResourceSlices(), n: n}
}

type noterSlices struct {
	fwk.ResourceSliceLister
	n *podNoter
}

func (l noterSlices) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	if k := len(l.n.listed); k > 0 {
		l.n.listed[k-1] = true
	}
	return l.ResourceSliceLister.ListWithDeviceTaintRules()
}

// TestDRAPreFilterTellsTheManagerThePod: DynamicResources' PreFilter
// tells Setup.NotePod which pod it runs for before it lists the slices
// (through Setup.WrapDRA's manager), whether the memo serves
// (the default) or upstream's plugin does (the DRANodeAllocatableResources
// gate): the manager can list them for that pod.
func TestDRAPreFilterTellsTheManagerThePod(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate bool
	}{
		{"the memo", false},
		{"upstream's plugin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gate {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.DRANodeAllocatableResources, true)
			}
			c := memoCluster()
			var n *podNoter
			cfg, err := Default()
			if err != nil {
				t.Fatal(err)
			}
			f, err := NewFrameworkOn(context.Background(), &cfg.Profiles[0], Setup{
				Snapshot: backendcache.NewSnapshot(c.Pods, c.Nodes),
				Objects:  append(podsAndNodes(c), c.Objects...),
				WrapDRA: func(m fwk.SharedDRAManager) DRAWrap {
					n = &podNoter{SharedDRAManager: m}
					return DRAWrap{Manager: n}
				},
				NotePod: func(p *v1.Pod) { n.notePod(p) },
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			res := schedule(t, f, pod("p", "", withResourceClaim("want")))
			if res.Best == "" {
				t.Fatalf("p not placed: %+v", res)
			}
			if len(n.told) != 1 || n.told[0] != "p" || !n.listed[0] {
				t.Errorf("the manager was told of %v, slices listed after each: %v; want p, then a list", n.told, n.listed)
			}
		})
	}
}

// TestWrapDRAWithoutManager: a wrapper that returns no manager is an
// error when the framework is built, not a nil manager the plugins
// would dereference in their first cycle.
func TestWrapDRAWithoutManager(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewFrameworkOn(context.Background(), &cfg.Profiles[0], Setup{
		Snapshot: backendcache.NewEmptySnapshot(),
		WrapDRA:  func(fwk.SharedDRAManager) DRAWrap { return DRAWrap{} },
	})
	if err == nil || err.Error() != `profile "default-scheduler": DRA manager: Setup.WrapDRA returned no manager` {
		t.Fatalf("error %v, want the wrapper's missing manager named", err)
	}
}
