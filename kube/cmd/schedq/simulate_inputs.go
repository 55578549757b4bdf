package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/schedq/schedq/kube/sim"
)

// inputs are the simulate flags that bring real workloads in and send
// results out.
type inputs struct {
	trace, snapshot string
	tracePods       string // --trace-pods: the pod list's file name in --trace
	traceOrder      string // --trace-order: file or random, for a list without times
	gpuModel        string // --gpu-model: the replay's scheduler.gpuModel
	gpuPolicy       string // --gpu-policy: the replay's scheduler.gpuPolicy
	traceSpeed      float64
	speedSet        bool // --trace-speed was given
	records, series string
	// learns loads the scenario for a run that learns runtimes (schedq
	// whatif): its scheduler.config may give the history.
	learns bool
}

// seedFlag is --seed: a whole number from 0 to the largest uint64, with a
// message that names the flag rather than strconv's.
type seedFlag struct {
	v   uint64
	set bool
}

func (f *seedFlag) String() string { return strconv.FormatUint(f.v, 10) }
func (f *seedFlag) Type() string   { return "uint" }
func (f *seedFlag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a whole number from 0 to %d", uint64(math.MaxUint64))
	}
	f.v, f.set = v, true
	return nil
}

// load loads the scenario and applies --trace and --snapshot. With either
// and no --scenario, the scenario is empty: the trace or the snapshot is
// the whole workload, with the queue's defaults.
func (in inputs) load(scenario string, scenarioSet bool) (*sim.Scenario, error) {
	var sc *sim.Scenario
	if !scenarioSet && (in.trace != "" || in.snapshot != "") {
		name := "snapshot"
		if in.trace != "" {
			name = sim.TraceAlibabaGPU
		}
		sc = &sim.Scenario{Name: name, Seed: 1}
	} else {
		var err error
		loadScenario := sim.Load
		if in.learns {
			loadScenario = sim.LoadLearning
		}
		if sc, err = loadScenario(scenario); err != nil {
			return nil, err
		}
	}
	if in.trace != "" {
		sc.Trace = &sim.TraceSpec{Format: sim.TraceAlibabaGPU, Dir: in.trace}
	}
	if in.tracePods != "" || in.traceOrder != "" {
		if sc.Trace == nil {
			return nil, fmt.Errorf("--trace-pods, --trace-order: there is no trace (give --trace, or a scenario with a trace)")
		}
		if in.tracePods != "" {
			if err := checkTracePods(in.tracePods, sc.Trace.Dir); err != nil {
				return nil, err
			}
			sc.Trace.Pods = in.tracePods
		}
		sc.Trace.Order = cmpOr(in.traceOrder, sc.Trace.Order)
		if o := sc.Trace.Order; o != "" && o != sim.TraceOrderFile && o != sim.TraceOrderRandom {
			return nil, fmt.Errorf("--trace-order: %q is not %s or %s", o, sim.TraceOrderFile, sim.TraceOrderRandom)
		}
	}
	if in.gpuModel != "" || in.gpuPolicy != "" {
		flags := "--gpu-model"
		switch {
		case in.gpuModel == "":
			flags = "--gpu-policy"
		case in.gpuPolicy != "":
			flags = "--gpu-model, --gpu-policy"
		}
		if sc.Trace == nil {
			return nil, fmt.Errorf("%s: there is no trace (give --trace, or a scenario with a trace)", flags)
		}
		sc.Scheduler.GPUModel = cmpOr(in.gpuModel, sc.Scheduler.GPUModel)
		sc.Scheduler.GPUPolicy = cmpOr(in.gpuPolicy, sc.Scheduler.GPUPolicy)
		if strings.EqualFold(in.gpuPolicy, defaultScoring) {
			sc.Scheduler.GPUPolicy = "" // the profile's own scoring, over a scenario's policy
		}
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", flags, err)
		}
	}
	if in.speedSet {
		if sc.Trace == nil {
			return nil, fmt.Errorf("--trace-speed %v: there is no trace to speed up (give --trace, or a scenario with a trace)", in.traceSpeed)
		}
		sc.Trace.Speed = in.traceSpeed
	}
	if in.snapshot != "" {
		sc.Snapshot = in.snapshot
	}
	if err := sc.GPUNeedsTrace(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", scenario, err)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// checkTracePods refuses a --trace-pods that is not a file name in the
// trace's directory dir: an absolute path, which the trace would join to
// dir all the same.
func checkTracePods(pods, dir string) error {
	if filepath.IsAbs(pods) {
		return fmt.Errorf("--trace-pods %s: names a file in the trace's directory (%s), not an absolute path", pods, dir)
	}
	return nil
}

// compareScenario loads the scenario a second time, with the seed of the
// first run, --config (fw) and the settings of --compare (key=value, or
// several joined by commas) applied, so that a bad setting is refused
// before the first run starts. The file comes first, so that a setting
// it contradicts is refused as --compare's; a setting the file gives
// another value is refused too (sim.Scenario.FileDecides): the run
// would take the file's and compare nothing.
func (in inputs) compareScenario(scenario string, scenarioSet bool, seed uint64, settings string, fw frameworkFlags) (*sim.Scenario, error) {
	alt, err := in.load(scenario, scenarioSet)
	if err != nil {
		return nil, err
	}
	alt.Seed = seed
	if err := fw.apply(alt, settings); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for setting := range strings.SplitSeq(settings, ",") {
		key, value, ok := strings.Cut(setting, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("--compare %s: %q is not key=value (e.g. hints=false, or hints=false,wakeBudget=false)", settings, setting)
		}
		if seen[key] {
			return nil, fmt.Errorf("--compare %s: %s is set twice", settings, key)
		}
		seen[key] = true
		if err := alt.Set(key, value); err != nil {
			return nil, fmt.Errorf("--compare %s: %w", settings, err)
		}
	}
	if err := alt.GPUNeedsTrace(); err != nil { // else the second run would be the first
		return nil, fmt.Errorf("--compare %s: %w", settings, err)
	}
	var errs []error
	for setting := range strings.SplitSeq(settings, ",") { // in order, each once: checked above
		key, _, _ := strings.Cut(setting, "=")
		if err := alt.FileDecides(key); err != nil {
			errs = append(errs, fmt.Errorf("--compare %s: %w", settings, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return alt, nil
}

// outputExts are the extensions each output file may have: the file is
// written at the path given, never renamed, and an extension that does
// not say its format is refused.
var outputExts = map[string][]string{"--records": {".jsonl", ".json", ".csv"}, "--series": {".csv"}}

// check refuses, before the run rather than after it, a --trace-speed
// that is not a positive number, and output paths whose directory does
// not exist or whose extension is not their format's.
func (in inputs) check() error {
	if in.speedSet && !(in.traceSpeed > 0 && in.traceSpeed <= sim.MaxTraceSpeed) {
		return fmt.Errorf("--trace-speed: must be more than 0 and at most %d, got %v", sim.MaxTraceSpeed, in.traceSpeed)
	}
	for _, f := range []struct{ flag, path string }{{"--records", in.records}, {"--series", in.series}} {
		if f.path == "" {
			continue
		}
		if exts := outputExts[f.flag]; !slices.Contains(exts, filepath.Ext(f.path)) {
			return fmt.Errorf("%s %s: the file must end in %s", f.flag, f.path, orList(exts))
		}
		if err := checkWritableDir(f.path); err != nil {
			return fmt.Errorf("%s %s: %w", f.flag, f.path, err)
		}
	}
	return nil
}

// orList joins ".a", ".b", ".c" as ".a, .b or .c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// write writes the records and the series of a run; those of the second
// run of --compare (second) go to compareFile's paths.
func (in inputs) write(r *sim.Report, second bool) error {
	if in.records != "" {
		path := in.records
		if second {
			path = compareFile(path)
		}
		if err := writeFile(path, func(f *os.File) error { return r.WriteRecords(f, filepath.Ext(path)) }); err != nil {
			return fmt.Errorf("--records: %w", err)
		}
	}
	if in.series != "" {
		path := in.series
		if second {
			path = compareFile(path)
		}
		if err := writeFile(path, func(f *os.File) error { return r.WriteSeries(f) }); err != nil {
			return fmt.Errorf("--series: %w", err)
		}
	}
	return nil
}

// writeFile writes the file at path with w, atomically: into a new file
// beside it, renamed over path once complete, so that a write that fails
// (a full disk) leaves no half-written file and the file that was there
// before as it was. A symbolic link is followed (its target is replaced);
// a path that is not a regular file (a device, a pipe) is written in
// place; a file this process may not write (canWrite) is left alone.
func writeFile(path string, w func(*os.File) error) error {
	target, mode := path, os.FileMode(0o644)
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	if st, err := os.Stat(target); err == nil {
		if !st.Mode().IsRegular() {
			return writeInPlace(path, w)
		}
		if err := canWrite(target); err != nil {
			return fmt.Errorf("%s: cannot be written: %w", path, err)
		}
		mode = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	err = w(f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), target)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeInPlace writes the file at path with w, for a path that is not a
// regular file.
func writeInPlace(path string, w func(*os.File) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = w(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
