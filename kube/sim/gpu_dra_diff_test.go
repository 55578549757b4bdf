package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/gpu"
)

// diffNode is a node of a differential case: gpus GPUs of model.
type diffNode struct {
	name, model string
	cpu, mem    int64 // milli-CPU, MiB
	gpus        int
}

// diffPod is a trace pod of a differential case: count whole GPUs
// (share 1000) or a share of one; life is how long it runs once bound,
// in seconds (0: to the end).
type diffPod struct {
	name     string
	cpu, mem int64
	count    int
	share    int64
	models   []string
	life     int
}

func (p diffPod) request() gpu.Request {
	return gpu.Request{CPU: p.cpu, Mem: p.mem, Count: p.count, Share: p.share, Models: p.models}
}

// diffCase is a cluster, the pods that fill it (setup, one a second, some
// ending before the probes), and the probes, none ending: one a second,
// or with batch all at once, each then tried while the ones before are
// being bound (their allocations in flight). With setupRandom the setup
// runs under the Random policy (random nodes and GPUs), the probes under
// policy; otherwise everything runs under policy, as a replay does.
type diffCase struct {
	name        string
	policy      gpu.Policy
	seed        uint64
	setupRandom bool
	batch       bool // the probes arrive together
	percentage  int  // the scheduler's percentageOfNodesToScore (0: adaptive)
	nodes       []diffNode
	setup       []diffPod
	probes      []diffPod
}

var diffModels = []string{"T4", "V100", "A10"}

// genDiffCase draws a case from seed: 1-4 nodes of 1-8 GPUs of three
// models (some nodes but the first without GPUs), up to 10 setup pods
// (shares and 1-8 whole GPUs, any model or one or two, half of them
// ending before the probes) and 1-6 probes (one or two models, half of
// the time the first node's), a third of the time arriving together.
func genDiffCase(seed uint64, policy gpu.Policy) diffCase {
	rnd := rand.New(rand.NewPCG(seed, 0xd1ff))
	c := diffCase{name: fmt.Sprintf("seed %d %s", seed, policy), policy: policy, seed: seed, setupRandom: rnd.IntN(2) == 0}
	cpus := []int64{16000, 32000, 64000, 96000, 128000}
	mems := []int64{65536, 131072, 262144}
	for i := range 1 + rnd.IntN(4) {
		n := diffNode{name: "n" + strconv.Itoa(i), model: diffModels[rnd.IntN(len(diffModels))],
			cpu: cpus[rnd.IntN(len(cpus))], mem: mems[rnd.IntN(len(mems))], gpus: 1 + rnd.IntN(8)}
		if i > 0 && rnd.IntN(8) == 0 {
			n.model, n.gpus = "", 0 // a node without GPUs, as the trace has
		}
		c.nodes = append(c.nodes, n)
	}
	k := rnd.IntN(11)
	for i := range k {
		p := genDiffPod(rnd, "s"+strconv.Itoa(i), true)
		if rnd.IntN(2) == 0 {
			p.life = 1 + rnd.IntN(k)
		}
		c.setup = append(c.setup, p)
	}
	for i := range 1 + rnd.IntN(6) {
		p := genDiffPod(rnd, "p"+strconv.Itoa(i), false)
		if m := c.nodes[0].model; p.count > 0 && rnd.IntN(2) == 0 && !slices.Contains(p.models, m) {
			p.models[0] = m // mostly a model the cluster has
		}
		c.probes = append(c.probes, p)
	}
	c.batch = rnd.IntN(3) == 0
	return c
}

