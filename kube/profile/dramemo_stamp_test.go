package profile

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	dra "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestDRANodeStamp: a node's stamp names its one slice object and its
// pool's count; it moves when the pool's count moves or the slice is
// replaced, not when another pool's count moves; a node without slices
// has the zero stamp, one whose slice has no devices that slice alone; a node of several slices or pools, a state whose
// counts the manager does not know, and a cycle the memo does not keep
// across cycles have none.
func TestDRANodeStamp(t *testing.T) {
	_, sl := gpuNode("a", "V100", 2)
	_, other := gpuNode("b", "V100", 2)
	_, replaced := gpuNode("a", "V100", 4)
	info := func(name string) *framework.NodeInfo {
		nd, _ := gpuNode(name, "V100", 0)
		ni := framework.NewNodeInfo()
		ni.SetNode(nd)
		return ni
	}
	st := &structured.AllocatedState{}
	pc := &poolCounts{state: st, counts: map[dra.UniqueString]uint64{}}
	d := &draMemo{shapes: map[*resourceapi.ResourceSlice]sliceShape{}, ids: map[string]string{}}
	stamp := func(key string, vers PoolVersioner, state *structured.AllocatedState, pools map[string][][]*resourceapi.ResourceSlice, node string) (DRAStamp, bool) {
		cs := framework.NewCycleState()
		grouped := map[string]*nodeSlices{}
		for n, g := range pools {
			grouped[n] = groupOf(g)
		}
		cs.Write(draMemoKey, &draCycle{memo: d, key: key, vers: vers, state: state, pools: grouped})
		return DRANodeStamp(cs, info(node))
	}
	one := map[string][][]*resourceapi.ResourceSlice{"a": {{sl}}, "b": {{other}}}
	before, ok := stamp("k", pc, st, one, "a")
	if !ok || before.slice != sl {
		t.Fatalf("a's stamp: %+v, %v; want its slice, true", before, ok)
	}
	pc.counts[dra.MakeUniqueString("b")]++
	if s, ok := stamp("k", pc, st, one, "a"); !ok || s != before {
		t.Errorf("after b's pool changed: %+v, %v; want a's stamp as before", s, ok)
	}
	pc.counts[dra.MakeUniqueString("a")]++
	if s, ok := stamp("k", pc, st, one, "a"); !ok || s == before {
		t.Errorf("after a's pool changed: %+v, %v; want another stamp", s, ok)
	}
	now, _ := stamp("k", pc, st, one, "a")
	if s, ok := stamp("k", pc, st, map[string][][]*resourceapi.ResourceSlice{"a": {{replaced}}}, "a"); !ok || s == now {
		t.Errorf("with its slice replaced: %+v, %v; want another stamp", s, ok)
	}
	_, empty := gpuNode("e", "V100", 0)
	if s, ok := stamp("k", pc, st, map[string][][]*resourceapi.ResourceSlice{"e": {{empty}}}, "e"); !ok || s != (DRAStamp{slice: empty}) {
		t.Errorf("a node whose slice has no devices: %+v, %v; want its slice, true", s, ok)
	}
	// A pool named otherwise than its node: the pool's count moves the
	// stamp, the node's name's does not.
	_, ofP := gpuNode("a", "V100", 2)
	ofP.Spec.Pool.Name = "p"
	named := map[string][][]*resourceapi.ResourceSlice{"a": {{ofP}}}
	was, _ := stamp("k", pc, st, named, "a")
	pc.counts[dra.MakeUniqueString("a")]++
	if s, ok := stamp("k", pc, st, named, "a"); !ok || s != was {
		t.Errorf("pool p's slice after the count of a pool named a moved: %+v, %v; want %+v", s, ok, was)
	}
	pc.counts[dra.MakeUniqueString("p")]++
	if s, ok := stamp("k", pc, st, named, "a"); !ok || s == was {
		t.Errorf("pool p's slice after p's count moved: %+v, %v; want another stamp", s, ok)
	}
	if s, ok := stamp("k", pc, st, one, "c"); !ok || s != (DRAStamp{}) {
		t.Errorf("a node without slices: %+v, %v; want the zero stamp, true", s, ok)
	}
	for _, tc := range []struct {
		name  string
		key   string
		vers  PoolVersioner
		state *structured.AllocatedState
		pools map[string][][]*resourceapi.ResourceSlice
	}{
		{"two slices", "k", pc, st, map[string][][]*resourceapi.ResourceSlice{"a": {{sl, replaced}}}},
		{"two pools", "k", pc, st, map[string][][]*resourceapi.ResourceSlice{"a": {{sl}, {other}}}},
		{"counts unknown", "k", pc, &structured.AllocatedState{}, one},
		{"not kept across cycles", "", pc, st, one},
	} {
		if s, ok := stamp(tc.key, tc.vers, tc.state, tc.pools, "a"); ok {
			t.Errorf("%s: %+v, true; want none", tc.name, s)
		}
	}
	if _, ok := DRAFilterKey(framework.NewCycleState()); ok {
		t.Error("DRAFilterKey of a cycle without DynamicResources' memo: true")
	}
}
