package sim

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/gpu"
)

// TestListKeptFollowsTheNodeAndThePod: under FGD the lister's kept path
// lists node n's devices with FGD's GPU first as computed afresh after
// each change of what the choice reads, among them changes that move no
// pool's count: a pod that takes CPU on the node (FGD then takes gpu-0,
// not gpu-1), the node object replaced, the pod of another request, and
// a claim allocated. Without its check of the node's figures, the list
// after the CPU taken keeps gpu-1 first; without its check of the pool's
// count, the list after the claim keeps the order of before.
func TestListKeptFollowsTheNodeAndThePod(t *testing.T) {
	node := memoNode(32000, "V100", 4)
	busy := gpuPod("busy", 0)
	busy.Spec.NodeName = "n"
	busy.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("20")
	bigger := memoNode(64000, "V100", 4)
	share := gpuPod("p", 200)
	half := gpuPod("q", 500)
	type step struct {
		name  string
		pods  []*v1.Pod
		node  *v1.Node
		pod   *v1.Pod
		claim bool // claim b allocated 800 of gpu-2 before the list
		first string
	}
	steps := []step{
		{name: "idle node", node: node, pod: share, first: "gpu-1"},
		{name: "again", node: node, pod: share, first: "gpu-1"},
		{name: "CPU taken", pods: []*v1.Pod{busy}, node: node, pod: share, first: "gpu-0"},
		{name: "CPU given back", node: node, pod: share, first: "gpu-1"},
		{name: "node object replaced", node: bigger, pod: share, first: "gpu-1"},
		{name: "another request", pods: []*v1.Pod{busy}, node: bigger, pod: half},
		{name: "claim allocated", pods: []*v1.Pod{busy}, node: bigger, pod: share, claim: true},
		{name: "node object with fewer GPUs", pods: []*v1.Pod{busy}, node: memoNode(64000, "V100", 2), pod: half},
		{name: "node object with its GPUs back", pods: []*v1.Pod{busy}, node: bigger, pod: half},
	}
	w := newKeptWorld(t)
	workload := gpu.Typical([]gpu.Request{{CPU: 1000, Mem: 1024, Count: 1, Share: 200}, {CPU: 1000, Mem: 1024, Count: 1, Share: 500},
		{CPU: 12000, Mem: 8192, Count: 1, Share: 1000}}, 1)
	w.d.m.policy, w.d.m.workload = gpu.FGD, workload
	for _, obj := range []runtime.Object{gpuSlice("n", "V100", 4), keptClaim("a", 300, "gpu-1")} {
		if err := w.fw.AddObject(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range steps {
		if s.claim {
			if err := w.fw.AddObject(keptClaim("b", 800, "gpu-2")); err != nil {
				t.Fatal(err)
			}
		}
		w.d.m.h = snapHandle{s: backendcache.NewSnapshot(s.pods, []*v1.Node{s.node})}
		w.d.m.pod = s.pod
		m := w.fw.Framework().SharedDRAManager()
		state, err := m.ResourceClaims().GatherAllocatedState()
		if err != nil {
			t.Fatal(err)
		}
		if !w.d.kept.serves(state) {
			t.Fatalf("%s: the kept state is not served", s.name)
		}
		list, err := m.ResourceSlices().ListWithDeviceTaintRules()
		if err != nil || len(list) != 1 {
			t.Fatalf("%s: listed %d slices, %v", s.name, len(list), err)
		}
		got := deviceNames(list[0])
		want := deviceNames(w.d.freshOrder(gpuSlice("n", "V100", 4), state))
		if !slices.Equal(got, want) {
			t.Errorf("%s: devices listed %v, afresh %v", s.name, got, want)
		}
		if s.first != "" && got[0] != s.first {
			t.Errorf("%s: %s listed first, want %s", s.name, got[0], s.first)
		}
	}
}

// TestListKeptChangesNoPlacement: replays of the differential cases
// (every policy) place the same pods on the same nodes and devices with
// the lister's kept path and without it, and every slice the kept path
// lists from what it kept is in the order the other path computes
// afresh at that moment.
func TestListKeptChangesNoPlacement(t *testing.T) {
	seeds := diffSeeds()
	checked := 0
	defer func() { draListCheck = nil }()
	draListCheck = func(sl, kept, fresh *resourceapi.ResourceSlice) {
		checked++
		if got, want := deviceNames(kept), deviceNames(fresh); !slices.Equal(got, want) {
			t.Errorf("slice %s listed %v from what was kept, afresh %v", sl.Name, got, want)
		}
	}
	diffEveryPolicy(t, seeds, "the kept list", func(t *testing.T, c diffCase, on bool) []draPlacement {
		defer func(was bool) { draListKeptOn = was }(draListKeptOn)
		draListKeptOn = on
		return draProbePlacements(t, c)
	})
	if checked == 0 {
		t.Error("no slice was listed from what was kept")
	}
}