// genDiffPod draws a pod: a share (often one of a few common sizes) or
// 1-8 whole GPUs (mostly few), some CPU and memory, and a gpu_spec of one
// model or two (or none, if anyModel); one in twelve asks for CPU only.
func genDiffPod(rnd *rand.Rand, name string, anyModel bool) diffPod {
	p := diffPod{name: name, cpu: 1000 * rnd.Int64N(9), mem: 1024 * (1 + rnd.Int64N(8)), count: 1, share: gpu.Milli}
	if rnd.IntN(12) == 0 {
		p.count, p.share, p.cpu = 0, 0, 1000*(1+rnd.Int64N(16)) // CPU only
		return p
	}
	switch shares := []int64{100, 200, 250, 300, 500, 600, 700, 900}; rnd.IntN(5) {
	case 0, 1:
		p.share = shares[rnd.IntN(len(shares))]
	case 2:
		p.share = 1 + rnd.Int64N(gpu.Milli-1)
	case 3:
		p.count = 1 + rnd.IntN(2)
	default:
		p.count = 1 + rnd.IntN(1+rnd.IntN(8))
	}
	switch m := rnd.Perm(len(diffModels)); rnd.IntN(4) {
	case 0:
		if !anyModel {
			p.models = []string{diffModels[m[0]]}
		}
	case 1:
		p.models = []string{diffModels[m[0]]}
	default:
		p.models = []string{diffModels[m[0]], diffModels[m[1]]}
	}
	return p
}

// diffForever is the deletion time of a pod that runs to the end.
const diffForever = 1_000_000

// trace writes the case as a trace: setup pod i arrives at i s, the
// probes from probeAt(0) on, a second apart (or all then, with batch).
func (c diffCase) trace(t *testing.T) string {
	var nodes strings.Builder
	nodes.WriteString("sn,cpu_milli,memory_mib,gpu,model\n")
	for _, n := range c.nodes {
		fmt.Fprintf(&nodes, "%s,%d,%d,%d,%s\n", n.name, n.cpu, n.mem, n.gpus, n.model)
	}
	var pods strings.Builder
	pods.WriteString(timedHeader)
	row := func(p diffPod, at int) {
		end := diffForever
		if p.life > 0 {
			end = at + p.life
		}
		fmt.Fprintf(&pods, "%s,%d,%d,%d,%d,%s,LS,Running,%d,%d,%d\n", p.name, p.cpu, p.mem, p.count, p.share, strings.Join(p.models, "|"), at, end, at)
	}
	for i, p := range c.setup {
		row(p, i)
	}
	for i, p := range c.probes {
		at := c.probeAt(i)
		if c.batch {
			at = c.probeAt(0)
		}
		row(p, at)
	}
	return writeTrace(t, nodes.String(), pods.String())
}

// probeAt is when probe i arrives, in seconds: after every setup pod has
// ended or will run to the end (a setup pod bound at b < its deletion
// time ends at b + life, before 3 × setup pods).
func (c diffCase) probeAt(i int) int { return 3*len(c.setup) + 3 + i }

// requests is the trace's pods' requests, from which the replay's typical
// workload is made.
func (c diffCase) requests() []gpu.Request {
	var out []gpu.Request
	for _, p := range append(slices.Clone(c.setup), c.probes...) {
		out = append(out, p.request())
	}
	return out
}

// diffChoice is the device model's choice for a probe: each node where
// it fits, with its score and GPUs.
type diffChoice struct {
	fits   map[string][]int // node: the GPUs the policy takes there
	scores map[string]int64
	best   int64
}

