package profile

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestDRAMemoForgetKeepsNames: once the memo holds many more slice
// objects than the cluster has slices, it drops what it keeps by object
// (a lister that orders devices for the pod gives new objects as the
// cluster fills), but keeps the names of the specs and the answers kept
// by them, so that a later pod asking the same starts with the answers
// of the earlier cycles; a slice replaced after the drop by one of
// another spec is named apart, and a node of it answered afresh. Once
// the names are many, they go, and the answers with them. On every node
// the memo answers what upstream answers.
func TestDRAMemoForgetKeepsNames(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		stuff   func(m *draMemo, n int) // makes forget drop at the next cycle
		replace bool                    // node a's slice replaced by one of T4s
		kept    int                     // the answers the next cycle starts with
	}{
		{"the objects dropped", stuffShapes, false, 4},
		{"the objects dropped, then a slice replaced", stuffShapes, true, 4},
		{"the names dropped", stuffIDs, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := memoCluster()
			c.Objects = append(c.Objects, shareClaim("again", 600, "V100", "", ""))
			m, f := memoPlugin(t, c)
			nodes, err := f.Snapshot().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			p1 := pod("p1", "", withResourceClaim("want"))
			first, _ := preFilterBoth(t, m, p1)
			for _, ni := range nodes {
				m.Filter(ctx, first, p1, ni)
			}
			tc.stuff(m, len(nodes))
			if tc.replace {
				_, sl := gpuNode("a", "T4", 2)
				if err := f.UpdateObject(sl); err != nil {
					t.Fatal(err)
				}
				// The new slice named first after the drop: a name
				// given again would be the first spec's, a V100's.
				m.forget(len(nodes))
				m.shape(sl)
			}
			p2 := pod("p2", "", withResourceClaim("again"))
			memo, _ := preFilterBoth(t, m, p2)
			if n := len(cycleMemo(memo).asks); n != tc.kept {
				t.Errorf("the second cycle starts with %d answers of the first, want %d", n, tc.kept)
			}
			if len(m.shapes) > 2*len(nodes)+1024 {
				t.Errorf("%d shapes kept after the cycle began, want them dropped", len(m.shapes))
			}
			memoAgreesOnEveryNode(t, m, p2, nodes)
		})
	}
}

// stuffShapes fills m's shapes past what forget keeps for n slices.
func stuffShapes(m *draMemo, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range 2*n + 1025 {
		m.shapes[&resourceapi.ResourceSlice{}] = sliceShape{name: "stuffed"}
	}
}

// stuffIDs fills m's names of specs past what forget keeps for n
// slices.
func stuffIDs(m *draMemo, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range 2*n + 1025 {
		m.next++
		m.ids[string(rune(i))+"stuffed"] = "x"
	}
}

// TestDRAMemoForgetAgesShapes: a slice object named before forget drops
// the objects keeps its name after (it is moved back from the older
// round, not named again), and a new object of its spec gets that name;
// once the names themselves go, the older round goes with them, and the
// object is named afresh, apart from every name given before.
func TestDRAMemoForgetAgesShapes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stuff     func(m *draMemo, n int)
		kept      bool // the object's name kept
		olderLeft int  // the objects in the older round after forget
	}{
		{name: "the objects dropped", stuff: stuffShapes, kept: true, olderLeft: 2*4 + 1025 + 1},
		{name: "the names dropped after the objects", stuff: func(m *draMemo, n int) {
			stuffShapes(m, n)
			m.forget(n)
			stuffIDs(m, n)
		}, olderLeft: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &draMemo{shapes: map[*resourceapi.ResourceSlice]sliceShape{}, ids: map[string]string{},
				across: map[string]map[string]memoAnswer{}, uses: map[*resourceapi.ResourceSlice]sliceUse{}}
			_, sl := gpuNode("a", "V100", 2)
			before := d.shape(sl).name
			tc.stuff(d, 4)
			d.forget(4)
			if len(d.shapes) != 0 || len(d.older) != tc.olderLeft {
				t.Fatalf("after forget: %d objects, %d older, want 0 and %d", len(d.shapes), len(d.older), tc.olderLeft)
			}
			after := d.shape(sl).name
			if (after == before) != tc.kept {
				t.Errorf("name %q after forget, %q before: kept %v, want %v", after, before, after == before, tc.kept)
			}
			if _, again := gpuNode("b", "V100", 2); d.shape(again).name != after {
				t.Errorf("a new object of the spec named %q, want %q", d.shape(again).name, after)
			}
		})
	}
}
