package sim

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/kube/gpu"
)

// memoNode is a trace-like node of gpus V100s, with cpu millicores.
func memoNode(cpu int64, model string, gpus int64) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{LabelGPUModel: model}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:                    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
			v1.ResourceMemory:                 resource.MustParse("64Gi"),
			v1.ResourceName(ResourceGPUMilli): *resource.NewQuantity(gpus*gpu.Milli, resource.DecimalSI),
		}}}
}

// claimedPod is gpuPod with a claim named after it.
func claimedPod(name string, gpuMilli int64) *v1.Pod {
	p := gpuPod(name, gpuMilli)
	c := "claim-" + name
	p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &c}}
	return p
}

// allocatedClaim is pod's claim, allocated device gpu-i of node n's pool,
// or not allocated if i < 0.
func allocatedClaim(pod string, i int) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-" + pod, Namespace: "default"}}
	if i >= 0 {
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: traceGPUDriver, Pool: "n", Device: fmt.Sprintf("gpu-%d", i)}}}}
	}
	return c
}

// memoWorld is what a rebuild reads: the node, its pods, the claims.
type memoWorld struct {
	node   *v1.Node
	pods   []*v1.Pod
	claims map[string]*resourceapi.ResourceClaim
	// extraCPU is added to the NodeInfo's requested CPU after its pods,
	// as a PodGroup's cycle's assumed pods would change it.
	extraCPU int64
}

func (w memoWorld) nodeInfo() *framework.NodeInfo {
	ni := framework.NewNodeInfo(w.pods...)
	ni.SetNode(w.node)
	ni.Requested.MilliCPU += w.extraCPU
	return ni
}

func (w memoWorld) get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	if c, ok := w.claims[namespace+"/"+name]; ok {
		return c, nil
	}
	return nil, errors.New("not found")
}

// baseWorld is node n with two GPUs: a's 300 on gpu-1, b's 500 on gpu-0
// (not the best fit's order, so that a rebuild that ignored the claims
// would tell).
func baseWorld() memoWorld {
	a, b := claimedPod("a", 300), claimedPod("b", 500)
	return memoWorld{node: memoNode(32000, "V100", 2), pods: []*v1.Pod{a, b},
		claims: map[string]*resourceapi.ResourceClaim{"default/claim-a": allocatedClaim("a", 1), "default/claim-b": allocatedClaim("b", 0)}}
}