// top lists the nodes of the highest score.
func (d diffChoice) top() []string {
	var out []string
	for n, s := range d.scores {
		if s == d.best {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// deviceChoice is what kube/gpu's policy chooses for r on nodes, as the
// experiment's choose does before it breaks ties: every node that fits,
// scored. Random's GPUs are left nil (drawn by design).
func deviceChoice(p gpu.Policy, nodes []*gpu.Node, r gpu.Request, w gpu.Workload) diffChoice {
	d := diffChoice{fits: map[string][]int{}, scores: map[string]int64{}, best: -1}
	for _, n := range nodes {
		if !n.Fits(r) {
			continue
		}
		var s int64
		var gpus []int
		if p != gpu.Random {
			s, gpus = p.Score(n, r, w, nil)
		}
		d.fits[n.Name], d.scores[n.Name] = gpus, s
		d.best = max(d.best, s)
	}
	return d
}

// draPlaced is where DRA's replay put the bound pods: node and devices
// (indexes of the node's GPUs) by pod name.
func draPlaced(t *testing.T, s *sim) (nodes map[string]string, devices map[string][]int) {
	t.Helper()
	nodes, devices = map[string]string{}, map[string][]int{}
	for _, p := range s.cl.pods {
		if p.Spec.NodeName != "" {
			nodes[p.Name] = p.Spec.NodeName
		}
	}
	for _, o := range s.obj.byKey {
		c, ok := o.(*resourceapi.ResourceClaim)
		if !ok || c.Status.Allocation == nil {
			continue
		}
		owner := metav1.GetControllerOf(c).Name
		for _, res := range c.Status.Allocation.Devices.Results {
			i, err := strconv.Atoi(strings.TrimPrefix(res.Device, "gpu-"))
			if err != nil || res.Pool != nodes[owner] {
				t.Fatalf("claim %s of %s on %s: device %s/%s", c.Name, owner, nodes[owner], res.Pool, res.Device)
			}
			devices[owner] = append(devices[owner], i)
		}
		slices.Sort(devices[owner])
	}
	return nodes, devices
}

// deviceNodes rebuilds the cluster in kube/gpu's terms from the pods DRA
// placed, each on the devices its claim was allocated.
func (c diffCase) deviceNodes(t *testing.T, s *sim) []*gpu.Node {
	t.Helper()
	placed, devices := draPlaced(t, s)
	byName := map[string]*gpu.Node{}
	var out []*gpu.Node
	for _, n := range c.nodes {
		g := gpu.NewNode(n.name, n.model, n.cpu, n.mem, n.gpus)
		byName[n.name] = g
		out = append(out, g)
	}
	for _, p := range append(slices.Clone(c.setup), c.probes...) {
		node, ok := placed[p.name]
		if !ok {
			continue
		}
		r, at, n := p.request(), devices[p.name], byName[node]
		if len(at) != r.Count || slices.ContainsFunc(at, func(g int) bool { return g >= len(n.Free) || n.Free[g] < r.Share }) {
			t.Fatalf("%s (%d×%d) on %s was allocated devices %v, which do not hold it (free %v)", p.name, r.Count, r.Share, node, at, n.Free)
		}
		n.Place(r, at)
	}
	return out
}

// describeGPUs is the cluster's GPUs, for a failure's message.
func describeGPUs(nodes []*gpu.Node) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, " %s(%s cpu %d/%d mem %d/%d) %v;", n.Name, n.Model, n.CPUFree, n.CPU, n.MemFree, n.Mem, n.Free)
	}
	return b.String()
}

// checkDiff replays c with DRA allocating the GPUs and, for each probe,
// compares the node and devices DRA gave it with the device model's
// choice on the state DRA's allocations left (with batch, the state
// before the probes plus DRA's placements of those tried before it): the
// node one of the device model's of the highest score (kube-scheduler
// breaks ties at random, as the experiment does), the devices the GPUs
// the device model takes there, and no node if the device model finds
// none. Under Random, the node is one where the probe fits and the
// devices hold it. It returns where DRA put each probe ("node/[gpus]",
// "" if nowhere).
func checkDiff(t *testing.T, c diffCase) map[string]string {
	t.Helper()
	sc := traceScenario(c.trace(t))
	sc.Seed = c.seed
	sc.Scheduler.PercentageOfNodesToScore = c.percentage
	sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy = GPUModelDRA, c.policy.String()
	if c.setupRandom {
		sc.Scheduler.GPUPolicy = gpu.Random.String()
	}
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.s.close()
	until := func(at time.Duration) {
		t.Helper()
		if err := r.Until(at); err != nil {
			t.Fatal(err)
		}
	}
	d := diffCheck{c: c, w: gpu.Typical(c.requests(), gpu.TypicalShare), got: map[string]string{}}
	until(time.Duration(c.probeAt(0)-1) * time.Second)
	r.s.x.gpuDRA.policy = c.policy
	if c.batch {
		at := time.Duration(c.probeAt(0)) * time.Second
		until(at - time.Second/2)
		nodes := c.deviceNodes(t, r.s)
		until(at + time.Second/2)
		placed, devices := draPlaced(t, r.s)
		for _, probe := range c.attemptOrder(t, r.s) {
			if node, ok := d.check(t, nodes, probe, placed, devices); ok {
				byName(nodes, node).Place(probe.request(), devices[probe.name])
			}
		}
		return d.got
	}
	for i, probe := range c.probes {
		at := time.Duration(c.probeAt(i)) * time.Second
		until(at - time.Second/2)
		nodes := c.deviceNodes(t, r.s)
		until(at + time.Second/2)
		placed, devices := draPlaced(t, r.s)
		d.check(t, nodes, probe, placed, devices)
	}
	return d.got
}

