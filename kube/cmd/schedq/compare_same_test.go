package main

import (
	"strings"
	"testing"
)

// TestCompareSameAsBaseline: a --compare whose settings the baseline has
// already (its defaults, the scenario's own values, the --config file
// once more, the seed it runs with) is refused before any run, naming
// it, since the two runs would be the same; one setting that differs
// runs.
func TestCompareSameAsBaseline(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	const body = "nodes:\n- {name: n, count: 1, capacity: {cpu: \"4\", memory: 8Gi}}\n" +
		"pods:\n- {name: p, namespace: a, count: 2, requests: {cpu: \"1\", memory: 1Gi}}\n"
	plain := write("plain.yaml", "name: plain\nseed: 3\n"+body)
	hinted := write("hinted.yaml", "name: hinted\nseed: 1\nqueue: {queueingHints: true, maxBackoff: 0s}\n"+body)
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	cfg := write("cfg.yaml", head+"percentageOfNodesToScore: 50\n")
	same := write("same.yaml", head+"percentageOfNodesToScore: 50\n")
	other := write("other.yaml", head+"percentageOfNodesToScore: 70\n")
	for _, tc := range []struct {
		name    string
		args    []string
		refused bool
	}{
		{"hints true, the default", []string{"--scenario", plain, "--compare", "hints=true"}, true},
		{"hints true, the scenario's own", []string{"--scenario", hinted, "--compare", "queueingHints=true"}, true},
		{"defaults spelled out", []string{"--scenario", plain, "--compare", "wakeBudget=true,initialBackoff=1s,maxBackoff=10s,gangs=true,plugins=upstream"}, true},
		{"backoff off either way", []string{"--scenario", hinted, "--compare", "disableBackoff=true"}, true},
		{"the seed it runs with", []string{"--scenario", plain, "--compare", "seed=3"}, true},
		{"the seed --seed gives", []string{"--scenario", plain, "--seed", "9", "--compare", "seed=9"}, true},
		{"config naming --config's file", []string{"--scenario", plain, "--config", cfg, "--compare", "config=" + cfg}, true},
		{"config, a copy of --config's file", []string{"--scenario", plain, "--config", cfg, "--compare", "config=" + same}, true},
		{"hints false", []string{"--scenario", plain, "--compare", "hints=false"}, false},
		{"one default, one change", []string{"--scenario", plain, "--compare", "hints=true,wakeBudget=false"}, false},
		{"another seed", []string{"--scenario", plain, "--compare", "seed=4"}, false},
		{"another file", []string{"--scenario", plain, "--config", cfg, "--compare", "config=" + other}, false},
		{"a file where there was none", []string{"--scenario", plain, "--compare", "config=" + cfg}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runSimulate(tc.args...)
			compare := tc.args[len(tc.args)-1]
			switch {
			case tc.refused && err == nil:
				t.Fatalf("ran both:\n%s", out)
			case tc.refused && !strings.Contains(err.Error(), "--compare "+compare+": ") || tc.refused && !strings.Contains(err.Error(), "the same as the baseline"):
				t.Fatalf("error %q does not name --compare %s and say it is the baseline", err, compare)
			case tc.refused && out != "":
				t.Fatalf("refused after a run:\n%s", out)
			case !tc.refused && err != nil:
				t.Fatalf("%v\n%s", err, out)
			case !tc.refused && !strings.Contains(out, "baseline"):
				t.Fatalf("no comparison:\n%s", out)
			}
		})
	}
}
