package sim

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/gpu"
)

// GPUExperiment is the experiment of the trace's paper (Weng et al., ATC
// 2023) on a trace: for each policy and seed, pods drawn from the pod list
// with replacement until their GPU requests reach Demand times the
// cluster's GPU capacity, placed on per-GPU nodes and never leaving (see
// gpu.Run).
type GPUExperiment struct {
	Trace    TraceSpec
	Policies []gpu.Policy
	Demand   float64
	// Seeds runs are made per policy, with the seeds FirstSeed,
	// FirstSeed+1, ...
	Seeds     int
	FirstSeed uint64
	// TypicalShare is the share of the pod list's pods whose kinds make
	// the workload fragmentation is measured against (see gpu.Typical);
	// 0 means gpu.TypicalShare (0.95, the artifact's setting).
	TypicalShare float64
	// Sampling is how the arriving pods are made from the list
	// (gpu.SampleDraws, the paper's description, by default).
	Sampling gpu.Sampling
	// Ties is how a node is chosen among equals (gpu.TiesRandom,
	// kube-scheduler's way, by default; gpu.TiesOrder is the artifact's).
	Ties gpu.Ties
	// GPUNodesOnly leaves the trace's nodes without GPUs out of the
	// cluster, as the artifact's input does (its node list is the
	// trace's GPU nodes only).
	GPUNodesOnly bool
	// Averaging is how the cluster is measured at a point (gpu.AtFirst
	// by default; gpu.RoundedMean as the artifact's analysis does).
	Averaging gpu.Averaging
}

// MaxGPUSeeds is the most seeds a GPUExperiment runs.
const MaxGPUSeeds = 1000

// GPUExperimentReport is the experiment's result.
type GPUExperimentReport struct {
	Trace    string  `json:"trace"`
	PodList  string  `json:"podList"`
	Nodes    int     `json:"nodes"`
	GPUs     int64   `json:"gpus"`
	Pods     int     `json:"pods"`
	Kinds    int     `json:"typicalKinds"`
	Typical  float64 `json:"typicalShare"`
	Demand   float64 `json:"demand"`
	Sampling string  `json:"sampling"` // draws or artifact
	Ties     string  `json:"ties"`     // random or order
	// Averaging: first (at the first pod reaching a point) or rounded
	// (the mean over the pods whose arrived demand rounds to it).
	Averaging string `json:"averaging"`
	// GPUNodesOnly: the nodes without GPUs were left out.
	GPUNodesOnly bool         `json:"gpuNodesOnly"`
	Seeds        []uint64     `json:"seeds"`
	Runs         []GPURun     `json:"runs"`
	Summary      []GPUSummary `json:"summary"`
	Policies     []string     `json:"policies"`
}

// GPURun is one run: a policy and a seed.
type GPURun struct {
	Policy  string     `json:"policy"`
	Seed    uint64     `json:"seed"`
	Arrived int        `json:"arrived"`
	Placed  int        `json:"placed"`
	Points  []GPUPoint `json:"points"`
}

// GPUPoint is the cluster at a point of arrived GPU demand.
type GPUPoint struct {
	Demand     float64 `json:"demand"`         // fraction of GPU capacity arrived
	Allocation float64 `json:"allocationRate"` // allocated GPU / capacity
	FragRatio  float64 `json:"fragRatio"`      // fragmentation / unallocated GPU
	Frag       float64 `json:"fragGPUs"`       // fragmentation, in GPUs
	Arrived    int     `json:"arrived"`
	Placed     int     `json:"placed"`
}

// GPUSummary is a policy's mean and standard deviation over the seeds at
// each point.
type GPUSummary struct {
	Policy string  `json:"policy"`
	Demand float64 `json:"demand"`
	Alloc  Spread  `json:"allocationRate"`
	Frag   Spread  `json:"fragRatio"`
}

