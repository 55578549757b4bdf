package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateReportDirectoryCheckedFirst: a --report into a directory
// that does not exist (or is a file) fails before the run, naming it.
func TestSimulateReportDirectoryCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ report, want string }{
		{filepath.Join(dir, "missing", "r.html"), "directory " + filepath.Join(dir, "missing") + " does not exist"},
		{filepath.Join(file, "r.html"), file + " is not a directory"},
	} {
		// A scenario file that does not exist proves the check comes first:
		// loading it would fail with another message.
		out, err := execute("simulate", "--report", tc.report, "--scenario", filepath.Join(dir, "none.yaml"))
		if err == nil || !strings.Contains(err.Error(), "--report "+tc.report+": "+tc.want) {
			t.Errorf("--report %s: error %v, output %q", tc.report, err, out)
		}
	}
}

// TestSimulateBadScenarioFile: scenario errors reach the command line
// naming the file and the exact path.
func TestSimulateBadScenarioFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"", "the file is empty"},
		{"name: x\npods: [{name: p, count: 2000000000}]\n", "pods[0].count: 2000000000 is more than the 1000000 pods"},
		{"name: x\npods: [{name: p, count: 1}]\nqueue: {initialBackoff: 20s, maxBackoff: 10s}\n", "queue.initialBackoff: 20s is more than queue.maxBackoff (10s)"},
	} {
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := execute("simulate", "--scenario", path, "--progress", "off")
		if err == nil || !strings.Contains(err.Error(), "scenario "+path+": "+tc.want) || strings.Count(err.Error(), "schedq") > 0 {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestSimulatePluginsDefault: the simulator schedules with kube-scheduler's
// plugins; --upstream-plugins (deprecated) changes nothing, and
// --upstream-plugins=false and scheduler.plugins: schedq are refused
// with what replaces them named.
func TestSimulatePluginsDefault(t *testing.T) {
	dir := t.TempDir()
	schedqFile := filepath.Join(dir, "schedq.yaml")
	plain := filepath.Join(dir, "plain.yaml")
	pods := "nodes: [{name: n, count: 1, capacity: {cpu: \"1\"}}]\npods: [{name: p, count: 1}]\n"
	if err := os.WriteFile(schedqFile, []byte("name: s\nscheduler: {plugins: schedq}\n"+pods), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("name: p\n"+pods), 0o644); err != nil {
		t.Fatal(err)
	}
	const upstream = "kube-scheduler v1.37.2's plugins"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default", []string{"--scenario", plain}, upstream},
		{"flag true", []string{"--scenario", plain, "--upstream-plugins"}, upstream},
	} {
		out, err := execute(append([]string{"simulate", "--progress", "off", "--no-wall"}, tc.args...)...)
		if err != nil || !strings.Contains(out, "bind 20ms, "+tc.want) {
			t.Errorf("%s: error %v, output %q; want %q", tc.name, err, out, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"flag false", []string{"--scenario", plain, "--upstream-plugins=false"}, "--upstream-plugins=false: schedq's own plugins were removed; the simulator runs kube-scheduler v1.37.2's framework and plugins: configure them with --config"},
		{"scenario schedq", []string{"--scenario", schedqFile}, "scheduler.plugins: schedq's own plugins were removed"},
	} {
		_, err := execute(append([]string{"simulate", "--progress", "off", "--no-wall"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestDeprecatedFlagWarnsOnStderr: the warning for a deprecated flag goes
// to stderr, so that stdout holds only the results (-o json parses).
func TestDeprecatedFlagWarnsOnStderr(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"simulate", []string{"simulate", "--progress=off", "--no-wall", "-o", "json", "--scenario", "EarlyRetry", "--upstream-plugins"}},
		{"scheduler", []string{"scheduler", "--upstream-plugins", "--kube-api-qps", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, _ := executeErr(tc.args...)
			if strings.Contains(out, "deprecated") {
				t.Errorf("stdout has the warning: %q", out)
			}
			if !strings.Contains(stderr, "Flag --upstream-plugins has been deprecated") {
				t.Errorf("stderr %q, want the warning", stderr)
			}
			if tc.name == "simulate" && !json.Valid([]byte(out)) {
				t.Errorf("stdout is not JSON: %q", out)
			}
		})
	}
}

// TestSimulateWindowPastTheRunKeepsTheRest: a --window-start after the
// run's end but before its scenario's (EarlyRetry's default 15m: its run
// ends at 4 s, when nothing is left to do), known only once the run is
// over, fails the report alone:
// the records and the summary are still written.
func TestSimulateWindowPastTheRunKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	report, records := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.csv")
	out, _, err := executeErr("simulate", "--progress=off", "--scenario", "EarlyRetry", "--report", report, "--window-start", "10m", "--records", records)
	if err == nil || !strings.Contains(err.Error(), "--window-start, --window-end: window 10m0s to the run's end: starts after the run's end (4.015s of virtual time)") {
		t.Fatalf("error %v, want the window's", err)
	}
	if !strings.Contains(out, "scenario EarlyRetry") {
		t.Errorf("no summary on stdout: %q", out)
	}
	if st, err := os.Stat(records); err != nil || st.Size() == 0 {
		t.Errorf("records not written: %v", err)
	}
	if _, err := os.Stat(report); err == nil {
		t.Errorf("%s was written", report)
	}
}

// TestSimulateWindowPastTheTraceIsRefusedFirst: a --window-start at or
// after a trace's end, which is known once the trace is read, is refused
// before the run: no summary, no records, no page (a whole trace's
// replay takes most of a minute).
func TestSimulateWindowPastTheTraceIsRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	report, records := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.csv")
	out, _, err := executeErr("simulate", "--progress=off", "--trace", "../../sim/testdata/alibaba", "--report", report, "--window-start", "1000h", "--records", records)
	if err == nil || !strings.Contains(err.Error(), "--window-start 1000h0m0s: at or after the end of the run at ") {
		t.Fatalf("error %v, want the window's", err)
	}
	if out != "" {
		t.Errorf("the run was made before the window was refused: %q", out)
	}
	for _, f := range []string{records, report} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}