// TestDRANodeMemoInvalidation: the memo of rebuilt nodes gives, after
// each change, the GPUs a rebuild without it gives, and rebuilds exactly
// when something a rebuild reads changed; with the claims' events
// counted per pool (as the keeper counts them: every change of a claim
// allocated on the pool, before or after), and without. With the counts
// and no event on the node's pool, the check looks no claim up.
func TestDRANodeMemoInvalidation(t *testing.T) {
	for _, c := range []struct {
		name    string
		change  func(w *memoWorld)
		skip    types.UID // the second call's (the first's is "q", on no pod)
		rebuild bool
		// elsewhere is a pool (not the node's) whose count moves.
		elsewhere string
	}{
		{name: "nothing changed", change: func(*memoWorld) {}},
		{name: "a claim event on another node's pool", change: func(*memoWorld) {}, elsewhere: "m"},
		{name: "another pod left out, on no node", change: func(*memoWorld) {}, skip: "zzz"},
		{name: "the pod left out is on the node", change: func(*memoWorld) {}, skip: "a", rebuild: true},
		{name: "a pod came", change: func(w *memoWorld) {
			w.pods = append(w.pods, claimedPod("c", 200))
			w.claims["default/claim-c"] = allocatedClaim("c", 1)
		}, rebuild: true},
		{name: "a pod left", change: func(w *memoWorld) { w.pods = w.pods[1:] }, rebuild: true},
		{name: "the pods in another order", change: func(w *memoWorld) { slices.Reverse(w.pods) }, rebuild: true},
		{name: "a pod object replaced", change: func(w *memoWorld) { w.pods[0] = claimedPod("a", 300) }, rebuild: true},
		{name: "a claim allocated elsewhere", change: func(w *memoWorld) { w.claims["default/claim-a"] = allocatedClaim("a", 0) }, rebuild: true},
		{name: "a claim's allocation dropped", change: func(w *memoWorld) { w.claims["default/claim-b"] = allocatedClaim("b", -1) }, rebuild: true},
		{name: "a claim object replaced alike", change: func(w *memoWorld) { w.claims["default/claim-a"] = allocatedClaim("a", 1) }, rebuild: true},
		{name: "a claim gone", change: func(w *memoWorld) { delete(w.claims, "default/claim-a") }, rebuild: true},
		{name: "requested CPU changed, pods alike", change: func(w *memoWorld) { w.extraCPU = 16000 }, rebuild: true},
		{name: "the node's CPU changed", change: func(w *memoWorld) { w.node = memoNode(16000, "V100", 2) }, rebuild: true},
		{name: "the node's model changed", change: func(w *memoWorld) { w.node = memoNode(32000, "T4", 2) }, rebuild: true},
		{name: "the node's GPUs changed", change: func(w *memoWorld) { w.node = memoNode(32000, "V100", 4) }, rebuild: true},
		{name: "a new node object alike", change: func(w *memoWorld) { w.node = memoNode(32000, "V100", 2) }},
	} {
		for _, counted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, counted %v", c.name, counted), func(t *testing.T) {
				w := baseWorld()
				events := map[string]uint64{}
				var count claimCounter
				if counted {
					count = countFunc(func(pool string) (uint64, bool) { return events[pool], true })
				}
				m := newDRANodeMemo()
				first := m.node(w.nodeInfo(), "q", w.get, count, false)
				if want := draNodeFrom(nodeInOf(w.nodeInfo()), w.nodeInfo(), "q", w.get); !sameGPUNode(first, want) {
					t.Fatalf("first call %+v, want %+v", first, want)
				}
				before := maps.Clone(w.claims)
				c.change(&w)
				if !maps.Equal(before, w.claims) {
					events["n"]++
				}
				if c.elsewhere != "" {
					events[c.elsewhere]++
				}
				skip := c.skip
				if skip == "" {
					skip = "q"
				}
				ni := w.nodeInfo()
				lookups := 0
				get := func(namespace, name string) (*resourceapi.ResourceClaim, error) {
					lookups++
					return w.get(namespace, name)
				}
				got := m.node(ni, skip, get, count, false)
				want := draNodeFrom(nodeInOf(ni), ni, skip, w.get)
				if !sameGPUNode(got, want) {
					t.Errorf("memo gives %+v, a rebuild %+v", got, want)
				}
				if rebuilt := m.builds == 2; rebuilt != c.rebuild {
					t.Errorf("rebuilt: %v, want %v", rebuilt, c.rebuild)
				}
				if counted && !c.rebuild && lookups > 0 {
					t.Errorf("%d claims looked up, want none: the count of the node's pool did not move", lookups)
				}
			})
		}
	}
}

// TestDRANodeMemoReadsTheClaims: the base world's GPUs are the claims'
// devices, not the best fit's, so the invalidation cases above see a
// claim's change.
func TestDRANodeMemoReadsTheClaims(t *testing.T) {
	w := baseWorld()
	n := newDRANodeMemo().node(w.nodeInfo(), "q", w.get, nil, false)
	if want := []int64{500, 700}; !slices.Equal(n.Free, want) {
		t.Errorf("GPUs free %v, want %v (b's 500 on gpu-0, a's 300 on gpu-1)", n.Free, want)
	}
}

// countFunc is a claimCounter that keeps no cell.
type countFunc func(pool string) (uint64, bool)

func (f countFunc) claimCount(pool string, _ **claimCell) (uint64, bool) { return f(pool) }

func sameGPUNode(a, b *gpu.Node) bool {
	return a.Name == b.Name && a.Model == b.Model && a.CPU == b.CPU && a.Mem == b.Mem && a.CPUFree == b.CPUFree &&
		a.MemFree == b.MemFree && slices.Equal(a.Free, b.Free)
}

// TestDRANodeMemoChangesNoPlacement: replays of the differential cases
// (pods that end, probes that arrive together, every policy; and a
// cluster of 250 nodes) place the same pods on the same nodes and
// devices, with the memo of rebuilt nodes and without it, at each of
// several points of the replay.
func TestDRANodeMemoChangesNoPlacement(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() || raceDetector {
		seeds = 8
	}
	diffEveryPolicy(t, seeds, "the memo", func(t *testing.T, c diffCase, memo bool) []draPlacement {
		defer func(on bool) { draNodeMemoOn = on }(draNodeMemoOn)
		draNodeMemoOn = memo
		return draProbePlacements(t, c)
	})
}