// Spread is a mean with its sample standard deviation, min and max.
type Spread struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func spread(xs []float64) Spread {
	s := Spread{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var v float64
		for _, x := range xs {
			v += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(v / float64(len(xs)-1))
	}
	return s
}

// Validate refuses, before anything is read or run, what cannot run.
// Errors name the setting (demand, seeds, policies).
func (e *GPUExperiment) Validate() error {
	var errs []string
	bad := func(f, format string, args ...any) { errs = append(errs, f+": "+fmt.Sprintf(format, args...)) }
	e.Trace.validate("trace", bad)
	if math.IsNaN(e.Demand) || e.Demand <= 0 || e.Demand > gpu.MaxDemand {
		bad("demand", "%v: want more than 0 and at most %d (times the cluster's GPU capacity)", e.Demand, gpu.MaxDemand)
	}
	if e.Seeds < 1 || e.Seeds > MaxGPUSeeds {
		bad("seeds", "%d: want 1 to %d", e.Seeds, MaxGPUSeeds)
	}
	if math.IsNaN(e.TypicalShare) || e.TypicalShare < 0 || e.TypicalShare > 1 {
		bad("typical share", "%v: want more than 0 and at most 1", e.TypicalShare)
	}
	if len(e.Policies) == 0 {
		bad("policies", "none")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// RunGPUExperiment reads the trace, checks it for the experiment (a
// gpu_spec must name a model some node has) and runs every policy and
// seed, two runs at a time at most. The report does not depend on the
// number of cores: same inputs and seeds, same report.
func RunGPUExperiment(e GPUExperiment) (*GPUExperimentReport, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	t, err := readAlibabaTrace(&e.Trace)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", e.Trace.Format, err)
	}
	nodes, reqs, err := gpuInputs(&e.Trace, t, e.GPUNodesOnly)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", e.Trace.Format, err)
	}
	share := e.TypicalShare
	if share == 0 {
		share = gpu.TypicalShare
	}
	w := gpu.Typical(reqs, share)
	_, podsFile := e.Trace.files()
	rep := &GPUExperimentReport{Trace: e.Trace.Format, PodList: podsFile, Nodes: len(nodes), Pods: len(reqs), Kinds: len(w), Typical: share, Demand: e.Demand, Sampling: e.Sampling.String(),
		Ties: e.Ties.String(), GPUNodesOnly: e.GPUNodesOnly, Averaging: e.Averaging.String()}
	for _, n := range nodes {
		rep.GPUs += int64(len(n.Free))
	}
	type job struct {
		p    gpu.Policy
		seed uint64
	}
	var jobs []job
	for _, p := range e.Policies {
		rep.Policies = append(rep.Policies, p.String())
		for i := range e.Seeds {
			jobs = append(jobs, job{p, e.FirstSeed + uint64(i)})
		}
	}
	for i := range e.Seeds {
		rep.Seeds = append(rep.Seeds, e.FirstSeed+uint64(i))
	}
	check := gpu.Config{Nodes: nodes, Pods: reqs, Workload: w, Policy: e.Policies[0], Demand: e.Demand, Seed: e.FirstSeed, Ties: e.Ties, Averaging: e.Averaging}
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("gpu experiment: %w", err)
	}
	results := make([]gpu.Result, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, min(2, runtime.GOMAXPROCS(0)))
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = gpu.Run(gpu.Config{Nodes: nodes, Pods: reqs, Workload: w, Policy: j.p, Demand: e.Demand, Seed: j.seed, Sampling: e.Sampling, Ties: e.Ties, Averaging: e.Averaging})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("gpu experiment: %w", errs[i])
		}
		run := GPURun{Policy: r.Policy.String(), Seed: r.Seed, Arrived: r.Arrived, Placed: r.Placed}
		for _, p := range r.Points {
			run.Points = append(run.Points, GPUPoint{Demand: p.Demand, Allocation: p.Alloc, FragRatio: p.Ratio,
				Frag: p.FragMean / gpu.Milli, Arrived: p.Arrived, Placed: p.Placed})
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.summarize()
	return rep, nil
}

func (r *GPUExperimentReport) summarize() {
	for _, p := range r.Policies {
		var runs []GPURun
		for _, run := range r.Runs {
			if run.Policy == p {
				runs = append(runs, run)
			}
		}
		for i := range runs[0].Points {
			var a, f []float64
			for _, run := range runs {
				a = append(a, run.Points[i].Allocation)
				f = append(f, run.Points[i].FragRatio)
			}
			r.Summary = append(r.Summary, GPUSummary{Policy: p, Demand: runs[0].Points[i].Demand, Alloc: spread(a), Frag: spread(f)})
		}
	}
}

