package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/sim"
)

// gpuFlags are the flags of the GPU experiment (--gpu-experiment).
type gpuFlags struct {
	experiment bool
	demand     float64
	seeds      int
	policy     string
	model      string
	typical    float64
	sampling   string
	ties       string
	gpuOnly    bool
	averaging  string
}

func (g *gpuFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&g.experiment, "gpu-experiment", false, "with --trace: run the GPU-sharing paper's experiment (pods drawn until --demand, no pod leaves) instead of a replay")
	f.Float64Var(&g.demand, "demand", 1.3, "with --gpu-experiment: draw pods until their GPU requests reach this multiple of the cluster's GPU capacity")
	f.IntVar(&g.seeds, "seeds", 1, "with --gpu-experiment: runs per policy, seeds --seed, --seed+1, ...")
	f.StringVar(&g.policy, "gpu-policy", "", "the GPU policy ("+strings.Join(policyNames(), ", ")+"): with --gpu-experiment, several joined by commas or all (the default); in a trace replay, one, scoring nodes and choosing GPUs (scenario scheduler.gpuPolicy; default: the profile's own scoring), or several joined by commas (default among them names the profile's scoring) or all (default and the six), one replay each, printed as one table")
	f.Float64Var(&g.typical, "typical-share", gpu.TypicalShare, "with --gpu-experiment: fragmentation is measured against the most popular pod kinds covering this share of the pod list (0.95 in the paper's artifact; 1: every kind)")
	f.StringVar(&g.sampling, "sampling", "draws", "with --gpu-experiment: draws (every pod drawn from the list with replacement, as the paper describes) or artifact (the list once, then draws, as the paper's artifact makes its pods)")
	f.StringVar(&g.ties, "ties", "random", "with --gpu-experiment: how a node is chosen among those of the highest score: random (afresh for each pod, as kube-scheduler does) or order (the first in an order of the nodes drawn once per run, as the paper's artifact does)")
	f.BoolVar(&g.gpuOnly, "gpu-nodes-only", false, "with --gpu-experiment: leave the trace's nodes without GPUs out of the cluster, as the paper's artifact does")
	f.StringVar(&g.averaging, "point-averaging", "first", "with --gpu-experiment: how each point of arrived demand is measured: first (after the first pod whose arrival reaches it) or rounded (the mean over the pods after whose arrival the demand, in whole percents rounded, is the point's, as the paper's artifact's analysis does)")
	f.StringVar(&g.model, "gpu-model", "", "in a trace replay: dra (the default, each GPU a DRA device that DynamicResources allocates), device (each GPU on its own in the simulator's GPUDevices plugin) or capacity (one number of thousandths per node) (scenario scheduler.gpuModel)")
}

func policyNames() []string {
	var out []string
	for _, p := range gpu.Policies() {
		out = append(out, p.String())
	}
	return out
}

// policies reads --gpu-policy: one name, several joined by commas (none
// twice: a policy's runs are the same with the same seeds), or all.
func (g *gpuFlags) policies() ([]gpu.Policy, error) {
	if g.policy == "all" || g.policy == "" {
		return gpu.Policies(), nil
	}
	var out []gpu.Policy
	for _, s := range strings.Split(g.policy, ",") {
		p, err := gpu.ParsePolicy(s)
		if err != nil {
			return nil, fmt.Errorf("--gpu-policy %s: %w", g.policy, err)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("--gpu-policy %s: %s is named twice", g.policy, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// experimentIgnores are the flags of a simulation run that the GPU
// experiment has no use for: given with it, they are refused rather than
// ignored.
var experimentIgnores = []string{"scenario", "snapshot", "compare", "report", "records", "series", "window-start", "window-end", "config", "check", "memory-limit", "trace-speed", "trace-order"}

// checkGPUFlags refuses the experiment's flags without --gpu-experiment,
// and bad values with the flag named, before anything runs.
func (g *gpuFlags) check(changed func(string) bool) error {
	if !g.experiment {
		for _, f := range []string{"demand", "seeds", "typical-share", "sampling", "ties", "gpu-nodes-only", "point-averaging"} {
			if changed(f) {
				return fmt.Errorf("--%s: only with --gpu-experiment", f)
			}
		}
		return nil
	}
	if changed("gpu-model") {
		return fmt.Errorf("--gpu-model: the experiment always models GPUs one by one")
	}
	for _, f := range experimentIgnores {
		if changed(f) {
			return fmt.Errorf("--gpu-experiment: --%s does not apply (the experiment draws its pods from --trace at random and prints one table)", f)
		}
	}
	switch {
	case math.IsNaN(g.demand) || g.demand <= 0 || g.demand > gpu.MaxDemand:
		return fmt.Errorf("--demand %v: want more than 0 and at most %d (times the cluster's GPU capacity)", g.demand, gpu.MaxDemand)
	case g.seeds < 1 || g.seeds > sim.MaxGPUSeeds:
		return fmt.Errorf("--seeds %d: want 1 to %d", g.seeds, sim.MaxGPUSeeds)
	case math.IsNaN(g.typical) || g.typical <= 0 || g.typical > 1:
		return fmt.Errorf("--typical-share %v: want more than 0 and at most 1", g.typical)
	}
	if _, err := gpu.ParseSampling(g.sampling); err != nil {
		return fmt.Errorf("--sampling: %w", err)
	}
	if _, err := gpu.ParseTies(g.ties); err != nil {
		return fmt.Errorf("--ties: %w", err)
	}
	if _, err := gpu.ParseAveraging(g.averaging); err != nil {
		return fmt.Errorf("--point-averaging: %w", err)
	}
	_, err := g.policies()
	return err
}

// runGPUExperiment runs the experiment on the trace of in and prints its
// report (text or JSON).
func runGPUExperiment(stdout io.Writer, g *gpuFlags, in inputs, firstSeed uint64, output string, noWall bool) error {
	if in.trace == "" {
		return fmt.Errorf("--gpu-experiment: needs --trace DIR")
	}
	if err := checkTracePods(in.tracePods, in.trace); err != nil {
		return err
	}
	ps, err := g.policies()
	if err != nil {
		return err
	}
	sampling, err := gpu.ParseSampling(g.sampling)
	if err != nil {
		return fmt.Errorf("--sampling: %w", err)
	}
	ties, err := gpu.ParseTies(g.ties)
	if err != nil {
		return fmt.Errorf("--ties: %w", err)
	}
	averaging, err := gpu.ParseAveraging(g.averaging)
	if err != nil {
		return fmt.Errorf("--point-averaging: %w", err)
	}
	e := sim.GPUExperiment{Averaging: averaging, Sampling: sampling, Ties: ties, GPUNodesOnly: g.gpuOnly, Trace: sim.TraceSpec{Format: sim.TraceAlibabaGPU, Dir: in.trace, Pods: in.tracePods}, Policies: ps, Demand: g.demand, Seeds: g.seeds, FirstSeed: firstSeed, TypicalShare: g.typical}
	rep, err := sim.RunGPUExperiment(e)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(stdout, rep, noWall)
	}
	rep.WriteText(stdout)
	return nil
}