// TestDRANodeClaimsCountedChangeNoPlacement: replays of the differential
// cases place the same pods on the same nodes and devices with the node
// memo's claim lookups skipped by the claims' event counts and without,
// and wherever they were skipped the lookups would have given the
// claims the memo's GPUs were rebuilt from.
func TestDRANodeClaimsCountedChangeNoPlacement(t *testing.T) {
	seeds := diffSeeds()
	skipped := 0
	defer func() { draNodeClaimsCheck = nil }()
	draNodeClaimsCheck = func(node string, same bool) {
		skipped++
		if !same {
			t.Errorf("node %s: the claims' count did not move, yet a claim looked up is another", node)
		}
	}
	diffEveryPolicy(t, seeds, "the claims' counts", func(t *testing.T, c diffCase, on bool) []draPlacement {
		defer func(was bool) { draNodeClaimsKeptOn = was }(draNodeClaimsKeptOn)
		draNodeClaimsKeptOn = on
		return draProbePlacements(t, c)
	})
	if skipped == 0 {
		t.Error("no claim lookups were skipped")
	}
}

// draPlacement is what a DRA replay had placed at one instant: each
// pod's node, and its GPUs' indices.
type draPlacement struct {
	nodes   map[string]string
	devices map[string][]int
}

// draProbePlacements replays c with GPUs as DRA devices and returns what
// is placed half a second past the second before the first probe's
// arrival, past that arrival, and past the second after the last
// probe's: no binding is in flight then.
func draProbePlacements(t *testing.T, c diffCase) []draPlacement {
	t.Helper()
	sc := traceScenario(c.trace(t))
	sc.Seed = c.seed
	sc.Scheduler.PercentageOfNodesToScore = c.percentage
	sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy = GPUModelDRA, c.policy.String()
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.s.close()
	var out []draPlacement
	for _, at := range []int{c.probeAt(0) - 1, c.probeAt(0), c.probeAt(len(c.probes)-1) + 1} {
		if err := r.Until(time.Duration(at)*time.Second + time.Second/2); err != nil {
			t.Fatal(err)
		}
		n, d := draPlaced(t, r.s)
		out = append(out, draPlacement{n, d})
	}
	return out
}

// diffEveryPolicy runs, for every GPU policy, the differential cases of
// seeds 1 to seeds and a cluster of 250 nodes through replay with an
// optimisation (named what) on and off, and fails t where the
// placements differ.
func diffEveryPolicy(t *testing.T, seeds uint64, what string, replay func(t *testing.T, c diffCase, on bool) []draPlacement) {
	for _, p := range gpu.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			cases := []diffCase{genLargeDiffCase(2, p, 100)}
			for seed := range seeds {
				cases = append(cases, genDiffCase(seed+1, p))
			}
			for _, c := range cases {
				if on, off := replay(t, c, true), replay(t, c, false); !reflect.DeepEqual(on, off) {
					t.Errorf("%s: placements with %s\n%+v\nwithout\n%+v", c.name, what, on, off)
				}
			}
		})
	}
}

