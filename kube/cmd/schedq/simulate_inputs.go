package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedq/schedq/kube/sim"
)

// inputs are the simulate flags that bring real workloads in and send
// results out.
type inputs struct {
	trace, snapshot string
	traceSpeed      float64
	records, series string
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
		if sc, err = sim.Load(scenario); err != nil {
			return nil, err
		}
	}
	if in.trace != "" {
		sc.Trace = &sim.TraceSpec{Format: sim.TraceAlibabaGPU, Dir: in.trace, Speed: in.traceSpeed}
	}
	if in.snapshot != "" {
		sc.Snapshot = in.snapshot
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// check refuses output paths whose directory does not exist, before the
// run rather than after it.
func (in inputs) check() error {
	for _, f := range []struct{ flag, path string }{{"--records", in.records}, {"--series", in.series}} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(f.path)); err != nil || !st.IsDir() {
			return fmt.Errorf("%s %s: directory %s does not exist", f.flag, f.path, filepath.Dir(f.path))
		}
	}
	if ext := filepath.Ext(in.records); in.records != "" && ext != ".jsonl" && ext != ".json" && ext != ".csv" {
		return fmt.Errorf("--records %s: the file must end in .jsonl or .csv", in.records)
	}
	return nil
}

// write writes the records and the series of a run; infix goes before
// the files' extension (".compare" for the second run of --compare).
func (in inputs) write(r *sim.Report, infix string) error {
	if in.records != "" {
		ext := filepath.Ext(in.records)
		path := strings.TrimSuffix(in.records, ext) + infix + ext
		if err := writeFile(path, func(f *os.File) error { return r.WriteRecords(f, ext) }); err != nil {
			return fmt.Errorf("--records: %w", err)
		}
	}
	if in.series != "" {
		path := strings.TrimSuffix(in.series, ".csv") + infix + ".csv"
		if err := writeFile(path, func(f *os.File) error { return r.WriteSeries(f) }); err != nil {
			return fmt.Errorf("--series: %w", err)
		}
	}
	return nil
}

func writeFile(path string, w func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := w(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
