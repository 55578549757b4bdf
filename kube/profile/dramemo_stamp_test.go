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

// poolCells is a PoolVersionCeller whose counts the test moves (bump):
// a pool has a cell from its first move on, as the simulator's keeper
// makes them.
type poolCells struct {
	state *structured.AllocatedState
	cells map[dra.UniqueString]*uint64
}

func (p *poolCells) PoolVersion(state *structured.AllocatedState, pool dra.UniqueString) (uint64, bool) {
	if state != p.state {
		return 0, false
	}
	if c := p.cells[pool]; c != nil {
		return *c, true
	}
	return 0, true
}

func (p *poolCells) PoolVersionCell(pool dra.UniqueString) *uint64 { return p.cells[pool] }

func (p *poolCells) bump(pool string) {
	u := dra.MakeUniqueString(pool)
	if p.cells[u] == nil {
		p.cells[u] = new(uint64)
	}
	*p.cells[u]++
}

// TestDRAStamperFrontIsDRANodeStamp: a lazy cycle's stamps read through
// a front of places are DRANodeStamp's, whatever the front holds from
// earlier cycles: the same node at the same place (its pool's count
// moved since), a published slice replaced (another grouping), the
// NodeInfo object at the place given another node (another
// generation), another NodeInfo object, a place past the front's end,
// and a cycle that lists every slice (no front). Each case runs with a
// PoolVersioner of counts and with one of cells (PoolVersionCeller,
// whose cells the front keeps), moved before the first stamp and after
// (the pool has a cell only then): the stamp's count is PoolVersion's.
func TestDRAStamperFrontIsDRANodeStamp(t *testing.T) {
	for _, cells := range []bool{false, true} {
		for _, early := range []bool{false, true} {
			name := "counts"
			if cells {
				name = "cells"
			}
			if early {
				name += ", moved first"
			}
			t.Run(name, func(t *testing.T) { stamperFront(t, cells, early) })
		}
	}
}

func stamperFront(t *testing.T, cells, early bool) {
	_, slA := gpuNode("a", "V100", 2)
	_, slB := gpuNode("b", "V100", 2)
	_, grown := gpuNode("a", "V100", 4)
	st := &structured.AllocatedState{}
	pc := &poolCounts{state: st, counts: map[dra.UniqueString]uint64{}}
	pcs := &poolCells{state: st, cells: map[dra.UniqueString]*uint64{}}
	var vers PoolVersioner = pc
	bump := func(pool string) { pc.counts[dra.MakeUniqueString(pool)]++ }
	if cells {
		vers, bump = pcs, pcs.bump
	}
	if early {
		bump("a")
		bump("b")
	}
	d := &draMemo{shapes: map[*resourceapi.ResourceSlice]sliceShape{}, ids: map[string]string{}}
	grouped := func(pools map[string][][]*resourceapi.ResourceSlice) map[string]*nodeSlices {
		out := map[string]*nodeSlices{}
		for n, g := range pools {
			out[n] = groupOf(g)
		}
		return out
	}
	first := grouped(map[string][][]*resourceapi.ResourceSlice{"a": {{slA}}, "b": {{slB}}})
	firstTok := &grouping{}
	info := func(name string) *framework.NodeInfo {
		nd, _ := gpuNode(name, "V100", 0)
		ni := framework.NewNodeInfo()
		ni.SetNode(nd)
		return ni
	}
	niA := info("a")
	for _, tc := range []struct {
		name string
		lazy bool
		pub  map[string]*nodeSlices
		tok  *grouping
		ni   func() *framework.NodeInfo // the node at place 0
		at   int
		bump string // a pool whose count moves first
		want *resourceapi.ResourceSlice
	}{
		{name: "same node and place", lazy: true, pub: first, tok: firstTok, ni: func() *framework.NodeInfo { return niA }, want: slA},
		{name: "its pool's count moved", lazy: true, pub: first, tok: firstTok, ni: func() *framework.NodeInfo { return niA }, bump: "a", want: slA},
		{name: "its slice replaced", lazy: true, tok: &grouping{},
			pub: grouped(map[string][][]*resourceapi.ResourceSlice{"a": {{grown}}, "b": {{slB}}}),
			ni:  func() *framework.NodeInfo { return niA }, want: grown},
		{name: "the NodeInfo given another node", lazy: true, pub: first, tok: firstTok,
			ni: func() *framework.NodeInfo { nd, _ := gpuNode("b", "V100", 0); niA.SetNode(nd); return niA }, want: slB},
		{name: "another NodeInfo", lazy: true, pub: first, tok: firstTok, ni: func() *framework.NodeInfo { return info("a") }, want: slA},
		{name: "past the front's end", lazy: true, pub: first, tok: firstTok, ni: func() *framework.NodeInfo { return info("b") }, at: 7, want: slB},
		{name: "every slice listed", pub: first, tok: firstTok, ni: func() *framework.NodeInfo { return info("a") }, want: slA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			front := &DRAStampFront{}
			// An earlier cycle's place 0: node a of the first grouping.
			before := &draCycle{memo: d, key: "k", vers: vers, state: st, lazy: true, pub: first, pubTok: firstTok}
			DRAStamper{before}.Stamp(niA, niA.GetGeneration(), 0, front)
			if tc.bump != "" {
				bump(tc.bump)
			}
			c := &draCycle{memo: d, key: "k", vers: vers, state: st, lazy: tc.lazy, pub: tc.pub, pubTok: tc.tok}
			if !tc.lazy {
				c.pools, c.pub, c.pubTok = tc.pub, nil, nil
			}
			cs := framework.NewCycleState()
			cs.Write(draMemoKey, c)
			ni := tc.ni()
			s, ok := DRAStamperOf(cs)
			if !ok {
				t.Fatal("DRAStamperOf: false")
			}
			for range 2 { // the place written, then read
				got, ok := s.Stamp(ni, ni.GetGeneration(), tc.at, front)
				want, wantOK := DRANodeStamp(cs, ni)
				if got != want || ok != wantOK || got.slice != tc.want {
					t.Errorf("Stamp: %+v, %v; want %+v, %v, of slice %s", got, ok, want, wantOK, tc.want.Name)
				}
				if ver, _ := vers.PoolVersion(st, dra.MakeUniqueString(tc.want.Spec.Pool.Name)); got.pool != ver {
					t.Errorf("Stamp's count %d, its pool's %d", got.pool, ver)
				}
			}
		})
	}
}