// TestDRANodeMemoByGeneration: outside a PodGroup's cycle, a node of the
// generation its entry was checked at, with the same claims' count,
// leaving out the same of its pods (the pod scored, on no node, differs
// from cycle to cycle), is the entry's without a look at its pods or
// claims;
// any of those moved, or a PodGroup's cycle on either side (whose
// assumed pods leave the generation as it was), and the node is checked
// as before. Each answer is a rebuild's.
func TestDRANodeMemoByGeneration(t *testing.T) {
	for _, c := range []struct {
		name string
		// firstByGen and byGen are the two calls' (false: a PodGroup's
		// cycle).
		firstByGen, byGen bool
		change            func(w *memoWorld, ni *framework.NodeInfo) *framework.NodeInfo
		skip              types.UID
		firstSkip         types.UID // the first call's ("q", on no pod, if empty)
		counted           bool
		claimEvent        bool // the node's pool's count moves
		wantByGen         bool
		rebuild           bool
	}{
		{name: "the same generation", firstByGen: true, byGen: true, counted: true, wantByGen: true},
		{name: "a new generation, the same content", firstByGen: true, byGen: true, counted: true,
			change: func(w *memoWorld, _ *framework.NodeInfo) *framework.NodeInfo { return w.nodeInfo() }},
		{name: "a claim event on the node's pool", firstByGen: true, byGen: true, counted: true, claimEvent: true, rebuild: true,
			change: func(w *memoWorld, ni *framework.NodeInfo) *framework.NodeInfo {
				w.claims["default/claim-a"] = allocatedClaim("a", 0)
				return ni
			}},
		{name: "claims not counted", firstByGen: true, byGen: true},
		{name: "another pod left out, on no node", firstByGen: true, byGen: true, counted: true, skip: "zzz", wantByGen: true},
		{name: "the pod left out is on the node", firstByGen: true, byGen: true, counted: true, skip: "a", rebuild: true},
		{name: "the pod left out first is on the node", firstByGen: true, byGen: true, counted: true, firstSkip: "a", rebuild: true},
		{name: "the pod on the node left out twice", firstByGen: true, byGen: true, counted: true, firstSkip: "a", skip: "a", wantByGen: true},
		{name: "a member assumed in a PodGroup's cycle", firstByGen: true, byGen: false, counted: true, rebuild: true,
			change: func(w *memoWorld, ni *framework.NodeInfo) *framework.NodeInfo {
				gen := ni.Generation
				ni.AddPod(claimedPod("c", 200))
				ni.Generation = gen // as Snapshot.AssumePod leaves it
				w.pods = append(w.pods, claimedPod("c", 200))
				w.claims["default/claim-c"] = allocatedClaim("c", 1)
				return ni
			}},
		{name: "checked first in a PodGroup's cycle", firstByGen: false, byGen: true, counted: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := baseWorld()
			events := map[string]uint64{}
			var count claimCounter
			if c.counted {
				count = countFunc(func(pool string) (uint64, bool) { return events[pool], true })
			}
			m := newDRANodeMemo()
			ni := w.nodeInfo()
			firstSkip := c.firstSkip
			if firstSkip == "" {
				firstSkip = "q"
			}
			m.node(ni, firstSkip, w.get, count, c.firstByGen)
			if c.change != nil {
				ni = c.change(&w, ni)
			}
			if c.claimEvent {
				events["n"]++
			}
			skip := c.skip
			if skip == "" {
				skip = "q"
			}
			got := m.node(ni, skip, w.get, count, c.byGen)
			fresh := w.nodeInfo()
			if want := draNodeFrom(nodeInOf(fresh), fresh, skip, w.get); !sameGPUNode(got, want) {
				t.Errorf("memo gives %+v, a rebuild %+v", got, want)
			}
			if byGen := m.byGen == 1; byGen != c.wantByGen {
				t.Errorf("by generation: %v, want %v", byGen, c.wantByGen)
			}
			if rebuilt := m.builds == 2; rebuilt != c.rebuild {
				t.Errorf("rebuilt: %v, want %v", rebuilt, c.rebuild)
			}
		})
	}
}

// TestDRANodeMemoLendSurvivesPanic: a user of the lent node that panics
// midway through scoring a placement (the pod placed on the node, not
// yet taken off) leaves the memo giving, on the next call, the GPUs a
// rebuild gives, not the node as the user left it (the scheduler
// recovers a plugin's panic and goes on); one that returns normally
// keeps the node. Fails with draNodeLendForgets off.
func TestDRANodeMemoLendSurvivesPanic(t *testing.T) {
	for _, c := range []struct {
		name    string
		panics  bool
		rebuild bool
	}{
		{name: "the user returns", panics: false, rebuild: false},
		{name: "the user panics midway", panics: true, rebuild: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := baseWorld()
			count := countFunc(func(string) (uint64, bool) { return 0, true })
			m := newDRANodeMemo()
			ni := w.nodeInfo()
			r := gpu.Request{Count: 1, Share: 200}
			func() {
				defer func() { _ = recover() }()
				m.lend(ni, "q", w.get, count, true, func(n *gpu.Node) int64 {
					n.Place(r, []int{0})
					if c.panics {
						panic("a policy's bug")
					}
					n.Release(r, []int{0})
					return 0
				})
			}()
			got := m.node(ni, "q", w.get, count, true)
			if want := draNodeFrom(nodeInOf(ni), ni, "q", w.get); !sameGPUNode(got, want) {
				t.Errorf("memo gives %+v, a rebuild %+v", got, want)
			}
			if rebuilt := m.builds == 2; rebuilt != c.rebuild {
				t.Errorf("rebuilt: %v, want %v", rebuilt, c.rebuild)
			}
		})
	}
}

