package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// executeErr runs the command line args and returns its stdout, stderr
// and error.
func executeErr(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// copyFile copies src to dst, for tests that must not touch the fixtures.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSimulateRefusesToOverwriteInputs: an output that is an input, or
// another output, is refused before anything is written, naming both
// flags, and the input is left as it was.
func TestSimulateRefusesToOverwriteInputs(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "c.yaml")
	copyFile(t, "../../sim/testdata/snapshot/cluster.yaml", snap)
	trace := filepath.Join(dir, "trace")
	os.Mkdir(trace, 0o755)
	for _, f := range []string{"openb_node_list_all_node.csv", "openb_pod_list_default.csv"} {
		copyFile(t, filepath.Join("../../sim/testdata/alibaba", f), filepath.Join(trace, f))
	}
	podsCSV := filepath.Join(trace, "openb_pod_list_default.csv")
	scenario := filepath.Join(dir, "s.yaml")
	os.WriteFile(scenario, []byte("name: s\npods: [{name: p, count: 1}]\n"), 0o644)
	withTrace := filepath.Join(dir, "t.yaml")
	os.WriteFile(withTrace, []byte("name: t\ntrace: {format: alibaba-gpu-v2023, dir: "+trace+"}\n"), 0o644)
	snapDir := filepath.Join(dir, "snapdir")
	os.Mkdir(snapDir, 0o755)
	copyFile(t, "../../sim/testdata/snapshot/cluster.yaml", filepath.Join(snapDir, "b.json"))
	withSnapDir := filepath.Join(dir, "sd.yaml")
	os.WriteFile(withSnapDir, []byte("name: sd\nsnapshot: "+snapDir+"\n"), 0o644)
	symlink, hardlink := filepath.Join(dir, "link.yaml"), filepath.Join(dir, "hard.yaml")
	if err := os.Symlink(snap, symlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(snap, hardlink); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relSnap, err := filepath.Rel(wd, snap)
	if err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(dir, "same.csv")
	profile := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: s}]\n"
	config, configJSON, configCSV := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "config.json"), filepath.Join(dir, "config.csv")
	for _, f := range []string{config, configJSON, configCSV} {
		os.WriteFile(f, []byte(profile), 0o644)
	}
	withConfig := filepath.Join(dir, "c.scenario.yaml")
	os.WriteFile(withConfig, []byte("name: c\nscheduler: {config: "+configCSV+"}\npods: [{name: p, count: 1}]\n"), 0o644)
	tests := []struct {
		name  string
		args  []string
		want  []string // each in the error
		input string   // a file that must be unchanged
	}{
		{"snapshot as report", []string{"--snapshot", snap, "--report", snap}, []string{"--report " + snap, "--snapshot " + snap}, snap},
		{"trace CSV as records", []string{"--trace", trace, "--records", podsCSV}, []string{"--records " + podsCSV, "--trace " + podsCSV}, podsCSV},
		{"scenario as report", []string{"--scenario", scenario, "--report", scenario}, []string{"--report", "--scenario " + scenario}, scenario},
		{"records as series", []string{"--scenario", scenario, "--records", same, "--series", same}, []string{"--records " + same, "--series " + same, "same file"}, ""},
		{"the scenario's trace", []string{"--scenario", withTrace, "--series", podsCSV}, []string{"--series", "the scenario's trace " + podsCSV}, podsCSV},
		{"a file of a snapshot directory", []string{"--snapshot", snapDir, "--records", filepath.Join(snapDir, "b.json")}, []string{"--records", "--snapshot " + filepath.Join(snapDir, "b.json")}, filepath.Join(snapDir, "b.json")},
		{"a new file of a snapshot directory", []string{"--snapshot", snapDir, "--records", filepath.Join(snapDir, "new.json")},
			[]string{"--records " + filepath.Join(snapDir, "new.json") + " is in the snapshot directory --snapshot " + snapDir, "the next run would read it"}, ""},
		{"a new file of the scenario's snapshot directory", []string{"--scenario", withSnapDir, "--records", filepath.Join(snapDir, "new.json")},
			[]string{"--records " + filepath.Join(snapDir, "new.json") + " is in the snapshot directory the scenario's snapshot " + snapDir, "the next run would read it"}, ""},
		{"symbolic link to the snapshot", []string{"--snapshot", snap, "--report", symlink}, []string{"--report " + symlink, "--snapshot " + snap}, snap},
		{"hard link to the snapshot", []string{"--snapshot", snap, "--report", hardlink}, []string{"--report " + hardlink, "--snapshot " + snap}, snap},
		{"relative and absolute", []string{"--snapshot", relSnap, "--report", filepath.Join(dir, "x", "..", "c.yaml")}, []string{"--report", "--snapshot " + relSnap}, snap},
		{"the --compare run's records as series", []string{"--scenario", scenario, "--compare", "hints=false", "--records", filepath.Join(dir, "r.csv"), "--series", filepath.Join(dir, "r.compare.csv")},
			[]string{"--records (the --compare run's) " + filepath.Join(dir, "r.compare.csv"), "--series " + filepath.Join(dir, "r.compare.csv")}, ""},
		{"config as report", []string{"--scenario", scenario, "--config", config, "--report", config}, []string{"--report " + config, "--config " + config}, config},
		{"the --compare run's config as records", []string{"--scenario", scenario, "--compare", "config=" + configJSON, "--records", configJSON}, []string{"--records " + configJSON, "--compare config " + configJSON}, configJSON},
		{"the scenario's config as series", []string{"--scenario", withConfig, "--series", configCSV}, []string{"--series " + configCSV, "the scenario's scheduler.config " + configCSV}, configCSV},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if tc.input != "" {
				before, _ = os.ReadFile(tc.input)
			}
			out, _, err := executeErr(append([]string{"simulate", "--progress=off"}, tc.args...)...)
			if err == nil {
				t.Fatalf("no error; output %q", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.input != "" {
				if after, _ := os.ReadFile(tc.input); !bytes.Equal(before, after) {
					t.Fatalf("%s was changed", tc.input)
				}
			}
			if out != "" {
				t.Fatalf("a report was printed: %q", out)
			}
		})
	}
	if _, err := os.Stat(same); err == nil {
		t.Fatalf("%s was written", same)
	}
}

