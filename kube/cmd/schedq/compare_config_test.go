package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareAgainstConfigFile: a --compare setting that the --config
// file gives another value is refused, naming --compare, the file and its
// field, since the run would take the file's and the two runs would be
// the same; one the file agrees with, or that a compared file of its own
// leaves free, runs.
func TestCompareAgainstConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	scenario := write("tiny.yaml", "name: tiny\nseed: 1\nnodes:\n- {name: n, count: 1, capacity: {cpu: \"4\", memory: 8Gi}}\n"+
		"pods:\n- {name: p, namespace: a, count: 2, requests: {cpu: \"1\", memory: 1Gi}}\n")
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	cfg := write("fair.yaml", head+"percentageOfNodesToScore: 50\nprofiles:\n- pluginConfig:\n  - name: Schedq\n    args: {wakeBudget: false, fairness: {namespaces: true}}\n")
	plain := write("plain.yaml", head+"profiles:\n- schedulerName: default-scheduler\n")
	const at = "profiles[0].pluginConfig[0].args"
	for _, tc := range []struct {
		name, compare, want string // want "": it runs
	}{
		{"fairness off under the file's", "fairness=false",
			"--compare fairness=false: fairness=false: scheduler.config " + cfg + " sets " + at + ".fairness.namespaces true, and the file decides"},
		{"percentage 0 under the file's", "hints=false,percentageOfNodesToScore=0",
			"percentageOfNodesToScore=0: scheduler.config " + cfg + " sets percentageOfNodesToScore 50"},
		{"two the file decides, both named in order", "percentageOfNodesToScore=0,fairness=false",
			"percentageOfNodesToScore=0: scheduler.config " + cfg + " sets percentageOfNodesToScore 50, and the file decides: compare two files with config=FILE instead\n" +
				"--compare percentageOfNodesToScore=0,fairness=false: fairness=false: scheduler.config " + cfg + " sets " + at + ".fairness.namespaces true"},
		{"wake budget the file contradicts, as --compare's", "wakeBudget=true",
			"--compare wakeBudget=true: queue.wakeBudget: true, but scheduler.config " + cfg + " sets " + at + ".wakeBudget false"},
		{"the file's own value", "fairness=true,hints=false", ""},
		{"another file of its own", "config=" + plain + ",fairness=false", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runSimulate("--scenario", scenario, "--config", cfg, "--compare", tc.compare)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%v\n%s", err, out)
			case tc.want == "" && !strings.Contains(out, "baseline"):
				t.Fatalf("no comparison:\n%s", out)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// writer returns a function that writes text to the file name in dir
// and returns its path, failing t if it cannot.
func writer(t *testing.T, dir string) func(name, text string) string {
	return func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
}