// diffCheck compares DRA's placements of a case's probes with the device
// model's choices; got is where DRA put each probe ("node/[gpus]", "" if
// nowhere).
type diffCheck struct {
	c   diffCase
	w   gpu.Workload
	got map[string]string
}

// check compares where DRA put probe (placed, devices) with the device
// model's choice on nodes, the cluster just before its attempt, and
// returns DRA's node, if any.
func (d diffCheck) check(t *testing.T, nodes []*gpu.Node, probe diffPod, placed map[string]string, devices map[string][]int) (string, bool) {
	t.Helper()
	req := probe.request()
	want := deviceChoice(d.c.policy, nodes, req, d.w)
	node, bound := placed[probe.name]
	at := devices[probe.name]
	d.got[probe.name] = ""
	if bound {
		d.got[probe.name] = fmt.Sprintf("%s/%v", node, at)
	}
	what := fmt.Sprintf("%s: probe %s (cpu %d mem %d, %d×%d, models %v) on%s", d.c.name, probe.name, req.CPU, req.Mem, req.Count, req.Share, req.Models, describeGPUs(nodes))
	switch gpus, fits := want.fits[node]; {
	case !bound && len(want.fits) > 0:
		t.Errorf("%s: DRA placed it nowhere; the device model fits it on %v (scores %v)", what, slices.Sorted(maps.Keys(want.fits)), want.scores)
	case !bound:
	case !fits:
		t.Errorf("%s: DRA placed it on %s (%v), where the device model does not fit it (fits %v)", what, node, at, want.fits)
	case len(at) != req.Count || slices.ContainsFunc(at, func(g int) bool { return freeOf(nodes, node, g) < req.Share }):
		t.Fatalf("%s: DRA allocated it %v on %s, which do not hold it", what, at, node)
	case d.c.policy == gpu.Random:
	case want.scores[node] != want.best:
		t.Errorf("%s: DRA placed it on %s (score %d); the device model's best %v score %d (scores %v)", what, node, want.scores[node], want.top(), want.best, want.scores)
	case !slices.Equal(sortedInts(gpus), at):
		t.Errorf("%s: on %s DRA allocated GPUs %v; the device model takes %v", what, node, at, gpus)
	}
	return node, bound
}

// attemptOrder is the probes in the order the scheduler first tried
// them.
func (c diffCase) attemptOrder(t *testing.T, s *sim) []diffPod {
	t.Helper()
	first := map[string]time.Time{}
	for _, st := range s.order {
		first[st.key.Name] = st.ext.firstAttempt
	}
	out := slices.Clone(c.probes)
	for _, p := range out {
		if first[p.name].IsZero() {
			t.Fatalf("%s: probe %s never tried", c.name, p.name)
		}
	}
	slices.SortStableFunc(out, func(a, b diffPod) int { return first[a.name].Compare(first[b.name]) })
	return out
}

func byName(nodes []*gpu.Node, name string) *gpu.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func sortedInts(a []int) []int {
	a = slices.Clone(a)
	slices.Sort(a)
	return a
}