// TestDRANodeMemoKeepsScoresPerContent: a score kept in a node's entry
// (lendScore) is given again, without the scorer called, only while the
// node's content and the score's key are the same; after each change
// that makes a rebuild, and for another key, the scorer runs on the
// node as it is now.
func TestDRANodeMemoKeepsScoresPerContent(t *testing.T) {
	rate := func(n *gpu.Node) int64 { return n.Free[0]*1_000_000 + n.Free[1]*1000 + n.CPUFree/1000 }
	key := scoreKey{policy: gpu.FGD, num: 1}
	for _, c := range []struct {
		name   string
		change func(w *memoWorld)
		key    scoreKey
		called bool
	}{
		{name: "nothing changed", change: func(*memoWorld) {}, key: key},
		{name: "another request", change: func(*memoWorld) {}, key: scoreKey{policy: gpu.FGD, num: 2}, called: true},
		{name: "another policy", change: func(*memoWorld) {}, key: scoreKey{policy: gpu.BestFit, num: 1}, called: true},
		{name: "FGD's GPU or not", change: func(*memoWorld) {}, key: scoreKey{policy: gpu.FGD, fgd: true, num: 1}, called: true},
		{name: "another epoch", change: func(*memoWorld) {}, key: scoreKey{policy: gpu.FGD, epoch: 1, num: 1}, called: true},
		{name: "a pod came", change: func(w *memoWorld) {
			w.pods = append(w.pods, claimedPod("c", 200))
			w.claims["default/claim-c"] = allocatedClaim("c", 1)
		}, key: key, called: true},
		{name: "a claim allocated elsewhere", change: func(w *memoWorld) { w.claims["default/claim-a"] = allocatedClaim("a", 0) }, key: key, called: true},
		{name: "requested CPU changed, pods alike", change: func(w *memoWorld) { w.extraCPU = 16000 }, key: key, called: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := baseWorld()
			m := newDRANodeMemo()
			calls := 0
			use := func(n *gpu.Node) int64 { calls++; return rate(n) }
			if got, want := m.lendScore(w.nodeInfo(), "q", w.get, nil, false, key, use), rate(draNodeFrom(nodeInOf(w.nodeInfo()), w.nodeInfo(), "q", w.get)); got != want {
				t.Fatalf("first score %d, want %d", got, want)
			}
			c.change(&w)
			ni := w.nodeInfo()
			got := m.lendScore(ni, "q", w.get, nil, false, c.key, use)
			if want := rate(draNodeFrom(nodeInOf(ni), ni, "q", w.get)); got != want {
				t.Errorf("score %d, afresh %d", got, want)
			}
			if called := calls == 2; called != c.called {
				t.Errorf("scorer called again: %v, want %v", called, c.called)
			}
		})
	}
}

// TestDRANodeEntryLeavesOutAlike: the memo, having found a UID on no
// node's entry (the pod being scheduled, asked of every entry in every
// cycle), answers it again for every entry without their sets of UIDs,
// and still tells a pod on the node, asked after, from one that is not,
// and a pod on another node from one on this one.
func TestDRANodeEntryLeavesOutAlike(t *testing.T) {
	// Each case asks, in turn, of an entry whose pods are a and b, built
	// leaving out skip; another node's entry has pod c.
	cases := []struct {
		name string
		skip types.UID
		asks []types.UID
		want []bool
	}{
		{name: "the pod being scheduled, asked twice", asks: []types.UID{"p", "p"}, want: []bool{true, true}},
		{name: "a pod on the node asked twice", asks: []types.UID{"a", "a", "p"}, want: []bool{false, false, true}},
		{name: "a pod on the node after one that is not", asks: []types.UID{"p", "a", "p", "b"}, want: []bool{true, false, true, false}},
		{name: "left out a pod on the node", skip: "a", asks: []types.UID{"a", "p", "b"}, want: []bool{true, false, false}},
		{name: "a pod on another node", asks: []types.UID{"c", "c", "a", "c"}, want: []bool{true, true, false, true}},
		{name: "no UID", asks: []types.UID{"", "a"}, want: []bool{true, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newDRANodeMemo()
			slot := &draNodeSlot{}
			m.keep(slot, &draNodeEntry{uids: map[types.UID]bool{"a": true, "b": true}})
			slot.skip, slot.skipOn = c.skip, slot.e.uids[c.skip]
			m.keep(&draNodeSlot{}, &draNodeEntry{uids: map[types.UID]bool{"c": true}})
			for i, uid := range c.asks {
				if got := m.leavesOutAlike(slot, uid); got != c.want[i] {
					t.Fatalf("ask %d (%q): %v, want %v", i, uid, got, c.want[i])
				}
			}
		})
	}
}