// gpuInputs turns the trace into per-GPU nodes (those with GPUs only if
// gpuOnly) and requests, refusing a gpu_spec none of whose models is that
// of a node with GPUs (with the pod list's line): such a pod could never
// be placed.
func gpuInputs(spec *TraceSpec, t *alibabaTrace, gpuOnly bool) ([]*gpu.Node, []gpu.Request, error) {
	var nodes []*gpu.Node
	models := map[string]bool{}
	for _, n := range t.nodes {
		a := n.Status.Allocatable
		g := a[v1.ResourceName(ResourceGPUMilli)]
		gn := gpu.NewNode(n.Name, n.Labels[LabelGPUModel], a.Cpu().MilliValue(), a.Memory().Value()>>20, int(g.Value()/gpu.Milli))
		if gpuOnly && len(gn.Free) == 0 {
			continue
		}
		nodes = append(nodes, gn)
		if len(gn.Free) > 0 {
			models[gn.Model] = true
		}
	}
	_, podsFile := spec.files()
	var reqs []gpu.Request
	for _, tp := range t.pods {
		if len(tp.models) > 0 && !slices.ContainsFunc(tp.models, func(m string) bool { return models[m] }) {
			known := make([]string, 0, len(models))
			for k := range models {
				known = append(known, k)
			}
			slices.Sort(known)
			return nil, nil, fmt.Errorf("%s:%d: column gpu_spec: %q names no model of a node with GPUs (models: %s)", podsFile, tp.line, strings.Join(tp.models, "|"), strings.Join(known, ", "))
		}
		reqs = append(reqs, gpu.Request{CPU: tp.cpuMilli, Mem: tp.memMiB, Count: int(tp.gpus), Share: tp.share, Models: tp.models})
	}
	if len(reqs) == 0 {
		return nil, nil, fmt.Errorf("%s: no pods", podsFile)
	}
	return nodes, reqs, nil
}

// WriteText prints the report: per policy, the allocation rate and the
// fragmentation ratio at each point (mean ± standard deviation over the
// seeds), then every run.
func (r *GPUExperimentReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "gpu experiment: trace %s, %s\n", r.Trace, r.PodList)
	drawn := "drawn"
	if r.Sampling == gpu.SampleArtifact.String() {
		drawn = "the list, then drawn as the artifact does,"
	}
	ties := ""
	if r.Ties == gpu.TiesOrder.String() {
		ties = "; ties broken by a seeded order of the nodes, as the artifact does"
	}
	nodes := ""
	if r.GPUNodesOnly {
		nodes = " (the nodes with GPUs only)"
	}
	if r.Averaging == gpu.RoundedMean.String() {
		ties += "; each point the mean over the pods whose arrived demand rounds to it, as the artifact's analysis does"
	}
	fmt.Fprintf(w, "  %d nodes%s, %d GPUs; %d pods listed (typical workload: %d kinds, %.0f%% of the pods); %s to %.0f%% of GPU capacity%s; seeds %d..%d\n",
		r.Nodes, nodes, r.GPUs, r.Pods, r.Kinds, 100*r.Typical, drawn, 100*r.Demand, ties, r.Seeds[0], r.Seeds[len(r.Seeds)-1])
	table := func(title string, get func(GPUSummary) Spread) {
		fmt.Fprintf(w, "\n%s (mean ± sd over seeds, %%)\n  %-8s", title, "arrived")
		for _, p := range r.Policies {
			fmt.Fprintf(w, " %15s", p)
		}
		fmt.Fprintln(w)
		n := len(r.Summary) / len(r.Policies)
		for i := range n {
			fmt.Fprintf(w, "  %7.0f%%", 100*r.Summary[i].Demand)
			for j := range r.Policies {
				s := get(r.Summary[j*n+i])
				fmt.Fprintf(w, " %15s", fmt.Sprintf("%.2f ± %.2f", 100*s.Mean, 100*s.SD))
			}
			fmt.Fprintln(w)
		}
	}
	table("gpu allocation rate", func(s GPUSummary) Spread { return s.Alloc })
	table("fragmentation / unallocated gpu", func(s GPUSummary) Spread { return s.Frag })
	fmt.Fprintf(w, "\nruns (allocation rate / fragmentation ratio, %%, at each point)\n")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "  %-14s seed %-4d placed %6d of %6d:", run.Policy, run.Seed, run.Placed, run.Arrived)
		for _, p := range run.Points {
			fmt.Fprintf(w, " %.1f/%.1f", 100*p.Allocation, 100*p.FragRatio)
		}
		fmt.Fprintln(w)
	}
}