func freeOf(nodes []*gpu.Node, name string, g int) int64 {
	for _, n := range nodes {
		if n.Name == name && g < len(n.Free) {
			return n.Free[g]
		}
	}
	return -1
}

// TestDeviceModelChoosesAsDRA: on random small clusters (1-4 nodes of
// 1-8 GPUs of three models, filled by random shares and whole GPUs, some
// of which ended), the node and the GPUs the device model's policy
// chooses for a random pod are those DRA's allocation gives it when the
// pod runs through kube-scheduler's framework with DynamicResources, as a
// replay does, under each of the six policies (under Random, only where
// the pod fits), and both find no node for the same pods.
func TestDeviceModelChoosesAsDRA(t *testing.T) {
	seeds := uint64(150) // about 1.5 s a policy
	if testing.Short() || raceDetector {
		seeds = 20
	}
	for _, p := range gpu.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			for seed := range seeds {
				checkDiff(t, genDiffCase(seed+1, p))
			}
		})
	}
}

// TestDeviceModelChoosesAsDRAOnALargeCluster: on 250 nodes of one model,
// where kube-scheduler by default stops filtering once it has found 100
// feasible nodes and scores those only, DRA's choice is the device
// model's best over every node once percentageOfNodesToScore is 100, as
// the experiment and the artifact score every node. 40 pods fill the
// cluster under Random; 6 probes follow, a second apart or together.
func TestDeviceModelChoosesAsDRAOnALargeCluster(t *testing.T) {
	for _, p := range gpu.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			for seed := range uint64(2) {
				checkDiff(t, genLargeDiffCase(seed+1, p, 100))
			}
		})
	}
}

// genLargeDiffCase draws a case of 250 nodes of 1-8 V100s, 40 setup pods
// under Random and 6 probes (genDiffPod's, without gpu_spec, so that
// every node may fit them), the scheduler scoring percentage of the
// nodes.
func genLargeDiffCase(seed uint64, policy gpu.Policy, percentage int) diffCase {
	rnd := rand.New(rand.NewPCG(seed, 0x1a29e))
	c := diffCase{name: fmt.Sprintf("large seed %d %s", seed, policy), policy: policy, seed: seed, setupRandom: true, batch: seed%2 == 0, percentage: percentage}
	for i := range 250 {
		c.nodes = append(c.nodes, diffNode{name: fmt.Sprintf("n%03d", i), model: "V100", cpu: 64000, mem: 262144, gpus: 1 + rnd.IntN(8)})
	}
	pod := func(name string) diffPod {
		p := genDiffPod(rnd, name, true)
		p.models = nil
		return p
	}
	for i := range 40 {
		c.setup = append(c.setup, pod("s"+strconv.Itoa(i)))
	}
	for i := range 6 {
		c.probes = append(c.probes, pod("p"+strconv.Itoa(i)))
	}
	return c
}