// TestSimulateChecksEverythingBeforeRunning: every bad flag and --compare
// setting is refused before the first run starts, with a message naming
// it. The snapshot file is malformed, and only the run reads it: an
// error about it would mean that the run had started.
func TestSimulateChecksEverythingBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	badSnap := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badSnap, []byte("apiVersion: v1\nkind: Nonsense\n"), 0o644)
	scenario := func(name, yaml string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(yaml), 0o644)
		return path
	}
	prio := scenario("prio.yaml", "name: x\npods: [{name: p, count: 1, priority: 99999999999}]\n")
	count := scenario("count.yaml", "name: x\npods: [{name: p, count: 2000000000}, {name: q, count: 5}]\n")
	trace := "../../sim/testdata/alibaba"
	gpuNoTrace := scenario("gpu.yaml", "name: x\nscheduler: {gpuModel: device, gpuPolicy: fgd}\npods: [{name: p, count: 1}]\n")
	twoProfiles := scenario("two.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: a}, {schedulerName: b, plugins: {filter: {enabled: [{name: GPUDevices}]}}}]\n")
	for _, d := range []string{"r.html", "r.csv", "s.csv", "c.compare.csv"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	tests := []struct {
		name    string
		args    []string
		want    string
		notWant string
	}{
		{"compare config missing", []string{"--compare", "config=" + filepath.Join(dir, "none.yaml")}, "--compare config=" + filepath.Join(dir, "none.yaml") + ": scheduler.config: open " + filepath.Join(dir, "none.yaml"), ""},
		{"compare config whose second profile is refused", []string{"--compare", "config=" + twoProfiles}, "--compare config=" + twoProfiles + ": scheduler.config: " + twoProfiles + " names GPUDevices (profiles[1].plugins.filter.enabled[0])", ""},
		{"config missing", []string{"--config", filepath.Join(dir, "none.yaml")}, "--config: scheduler.config: open " + filepath.Join(dir, "none.yaml"), ""},
		{"report is a directory", []string{"--report", filepath.Join(dir, "r.html")}, "--report " + filepath.Join(dir, "r.html") + ": is a directory", ""},
		{"records is a directory", []string{"--records", filepath.Join(dir, "r.csv")}, "--records " + filepath.Join(dir, "r.csv") + ": is a directory", ""},
		{"series is a directory", []string{"--series", filepath.Join(dir, "s.csv")}, "--series " + filepath.Join(dir, "s.csv") + ": is a directory", ""},
		{"the --compare run's records is a directory", []string{"--compare", "hints=false", "--records", filepath.Join(dir, "c.csv")}, "--records (the --compare run's) " + filepath.Join(dir, "c.compare.csv") + ": is a directory", ""},
		{"unknown compare key", []string{"--compare", "foo=bar"}, `--compare foo=bar: unknown setting "foo" (settable: gangs`, ""},
		{"compare empty", []string{"--compare", ""}, `--compare "": no setting (give key=value, e.g. hints=false)`, ""},
		{"compare without =", []string{"--compare", "hints"}, `--compare hints: "hints" is not key=value`, ""},
		{"compare second setting without =", []string{"--compare", "hints=false,"}, `--compare hints=false,: "" is not key=value`, ""},
		{"compare second setting bad", []string{"--compare", "hints=false,wakeBudget=no"}, `--compare hints=false,wakeBudget=no: wakeBudget: "no" is not true or false`, ""},
		{"compare setting twice", []string{"--compare", "hints=false,hints=true"}, "--compare hints=false,hints=true: hints is set twice", ""},
		{"compare bad boolean", []string{"--compare", "hints=maybe"}, `--compare hints=maybe: hints: "maybe" is not true or false`, ""},
		{"compare negative duration", []string{"--compare", "initialBackoff=-5s"}, "--compare initialBackoff=-5s: queue.initialBackoff: must not be negative, got -5s", ""},
		{"compare bad duration", []string{"--compare", "maxBackoff=soon"}, `--compare maxBackoff=soon: maxBackoff: "soon" is not a duration`, ""},
		{"compare percentage out of range", []string{"--compare", "percentageOfNodesToScore=150"}, "--compare percentageOfNodesToScore=150: scheduler.percentageOfNodesToScore: must be 0 to 100, got 150", ""},
		{"compare percentage not a number", []string{"--compare", "percentageOfNodesToScore=half"}, `percentageOfNodesToScore: "half" is not a whole number from 0 to 100`, "strconv"},
		{"compare seed not a number", []string{"--compare", "seed=abc"}, `--compare seed=abc: seed: "abc" is not a whole number from 0 to 18446744073709551615`, "strconv"},
		{"compare scoring", []string{"--compare", "scoring=balanced"}, "scheduler.scoring: was removed with schedq's own plugins: set NodeResourcesFit's scoringStrategy", ""},
		{"compare schedq's plugins", []string{"--compare", "plugins=schedq"}, "scheduler.plugins: schedq's own plugins were removed", ""},
		{"seed not a number", []string{"--seed", "abc"}, `"--seed" flag: not a whole number from 0 to 18446744073709551615`, "strconv"},
		{"seed negative", []string{"--seed", "-1"}, `"--seed" flag: not a whole number from 0`, "strconv"},
		{"trace pods absolute", []string{"--trace", trace, "--trace-pods", "/etc/pods.csv"}, "--trace-pods /etc/pods.csv: names a file in the trace's directory (" + trace + "), not an absolute path", ""},
		{"trace speed NaN", []string{"--trace", trace, "--trace-speed", "NaN"}, "--trace-speed: must be more than 0 and at most 1000000, got NaN", ""},
		{"trace speed Inf", []string{"--trace", trace, "--trace-speed", "Inf"}, "--trace-speed: must be more than 0 and at most 1000000, got +Inf", ""},
		{"trace speed zero", []string{"--trace", trace, "--trace-speed", "0"}, "--trace-speed: must be more than 0", ""},
		{"trace speed negative", []string{"--trace", trace, "--trace-speed", "-2"}, "--trace-speed: must be more than 0", ""},
		{"trace speed without a trace", []string{"--trace-speed", "10"}, "--trace-speed 10: there is no trace to speed up (give --trace, or a scenario with a trace)", ""},
		{"series not csv", []string{"--series", filepath.Join(dir, "x.json")}, "--series " + filepath.Join(dir, "x.json") + ": the file must end in .csv", ""},
		{"records not jsonl or csv", []string{"--records", filepath.Join(dir, "x.txt")}, "--records " + filepath.Join(dir, "x.txt") + ": the file must end in .jsonl, .json or .csv", ""},
		{"window without a report", []string{"--window-start", "1m"}, "--window-start, --window-end: they set the charts of the HTML report; give --report too", ""},
		{"window start negative", []string{"--report", filepath.Join(dir, "r.html"), "--window-start", "-1s"}, "--window-start: must not be negative, got -1s", ""},
		{"window start past the scenario's end", []string{"--scenario", "PriorityPressure", "--report", filepath.Join(dir, "w.html"), "--window-start", "6m"}, "--window-start 6m0s: at or after the end of PriorityPressure at 5m0s (the scenario's duration): the charts would be empty", ""},
		{"window end before start", []string{"--report", filepath.Join(dir, "r.html"), "--window-start", "2m", "--window-end", "1m"}, "--window-end 1m0s: must be after --window-start (2m0s)", ""},
		// The GPU settings model a trace's GPUs: without one they would
		// change nothing, and --compare would run the same twice.
		{"compare gpuModel without a trace", []string{"--compare", "gpuModel=device"}, "--compare gpuModel=device: scheduler.gpuModel device: only with a trace", ""},
		{"compare gpuPolicy without a trace", []string{"--compare", "gpuPolicy=fgd"}, "--compare gpuPolicy=fgd: scheduler.gpuPolicy fgd: only with a trace", ""},
		{"scenario's GPU settings without a trace", []string{"--scenario", gpuNoTrace}, "scenario " + gpuNoTrace + ": scheduler.gpuModel device: only with a trace", ""},
		{"output", []string{"-o", "yaml"}, `--output: "yaml" is not text or json`, ""},
		{"progress", []string{"--progress", "sometimes"}, `--progress: "sometimes" is not auto, on or off`, ""},
		{"priority out of int32", []string{"--scenario", prio}, "pods[0].priority: 99999999999 is out of range (-2147483648 to 2147483647)", "whole number"},
		{"count over the limit", []string{"--scenario", count}, "pods[0].count: 2000000000 is more than the 1000000 pods a scenario may have", "in all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"simulate", "--progress=off", "--snapshot", badSnap}, tc.args...)
			if tc.args[0] == "--progress" {
				args = append([]string{"simulate", "--snapshot", badSnap}, tc.args...)
			}
			out, _, err := executeErr(args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Fatalf("error %v contains %q", err, tc.notWant)
			}
			if strings.Contains(err.Error(), "snapshot") || out != "" {
				t.Fatalf("the run started before the check: %v, %q", err, out)
			}
		})
	}
}

