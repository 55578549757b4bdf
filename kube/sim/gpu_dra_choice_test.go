package sim

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// gpusHeld is the GPUs each bound pod of s holds at the end of the run,
// by name: as DRA's stored claims have them with gpuModel dra, as the
// device model remembers them otherwise.
func gpusHeld(s *sim) map[string][]int {
	out := map[string][]int{}
	for _, p := range s.cl.pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if s.x.gpuDRA != nil {
			out[p.Name] = s.draAssigned(p)
		} else if s.x.gpu != nil {
			out[p.Name] = s.x.gpu.assignedTo(p)
		}
	}
	return out
}

// TestFGDChoosesTheGangMembersGPUsThroughDRA: under FGD with gpuModel
// dra, DRA's allocation takes the GPU FGD chooses for the share of each
// member of a gang, as for a lone pod, and as the device model does. On
// a node of two GPUs where x (300) holds GPU 0, the two members (200
// each) fit on either; the best fit is GPU 0 (700 left, then 500), but
// the workload is mostly shares of 600, which GPU 0 could no longer
// hold after 200 more, so FGD puts both on GPU 1 (1000 left, then 800).
// With BestFit both go to GPU 0, so the case tells the two apart.
func TestFGDChoosesTheGangMembersGPUsThroughDRA(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn,64000,262144,2,V100\n", timedHeader+
		"x,1000,1024,1,300,,LS,Running,0,5000,0\n"+
		"z1,1000,1024,1,600,,LS,Running,2000,2100,2000\nz2,1000,1024,1,600,,LS,Running,2200,2300,2200\n"+
		"z3,1000,1024,1,600,,LS,Running,2400,2500,2400\nz4,1000,1024,1,600,,LS,Running,2600,2700,2600\n")
	held := func(model, policy string) map[string][]int {
		sc := parseScenario(t, `name: gang
seed: 1
duration: 1m
scheduler: {gpuModel: `+model+`, gpuPolicy: `+policy+`}
trace: {format: alibaba-gpu-v2023, dir: `+dir+`}
pods:
  - {name: g, count: 2, arrival: {at: 10s}, gang: {size: 2, minCount: 2}, requests: {cpu: "1", memory: 1Gi, alibaba.com/gpu-milli: "200"}}
`)
		s := runSim(t, sc)
		if model == GPUModelDRA {
			checkClaimsMatchPods(t, s)
		}
		return gpusHeld(s)
	}
	for _, tc := range []struct {
		name, model, policy string
		want                []int // the GPUs of g-0 and g-1
	}{
		{"fgd on dra", GPUModelDRA, "fgd", []int{1, 1}},
		{"fgd on the device model", GPUModelDevice, "fgd", []int{1, 1}},
		{"bestfit on dra", GPUModelDRA, "bestfit", []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := held(tc.model, tc.policy)
			var got []int
			for _, name := range []string{"g-0", "g-1"} {
				if len(h[name]) != 1 {
					t.Fatalf("%s holds GPUs %v, want one (all: %v)", name, h[name], h)
				}
				got = append(got, h[name][0])
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(h["x"], []int{0}) {
				t.Errorf("g-0 and g-1 on GPUs %v, x on %v; want %v, x on [0]", got, h["x"], tc.want)
			}
		})
	}
}

// TestRandomChoosesTheGPUThroughDRA: under Random with gpuModel dra, a
// share goes to a GPU drawn among those that hold it, through DRA's own
// allocation, not always to the best fit; the draw is the run's seed's,
// so a seed's run places the share on the same GPU every time. On a node
// of two GPUs where x (300) holds GPU 0 (x came first, to an idle node:
// GPU 0, as all its GPUs are alike), y (200) fits on either: over eight
// seeds both GPUs are drawn.
func TestRandomChoosesTheGPUThroughDRA(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn,64000,262144,2,V100\n", timedHeader+
		"x,1000,1024,1,300,,LS,Running,0,5000,0\ny,1000,1024,1,200,,LS,Running,10,5000,10\n")
	heldBy := func(seed uint64) map[string][]int {
		sc := parseScenario(t, fmt.Sprintf(`name: random
seed: %d
duration: 1m
scheduler: {gpuModel: dra, gpuPolicy: random}
trace: {format: alibaba-gpu-v2023, dir: %s}
`, seed, dir))
		s := runSim(t, sc)
		checkClaimsMatchPods(t, s)
		return gpusHeld(s)
	}
	drawn := map[int]bool{}
	for seed := uint64(1); seed <= 8; seed++ {
		h := heldBy(seed)
		if !slices.Equal(h["x"], []int{0}) || len(h["y"]) != 1 {
			t.Fatalf("seed %d: x on GPUs %v, y on %v; want x on [0], y on one", seed, h["x"], h["y"])
		}
		if again := heldBy(seed); !slices.Equal(again["y"], h["y"]) {
			t.Errorf("seed %d: y on GPU %v, then on %v in the same run again", seed, h["y"], again["y"])
		}
		drawn[h["y"][0]] = true
	}
	if !drawn[0] || !drawn[1] {
		t.Errorf("over seeds 1 to 8, y went to the GPUs %v only; want both drawn", drawn)
	}
}

// TestRandomChoice: Random's GPU for a share is drawn among the GPUs that
// hold it, each amount left with the chance of the number of GPUs that
// have it, and the first GPU of that amount; -1 (the fullest-first
// order's best fit) when the draw is the best fit, or nothing holds it.
func TestRandomChoice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		left  []int64
		share int64
		want  []int // by draw 0, 1, 2...
	}{
		{"each amount by its number of GPUs", []int64{1000, 300, 1000, 600}, 200, []int{-1, 3, 0, 0, -1, 3}},
		{"only the GPUs that hold the share", []int64{100, 1000, 150, 500}, 200, []int{-1, 1, -1}},
		{"an idle node: its first GPU", []int64{1000, 1000}, 200, []int{-1, -1}},
		{"no GPU holds it", []int64{100, 150}, 200, []int{-1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for draw := range tc.want {
				got = append(got, randomChoice(tc.left, tc.share, uint64(draw)))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("GPUs by draw %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRandomDrawsUniformlyAcrossPods: the draws of the pods of a run
// spread evenly among the GPUs that hold a share (three amounts left, a
// GPU each: each drawn for about a third of 3,000 pods), the same pod
// draws the same in a run of the same seed, and another seed draws
// otherwise.
func TestRandomDrawsUniformlyAcrossPods(t *testing.T) {
	left := []int64{300, 600, 1000}
	count := map[int]int{}
	differs := false
	for i := range 3000 {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p-" + strconv.Itoa(i), UID: types.UID("uid-" + strconv.Itoa(i))}}
		at := randomChoice(left, 200, randomDraw(1, p))
		if again := randomChoice(left, 200, randomDraw(1, p)); again != at {
			t.Fatalf("%s: GPU %d, then %d with the same seed", p.Name, at, again)
		}
		differs = differs || randomChoice(left, 200, randomDraw(2, p)) != at
		count[at]++
	}
	for _, at := range []int{-1, 1, 2} {
		if n := count[at]; n < 900 || n > 1100 {
			t.Errorf("GPU %d (-1: the best fit) drawn for %d of 3,000 pods, want about 1,000 (all: %v)", at, n, count)
		}
	}
	if !differs {
		t.Error("seeds 1 and 2 draw alike for every pod")
	}
}
