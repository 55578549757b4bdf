package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedq/schedq/kube/sim"
)

// namedPath is a file the command reads or writes, with the flag (or the
// scenario field) that named it.
type namedPath struct{ flag, path string }

// scenarioSnapshot names the snapshot of a scenario file's snapshot field
// (not --snapshot) among the inputs.
const scenarioSnapshot = "the scenario's snapshot"

// checkOutputs refuses, before anything is written, an output file that is
// a directory (it could not be written after the run), one of the
// inputs or another output: writing it would destroy data, or a file a
// snapshot directory would read on the next run; and one there already
// that this process may not write (canWrite). Two
// paths are the same file if they are equal once made absolute and clean,
// or if both exist and are one file (a symbolic or a hard link).
// O(outputs × (outputs + inputs)) stat calls.
func checkOutputs(outputs, inputs []namedPath) error {
	for i, o := range outputs {
		if st, err := os.Stat(o.path); err == nil && st.IsDir() {
			return fmt.Errorf("%s %s: is a directory; name a file", o.flag, o.path)
		}
		for _, other := range outputs[:i] {
			if samePath(o.path, other.path) {
				return fmt.Errorf("%s %s and %s %s are the same file: each output needs its own file", other.flag, other.path, o.flag, o.path)
			}
		}
		for _, in := range inputs {
			if samePath(o.path, in.path) {
				return fmt.Errorf("%s %s is the input %s %s: refusing to write over it", o.flag, o.path, in.flag, in.path)
			}
		}
		for _, in := range inputs {
			if (in.flag == "--snapshot" || in.flag == scenarioSnapshot) && snapshotReads(in.path, o.path) {
				return fmt.Errorf("%s %s is in the snapshot directory %s %s: the next run would read it as part of the snapshot", o.flag, o.path, in.flag, in.path)
			}
		}
		if err := canWrite(o.path); err != nil {
			return fmt.Errorf("%s %s: cannot be written: %w", o.flag, o.path, err)
		}
	}
	return nil
}

// canWrite fails if path is a regular file that this process may not
// open for writing (read-only to it, immutable, on a read-only file
// system). writeFile renames a new file over it, which its directory
// allows all the same: the file's own protection would be lost, and
// known only after the run. It opens the file without truncating it;
// a path that is not there, or not a regular file (a pipe, which the
// open would wait on), passes.
func canWrite(path string) error {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return err
	}
	return f.Close()
}

// snapshotReads reports whether a snapshot directory dir would read the
// file out: a .yaml, .yml or .json file in it (sim's snapshot reader).
func snapshotReads(dir, out string) bool {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return false
	}
	switch filepath.Ext(out) {
	case ".yaml", ".yml", ".json":
	default:
		return false
	}
	absDir, errD := filepath.Abs(dir)
	absOut, errO := filepath.Abs(out)
	return errD == nil && errO == nil && filepath.Dir(absOut) == absDir
}

func samePath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA == nil && errB == nil && absA == absB {
		return true
	}
	stA, errA := os.Stat(a)
	stB, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(stA, stB)
}

// outputPaths lists the files a simulate run will write: the report, and
// the records and the series of each run (the second run's with
// ".compare" before the extension).
func (in inputs) outputPaths(report string, compare bool) []namedPath {
	var out []namedPath
	if report != "" {
		out = append(out, namedPath{"--report", report})
	}
	for _, f := range []namedPath{{"--records", in.records}, {"--series", in.series}} {
		if f.path == "" {
			continue
		}
		out = append(out, f)
		if compare {
			out = append(out, namedPath{f.flag + " (the --compare run's)", compareFile(f.path)})
		}
	}
	return out
}

// compareFile is the file of the second run of --compare: path with
// ".compare" before its extension.
func compareFile(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".compare" + ext
}

// inputPaths lists the files the runs of sc and alt (nil without
// --compare) read: the scenario file (not a built-in scenario), and the
// trace's, the snapshot's and the scheduler configuration's files, named
// by the flag that gave them (config: --config's value) or, if the
// scenario file did, by its field. The snapshot is listed as given too,
// a directory as well as its files, so that checkOutputs refuses a new
// file the next run would read from it.
func (in inputs) inputPaths(scenario string, scenarioSet bool, sc, alt *sim.Scenario, config string) []namedPath {
	var out []namedPath
	if scenarioSet && !slices.Contains(sim.Builtins(), scenario) {
		out = append(out, namedPath{"--scenario", scenario})
	}
	if sc.Snapshot != "" {
		flag := scenarioSnapshot
		if in.snapshot != "" {
			flag = "--snapshot"
		}
		out = append(out, namedPath{flag, sc.Snapshot})
	}
	for _, f := range sc.InputFiles() {
		flag := "the scenario's " + f.Source
		switch {
		case f.Source == "trace" && in.trace != "" || f.Source == "snapshot" && in.snapshot != "":
			flag = "--" + f.Source
		case f.Source == "scheduler.config" && config != "":
			flag = "--config"
		}
		out = append(out, namedPath{flag, f.Path})
	}
	if alt != nil && alt.Scheduler.Config != "" && alt.Scheduler.Config != sc.Scheduler.Config {
		out = append(out, namedPath{"--compare config", alt.Scheduler.Config})
	}
	return out
}