// TestSimulateListAlone: --list with another flag, which it would ignore,
// is refused, naming it; alone it lists the scenarios.
func TestSimulateListAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"output", []string{"--list", "-o", "json"}, "--list: lists the built-in scenarios and runs nothing; not with --output"},
		{"scenario and seed", []string{"--list", "--scenario", "x.yaml", "--seed", "3"}, "not with --scenario, --seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := executeErr(append([]string{"simulate"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Fatalf("error %v, output %q; want an error containing %q", err, out, tc.want)
			}
		})
	}
	if out, _, err := executeErr("simulate", "--list"); err != nil || !strings.Contains(out, "NodeArrival") {
		t.Fatalf("--list: %v, %q", err, out)
	}
}

// TestExplainUsage: explain with no argument, or two, says what it wants.
func TestExplainUsage(t *testing.T) {
	for _, args := range [][]string{{"explain"}, {"explain", "a/b", "c/d"}} {
		_, _, err := executeErr(args...)
		if err == nil || !strings.Contains(err.Error(), "usage: schedq explain NAMESPACE/NAME") {
			t.Errorf("%v: error %v, want the usage with NAMESPACE/NAME", args, err)
		}
	}
}

// TestSimulateMemoryEstimate: a scenario estimated to need more than the
// limit is refused before it is built, and one above half of it warns.
func TestSimulateMemoryEstimate(t *testing.T) {
	// NodeArrival: 2,160 pods and 285 nodes, about 13.2 MiB.
	_, _, err := executeErr("simulate", "--progress=off", "--memory-limit", "10Mi")
	if err == nil || !strings.Contains(err.Error(), "scenario NodeArrival needs about 14Mi of memory (285 nodes × 2 KiB + 2160 pods × 6 KiB), more than the 10Mi --memory-limit; to run it anyway, give --memory-limit 14Mi or more") {
		t.Fatalf("error %v", err)
	}
	// The machine's own figure, from a fake /proc/meminfo.
	fake := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(fake, []byte("MemTotal:       32000000 kB\nMemAvailable:       8000 kB\n"), 0o644)
	defer func(m string) { meminfo = m }(meminfo)
	meminfo = fake
	_, _, err = executeErr("simulate", "--progress=off", "--scenario", "Unschedulable")
	if err == nil || !strings.Contains(err.Error(), "more than the 8Mi available on this machine (MemAvailable)") {
		t.Fatalf("error %v", err)
	}
	os.WriteFile(fake, []byte("MemAvailable:      20000 kB\n"), 0o644)
	out, stderr, err := executeErr("simulate", "--progress=off", "--no-wall", "--scenario", "Unschedulable")
	if err != nil || !strings.Contains(stderr, "warning: scenario Unschedulable needs about") || !strings.Contains(out, "scenario Unschedulable") {
		t.Fatalf("error %v, stderr %q", err, stderr)
	}
	if _, _, err := executeErr("simulate", "--memory-limit", "lots"); err == nil || !strings.Contains(err.Error(), `"--memory-limit" flag: "lots" is not a positive quantity`) {
		t.Fatalf("error %v", err)
	}
}