// TestDeviceModelChoosesAsDRACases: TestDeviceModelChoosesAsDRA's check
// on cases written out, each under the six policies, where DRA's
// allocation must follow the policy rather than the devices' published
// order; want is where DRA puts each probe ("node/[gpus]", "" for
// nowhere) under the policies named (all but Random if none are).
func TestDeviceModelChoosesAsDRACases(t *testing.T) {
	v100 := func(name string, gpus int) diffNode {
		return diffNode{name: name, model: "V100", cpu: 64000, mem: 262144, gpus: gpus}
	}
	share := func(name string, milli int64, models ...string) diffPod {
		return diffPod{name: name, cpu: 1000, mem: 1024, count: 1, share: milli, models: models}
	}
	whole := func(name string, count int, models ...string) diffPod {
		return diffPod{name: name, cpu: 1000, mem: 1024, count: count, share: gpu.Milli, models: models}
	}
	for _, c := range []struct {
		name          string
		nodes         []diffNode
		setup, probes []diffPod
		want          map[string]string
		policies      []gpu.Policy // those want holds for; nil: all but Random
	}{{
		// x (300) takes GPU 0 (all GPUs alike); y (200) fits either:
		// the best fit is GPU 0 (700 left), but the workload is mostly
		// shares of 600, which GPU 0 could no longer hold, so FGD takes
		// GPU 1. The published order would also take GPU 0.
		name:     "a share goes to FGD's GPU, off the best fit",
		nodes:    []diffNode{v100("n0", 2)},
		setup:    []diffPod{share("x", 300)},
		probes:   []diffPod{share("y", 200), share("z1", 600), share("z2", 600), share("z3", 600), share("z4", 600)},
		want:     map[string]string{"y": "n0/[1]"},
		policies: []gpu.Policy{gpu.FGD},
	}, {
		// a (400) takes GPU 0 (all alike) and b (700) GPU 1 (GPU 0 has
		// 600 left); c (200) fits all three and goes to GPU 1 (300 left),
		// where the published order would take GPU 0; d (500) then fits
		// GPU 0 best (600 left).
		name:     "a share goes to the fullest GPU that holds it",
		nodes:    []diffNode{v100("n0", 3)},
		setup:    []diffPod{share("a", 400), share("b", 700)},
		probes:   []diffPod{share("c", 200), share("d", 500)},
		want:     map[string]string{"c": "n0/[1]", "d": "n0/[0]"},
		policies: []gpu.Policy{gpu.DotProd, gpu.GpuClustering, gpu.GpuPacking, gpu.BestFit},
	}, {
		// Two shares of 600 on the two GPUs leave 800 thousandths, on no
		// one GPU 500.
		name:   "free in sum but not one by one: nowhere",
		nodes:  []diffNode{v100("n0", 2)},
		setup:  []diffPod{share("a", 600), share("b", 600)},
		probes: []diffPod{share("c", 500), whole("w", 1)},
		want:   map[string]string{"c": "", "w": ""},
	}, {
		// A share on GPU 0, then two whole GPUs: the first fully free
		// ones, 1 and 2.
		name:   "whole GPUs skip the partly used one",
		nodes:  []diffNode{v100("n0", 4)},
		setup:  []diffPod{share("a", 300)},
		probes: []diffPod{whole("w", 2), whole("v", 2)},
		want:   map[string]string{"w": "n0/[1 2]", "v": ""},
	}, {
		// Only the A10 node holds the pod's models.
		name:   "gpu_spec of two models",
		nodes:  []diffNode{{name: "t", model: "T4", cpu: 64000, mem: 262144, gpus: 2}, {name: "a", model: "A10", cpu: 64000, mem: 262144, gpus: 2}},
		probes: []diffPod{whole("w", 1, "V100", "A10"), share("s", 500, "V100", "T4")},
		want:   map[string]string{"w": "a/[0]", "s": "t/[0]"},
	}} {
		for _, p := range gpu.Policies() {
			t.Run(c.name+" "+p.String(), func(t *testing.T) {
				got := checkDiff(t, diffCase{name: c.name, policy: p, seed: 1, nodes: c.nodes, setup: c.setup, probes: c.probes})
				if !slices.Contains(c.policies, p) && (c.policies != nil || p == gpu.Random) {
					return
				}
				for probe, w := range c.want {
					if got[probe] != w {
						t.Errorf("%s on %q, want %q", probe, got[probe], w)
					}
				}
			})
		}
	}
}

// FuzzDeviceModelChoosesAsDRA is TestDeviceModelChoosesAsDRA's check on
// the case drawn from any seed, under policy (modulo the six):
//
//	go test ./kube/sim -run '^$' -fuzz FuzzDeviceModelChoosesAsDRA -parallel 1
func FuzzDeviceModelChoosesAsDRA(f *testing.F) {
	for _, p := range gpu.Policies() {
		f.Add(uint64(1000+p), uint8(p))
	}
	f.Fuzz(func(t *testing.T, seed uint64, policy uint8) {
		checkDiff(t, genDiffCase(seed, gpu.Policy(policy%6)))
	})
}
