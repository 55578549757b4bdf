package profile

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestDRANodeSlicesDerivedFollowsTheObject: a node's grouping of the
// slice the lister gave (derivedLike) is kept for that object alone:
// the same object again gets the grouping made for it, another object
// (the devices in another order) one of its own, each holding the
// object given and the published grouping's pool; a node of several
// slices keeps none. It fails if the keep is read without comparing
// the object.
func TestDRANodeSlicesDerivedFollowsTheObject(t *testing.T) {
	_, pub := gpuNode("a", "V100", 2)
	a, b := pub.DeepCopy(), pub.DeepCopy()
	b.Spec.Devices[0], b.Spec.Devices[1] = b.Spec.Devices[1], b.Spec.Devices[0]
	g := groupOf([][]*resourceapi.ResourceSlice{{pub}})
	type step struct {
		name  string
		given []*resourceapi.ResourceSlice
		same  bool // the grouping the step before gave
	}
	var last *nodeSlices
	for _, s := range []step{
		{name: "an object", given: []*resourceapi.ResourceSlice{a}},
		{name: "the same object again", given: []*resourceapi.ResourceSlice{a}, same: true},
		{name: "another object", given: []*resourceapi.ResourceSlice{b}},
		{name: "the first object back", given: []*resourceapi.ResourceSlice{a}},
		{name: "two slices", given: []*resourceapi.ResourceSlice{a, b}},
		{name: "two slices again", given: []*resourceapi.ResourceSlice{a, b}},
	} {
		got := g.derivedLike([][]*resourceapi.ResourceSlice{s.given})
		if len(got.pools) != 1 || len(got.pools[0]) != len(s.given) || got.pools[0][0] != s.given[0] {
			t.Fatalf("%s: a grouping of %d pools, first %p, want one of the %d objects given, first %p", s.name, len(got.pools), got.pools[0][0], len(s.given), s.given[0])
		}
		if len(s.given) == 1 && (!got.named || got.pool != g.pool) {
			t.Errorf("%s: pool %v (named %v), want the published grouping's %v", s.name, got.pool, got.named, g.pool)
		}
		if (got == last) != s.same {
			t.Errorf("%s: the grouping before: %v, want %v", s.name, got == last, s.same)
		}
		last = got
	}
}