// TestSimulateMemoryLimitFlag: a --memory-limit that is not a positive
// number of bytes an int64 holds is refused, naming it, rather than
// wrapped round to another limit or to none.
func TestSimulateMemoryLimitFlag(t *testing.T) {
	for _, tc := range []struct {
		name, limit, want string
	}{
		{"not a quantity", "lots", `"lots" is not a positive quantity of bytes`},
		{"zero", "0", `"0" is not a positive quantity of bytes`},
		{"negative", "-1Gi", `"-1Gi" is not a positive quantity of bytes`},
		{"past int64, once read as 1 byte", "18446744073709551617", `"18446744073709551617" is more than 9223372036854775807 bytes, the largest limit`},
		{"past int64, once read as no limit", "1e30", `"1e30" is more than 9223372036854775807 bytes, the largest limit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := executeErr("simulate", "--progress=off", "--scenario", "EarlyRetry", "--memory-limit", tc.limit)
			if err == nil || !strings.Contains(err.Error(), `"--memory-limit" flag: `+tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if out != "" {
				t.Fatalf("the scenario ran: %q", out)
			}
		})
	}
}

// TestSimulateMemoryLimitAsGiven: the error of a scenario over the
// limit names --memory-limit as it was given, where it once rounded it
// up to whole MiB (500Ki read as 1Mi).
func TestSimulateMemoryLimitAsGiven(t *testing.T) {
	for _, tc := range []struct{ name, limit, want string }{
		{"whole MiB", "1Mi", "more than the 1Mi --memory-limit"},
		{"under a MiB", "500Ki", "more than the 500Ki --memory-limit"},
		{"bytes", "1000", "more than the 1000 --memory-limit"},
		{"decimal", "1.2M", "more than the 1.2M --memory-limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := executeErr("simulate", "--progress=off", "--scenario", "EarlyRetry", "--memory-limit", tc.limit)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
