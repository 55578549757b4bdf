package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateInputsAndOutputs: --trace, --snapshot, --records and
// --series from the command line, alone and with --compare.
func TestSimulateInputsAndOutputs(t *testing.T) {
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs(append([]string{"simulate", "--progress=off", "--no-wall"}, args...))
		err := root.Execute()
		return out.String(), err
	}
	dir := t.TempDir()
	recs, series := filepath.Join(dir, "r.csv"), filepath.Join(dir, "s.csv")
	out, err := run("--trace", "../../sim/testdata/alibaba", "--records", recs, "--series", series)
	if err != nil || !strings.Contains(out, "trace alibaba-gpu-v2023") || !strings.Contains(out, "scheduled                6          6") {
		t.Fatalf("--trace: %v\n%s", err, out)
	}
	for _, f := range []string{recs, series} {
		if b, err := os.ReadFile(f); err != nil || len(bytes.Split(b, []byte("\n"))) < 3 {
			t.Fatalf("%s: %v, %d bytes", f, err, len(b))
		}
	}
	out, err = run("--trace", "../../sim/testdata/alibaba", "--compare", "hints=false", "--records", recs, "--series", series)
	if err != nil || !strings.Contains(out, "hints=false") {
		t.Fatalf("--trace --compare: %v\n%s", err, out)
	}
	for _, f := range []string{"r.compare.csv", "s.compare.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("--compare wrote no %s: %v", f, err)
		}
	}
	out, err = run("--snapshot", "../../sim/testdata/snapshot/cluster.yaml", "--scenario", "PriorityPressure")
	if err != nil || !strings.Contains(out, "snapshot         ../../sim/testdata/snapshot/cluster.yaml: 2 nodes") || !strings.Contains(out, "of 401") {
		t.Fatalf("--snapshot with a scenario: %v\n%s", err, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", dir}, "openb_node_list_all_node.csv: no such file"},
		{[]string{"--snapshot", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{[]string{"--trace", "../../sim/testdata/alibaba", "--records", "/no/such/dir/r.csv"}, "--records /no/such/dir/r.csv: directory /no/such/dir does not exist"},
		{[]string{"--trace", "../../sim/testdata/alibaba", "--records", filepath.Join(dir, "r.txt")}, "must end in .jsonl, .json or .csv"},
	} {
		if _, err := run(bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.args, err, bad.want)
		}
	}
}