// TestDRANodeMemoHeldFollowsEntries: a UID found on no node's entry is
// found again once an entry with a pod of it is kept, and not once that
// entry is replaced or forgotten. Fails with draNodeHeldCheck off.
func TestDRANodeMemoHeldFollowsEntries(t *testing.T) {
	m := newDRANodeMemo()
	a, p := &draNodeSlot{}, &draNodeSlot{}
	m.keep(a, &draNodeEntry{uids: map[types.UID]bool{"a": true}})
	for i, step := range []struct {
		name string
		do   func()
		ask  types.UID
		on   bool // a pod of ask is on some entry
	}{
		{name: "p is on no node", do: func() {}, ask: "p"},
		{name: "an entry with p kept", do: func() { m.keep(p, &draNodeEntry{uids: map[types.UID]bool{"p": true}}) }, ask: "p", on: true},
		{name: "that entry replaced by one without p", do: func() { m.keep(p, &draNodeEntry{uids: map[types.UID]bool{"r": true}}) }, ask: "p"},
		{name: "an entry with p kept again", do: func() { m.keep(p, &draNodeEntry{uids: map[types.UID]bool{"p": true, "r": true}}) }, ask: "p", on: true},
		{name: "that entry forgotten", do: func() { m.keep(p, nil) }, ask: "p"},
		{name: "r too", do: func() {}, ask: "r"},
	} {
		step.do()
		if got := m.nowhere(step.ask); got == step.on {
			t.Fatalf("step %d (%s): nowhere(%q) %v, want %v", i, step.name, step.ask, got, !step.on)
		}
		if step.on {
			slot := &draNodeSlot{e: &draNodeEntry{uids: map[types.UID]bool{step.ask: true}}, skip: "q"}
			if m.leavesOutAlike(slot, step.ask) {
				t.Errorf("step %d (%s): leaving out %q said alike on an entry that has it", i, step.name, step.ask)
			}
		}
	}
	if len(m.held) != 1 || m.held["a"] != 1 {
		t.Errorf("held %v, want only a's entry", m.held)
	}
}

