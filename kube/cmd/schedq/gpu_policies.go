package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/schedq/schedq/kube/gpu"
	"github.com/schedq/schedq/kube/sim"
)

// defaultScoring names the profile's own scoring, without a GPU policy,
// in a list of --gpu-policy.
const defaultScoring = "default"

// sweep reports whether --gpu-policy asks a replay for one run per
// policy: all, or several names joined by commas.
func (g *gpuFlags) sweep() bool {
	return !g.experiment && (g.policy == "all" || strings.Contains(g.policy, ","))
}

// sweepPolicies reads --gpu-policy for a per-policy replay: all (the
// default scoring, then the six policies) or names joined by commas, each
// a policy or default, none twice.
func (g *gpuFlags) sweepPolicies() ([]string, error) {
	if g.policy == "all" {
		out := []string{defaultScoring}
		for _, p := range gpu.Policies() {
			out = append(out, p.String())
		}
		return out, nil
	}
	var out []string
	for _, s := range strings.Split(g.policy, ",") {
		name := strings.ToLower(strings.TrimSpace(s))
		if name != defaultScoring {
			p, err := gpu.ParsePolicy(name)
			if err != nil {
				return nil, fmt.Errorf("--gpu-policy %s: %w, or %s (the profile's scoring)", g.policy, err, defaultScoring)
			}
			name = p.String()
		}
		if slices.Contains(out, name) {
			return nil, fmt.Errorf("--gpu-policy %s: %s is named twice", g.policy, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// sweepFlags are the flags a per-policy replay refuses: each policy is its
// own run, and the table is its one output.
var sweepFlags = []string{"compare", "report", "records", "series", "window-start", "window-end"}

// checkSweep refuses, before any run, what a per-policy replay cannot do.
func (g *gpuFlags) checkSweep(changed func(string) bool, in inputs) ([]string, error) {
	names, err := g.sweepPolicies()
	if err != nil {
		return nil, err
	}
	for _, f := range sweepFlags {
		if changed(f) {
			return nil, fmt.Errorf("--gpu-policy %s: not with --%s (each policy is its own run, and the table is the output)", g.policy, f)
		}
	}
	if g.model == sim.GPUModelCapacity {
		return nil, fmt.Errorf("--gpu-policy %s: the policies need --gpu-model %s or %s, not %s", g.policy, sim.GPUModelDevice, sim.GPUModelDRA, g.model)
	}
	if in.trace == "" && !changed("scenario") {
		return nil, fmt.Errorf("--gpu-policy %s: a per-policy replay needs --trace DIR (or a scenario with a trace)", g.policy)
	}
	return names, nil
}

// sweepConfigFree refuses a per-policy replay (--gpu-policy list) whose
// scheduler configuration sets GPUDevices' policy: every other policy of
// the list would disagree with it, and default would run it under
// another name.
func sweepConfigFree(list string, sc *sim.Scenario) error {
	p, err := sc.ConfigGPUPolicy()
	if err != nil {
		return fmt.Errorf("--gpu-policy %s: %w", list, err)
	}
	if p != "" {
		return fmt.Errorf("--gpu-policy %s: scheduler.config (--config) %s sets GPUDevices' policy %s: each replay of a list sets its own (%s: none); drop args.policy from the file, or the list", list, sc.Scheduler.Config, p, defaultScoring)
	}
	return nil
}

// policyRun runs the replay of the table's row i under its
// policy (names[i]), or the default scoring.
type policyRun func(i int, policy string) (*sim.Report, error)

// policyTable is the JSON of a per-policy replay.
type policyTable struct {
	Policies []sim.PolicyRow `json:"policies"`
}

// runPolicies runs the replay once per policy and prints one table, text
// or JSON, in the order of names. Same inputs and seed, same bytes.
func runPolicies(stdout io.Writer, names []string, run policyRun, output string, noWall bool) error {
	var rows []sim.PolicyRow
	for i, name := range names {
		r, err := run(i, name)
		if err != nil {
			return fmt.Errorf("--gpu-policy %s: %w", name, err)
		}
		rows = append(rows, sim.PolicyRowOf(name, r))
	}
	if output == "json" {
		return writeJSON(stdout, policyTable{rows}, noWall)
	}
	sim.WritePolicyTable(stdout, rows)
	return nil
}

// sweepScenarios loads one scenario per policy, each checked, before any
// run: the default scoring clears a policy the scenario may set.
func sweepScenarios(names []string, load func(policy string) (*sim.Scenario, error)) ([]*sim.Scenario, error) {
	var out []*sim.Scenario
	for _, name := range names {
		policy := name
		if name == defaultScoring {
			policy = ""
		}
		sc, err := load(policy)
		if err != nil {
			return nil, fmt.Errorf("the replay of %s: %w", name, err)
		}
		if name == defaultScoring {
			sc.Scheduler.GPUPolicy = ""
		}
		out = append(out, sc)
	}
	return out, nil
}