// TestScoreKeyPacked: distinct score keys pack to distinct numbers, and
// a key out of the packing's range panics instead of sharing one.
func TestScoreKeyPacked(t *testing.T) {
	seen := map[uint64]scoreKey{}
	for _, p := range []gpu.Policy{gpu.Random, gpu.DotProd, gpu.BestFit, gpu.FGD, 0xff} {
		for _, fgd := range []bool{false, true} {
			for _, epoch := range []uint32{0, 1, 1 << 31, ^uint32(0)} {
				for _, num := range []int32{0, 1, maxFGDRequests - 1, 1<<23 - 1} {
					k := scoreKey{policy: p, fgd: fgd, epoch: epoch, num: num}
					if o, ok := seen[k.packed()]; ok {
						t.Fatalf("%+v and %+v both pack to %#x", k, o, k.packed())
					}
					seen[k.packed()] = k
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		k    scoreKey
	}{
		{name: "number too large", k: scoreKey{num: 1 << 23}},
		{name: "negative number", k: scoreKey{num: -1}},
		{name: "policy too large", k: scoreKey{policy: 0x100}},
		{name: "negative policy", k: scoreKey{policy: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("%+v packed to %#x", c.k, c.k.packed())
				}
			}()
			c.k.packed()
		})
	}
}

// TestDRANodeMemoSlotsByObject: a node's slot is found by its node
// object; a node updated (a new object of the same name) finds its slot
// by name, keeps its entry if nothing a rebuild reads changed, and the
// memo keys the slot by the new object only, holding no object it no
// longer finds; another node gets a slot of its own.
func TestDRANodeMemoSlotsByObject(t *testing.T) {
	for _, c := range []struct {
		name    string
		node    func(w memoWorld) *v1.Node // the second call's node object
		rebuild bool
		slots   int
	}{
		{name: "the same object", node: func(w memoWorld) *v1.Node { return w.node }, slots: 1},
		{name: "a new object alike", node: func(memoWorld) *v1.Node { return memoNode(32000, "V100", 2) }, slots: 1},
		{name: "a new object with other GPUs", node: func(memoWorld) *v1.Node { return memoNode(32000, "V100", 4) }, rebuild: true, slots: 1},
		{name: "another node", rebuild: true, slots: 2, node: func(memoWorld) *v1.Node {
			n := memoNode(32000, "V100", 2)
			n.Name = "m"
			return n
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := baseWorld()
			count := countFunc(func(string) (uint64, bool) { return 0, true })
			m := newDRANodeMemo()
			m.node(w.nodeInfo(), "q", w.get, count, true)
			w.node = c.node(w)
			ni := w.nodeInfo()
			got := m.node(ni, "q", w.get, count, true)
			if want := draNodeFrom(nodeInOf(ni), ni, "q", w.get); !sameGPUNode(got, want) {
				t.Errorf("memo gives %+v, a rebuild %+v", got, want)
			}
			if rebuilt := m.builds == 2; rebuilt != c.rebuild {
				t.Errorf("rebuilt: %v, want %v", rebuilt, c.rebuild)
			}
			if len(m.nodes) != c.slots || len(m.byObj) != c.slots {
				t.Errorf("%d slots by name, %d by object, want %d", len(m.nodes), len(m.byObj), c.slots)
			}
			if s := m.byObj[w.node]; s == nil || s != m.nodes[w.node.Name] || s.node != w.node {
				t.Errorf("the slot by the node's object is %p, by its name %p", s, m.nodes[w.node.Name])
			}
		})
	}
}

// TestDRANodeMemoScoreTables: scores kept by key are kept per node (one
// node's new content leaves another's score kept), and past
// draScoreTablesMax keys the least recently used key's scores are
// dropped, not another's: its scorer runs again, the others' not.
func TestDRANodeMemoScoreTables(t *testing.T) {
	count := countFunc(func(string) (uint64, bool) { return 0, true })
	rate := func(n *gpu.Node) int64 { return n.Free[0]*1000 + n.Free[1] + n.CPUFree }
	t.Run("per node", func(t *testing.T) {
		a, b := baseWorld(), baseWorld()
		b.node = memoNode(16000, "V100", 2)
		b.node.Name = "m"
		m := newDRANodeMemo()
		calls := 0
		use := func(n *gpu.Node) int64 { calls++; return rate(n) }
		key := scoreKey{policy: gpu.BestFit, num: 1}
		for _, w := range []memoWorld{a, b} {
			m.lendScore(w.nodeInfo(), "q", w.get, count, true, key, use)
		}
		a.extraCPU = 8000
		for i, w := range []memoWorld{a, b} {
			ni := w.nodeInfo()
			got := m.lendScore(ni, "q", w.get, count, true, key, use)
			if want := rate(draNodeFrom(nodeInOf(ni), ni, "q", w.get)); got != want {
				t.Errorf("node %d: score %d, afresh %d", i, got, want)
			}
		}
		if calls != 3 {
			t.Errorf("scorer called %d times, want 3 (the changed node's again, the other's kept)", calls)
		}
	})
	t.Run("the least recently used key dropped", func(t *testing.T) {
		w := baseWorld()
		m := newDRANodeMemo()
		called := map[int32]int{}
		score := func(num int32) {
			m.lendScore(w.nodeInfo(), "q", w.get, count, true, scoreKey{policy: gpu.BestFit, num: num}, func(n *gpu.Node) int64 {
				called[num]++
				return rate(n)
			})
		}
		for num := range int32(draScoreTablesMax) {
			score(num)
		}
		score(0) // 0 is now the most recently used, 1 the least
		score(draScoreTablesMax)
		for _, num := range []int32{0, 2, draScoreTablesMax - 1, 1} {
			score(num)
		}
		for num, want := range map[int32]int{0: 1, 2: 1, draScoreTablesMax - 1: 1, draScoreTablesMax: 1, 1: 2} {
			if called[num] != want {
				t.Errorf("key %d scored %d times, want %d", num, called[num], want)
			}
		}
		if len(m.tables) != draScoreTablesMax {
			t.Errorf("%d keys kept, want %d", len(m.tables), draScoreTablesMax)
		}
	})
}
