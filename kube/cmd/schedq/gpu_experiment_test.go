package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runSimulate(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(append([]string{"simulate", "--progress=off", "--no-wall"}, args...))
	err := root.Execute()
	return out.String(), err
}

// The experiment on the fixture: every policy reported at every point,
// and the same bytes from the same inputs and seeds, text and JSON.
func TestGPUExperiment(t *testing.T) {
	args := []string{"--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--demand", "1.3", "--seeds", "3", "--seed", "5"}
	out, err := runSimulate(args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 nodes, 3 GPUs; 7 pods listed (typical workload: 6 kinds, 95% of the pods)", "seeds 5..7", "random", "fgd", "130%", "fragmentation / unallocated gpu", "bestfit        seed 7"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	again, _ := runSimulate(args...)
	if again != out {
		t.Fatalf("two runs of the same seeds differ:\n%s\n%s", out, again)
	}
	j1, err := runSimulate(append(args, "-o", "json")...)
	j2, _ := runSimulate(append(args, "-o", "json")...)
	if err != nil || j1 != j2 || !strings.Contains(j1, `"allocationRate"`) {
		t.Fatalf("json: %v, same bytes %v\n%s", err, j1 == j2, j1)
	}
	one, err := runSimulate("--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--gpu-policy", "FGD,bestfit")
	if err != nil || strings.Contains(one, "random") || !strings.Contains(one, "bestfit") {
		t.Fatalf("--gpu-policy FGD,bestfit: %v\n%s", err, one)
	}
}

// --ties order and --gpu-nodes-only reach the experiment and its report:
// the fixture's node without GPUs is left out.
func TestGPUExperimentArtifactSettings(t *testing.T) {
	args := []string{"--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--seeds", "2", "--ties", "order", "--gpu-nodes-only"}
	out, err := runSimulate(args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 nodes (the nodes with GPUs only), 3 GPUs", "ties broken by a seeded order of the nodes, as the artifact does"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	j, err := runSimulate(append(args, "-o", "json")...)
	if err != nil || !strings.Contains(j, `"ties": "order"`) || !strings.Contains(j, `"gpuNodesOnly": true`) {
		t.Fatalf("json: %v\n%s", err, j)
	}
	plain, err := runSimulate("--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--seeds", "2", "-o", "json")
	if err != nil || !strings.Contains(plain, `"ties": "random"`) || !strings.Contains(plain, `"gpuNodesOnly": false`) {
		t.Fatalf("json without the flags: %v\n%s", err, plain)
	}
}

// --point-averaging rounded reaches the experiment and its report; the
// default measures at the first pod reaching each point.
func TestGPUExperimentPointAveraging(t *testing.T) {
	args := []string{"--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--seeds", "2", "--point-averaging", "rounded"}
	out, err := runSimulate(args...)
	if err != nil || !strings.Contains(out, "each point the mean over the pods whose arrived demand rounds to it") {
		t.Fatalf("text: %v\n%s", err, out)
	}
	j, err := runSimulate(append(args, "-o", "json")...)
	if err != nil || !strings.Contains(j, `"averaging": "rounded"`) {
		t.Fatalf("json: %v\n%s", err, j)
	}
	plain, err := runSimulate("--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--seeds", "2", "-o", "json")
	if err != nil || !strings.Contains(plain, `"averaging": "first"`) {
		t.Fatalf("json without the flag: %v\n%s", err, plain)
	}
}

// Bad input is refused before anything runs, naming the flag, the file
// and the line.
func TestGPUExperimentBadInput(t *testing.T) {
	dir := t.TempDir()
	nodes, _ := os.ReadFile("../../sim/testdata/alibaba/openb_node_list_all_node.csv")
	os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), nodes, 0o644)
	os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"a,1000,1024,1,500,T4,LS,Running,0,10,0\nb,1000,1024,1,500,A100|H100,LS,Running,0,10,0\n"), 0o644)
	fixture := "../../sim/testdata/alibaba"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"zero demand", []string{"--trace", fixture, "--gpu-experiment", "--demand", "0"}, "--demand 0: want more than 0"},
		{"negative demand", []string{"--trace", fixture, "--gpu-experiment", "--demand", "-1"}, "--demand -1"},
		{"NaN demand", []string{"--trace", fixture, "--gpu-experiment", "--demand", "NaN"}, "--demand NaN"},
		{"absurd demand", []string{"--trace", fixture, "--gpu-experiment", "--demand", "1e12"}, "--demand 1e+12: want more than 0 and at most 100"},
		{"no seeds", []string{"--trace", fixture, "--gpu-experiment", "--seeds", "0"}, "--seeds 0: want 1 to 1000"},
		{"seeds past the largest seed", []string{"--trace", fixture, "--gpu-experiment", "--seed", "18446744073709551615", "--seeds", "2"}, "--seed 18446744073709551615, --seeds 2: the seeds would go past 18446744073709551615 (give --seed 18446744073709551614 or less)"},
		{"typical share over 1", []string{"--trace", fixture, "--gpu-experiment", "--typical-share", "1.5"}, "--typical-share 1.5: want more than 0 and at most 1"},
		{"unknown policy", []string{"--trace", fixture, "--gpu-experiment", "--gpu-policy", "tetris"}, `--gpu-policy tetris: "tetris" is not a GPU policy`},
		{"a policy twice", []string{"--trace", fixture, "--gpu-experiment", "--gpu-policy", "fgd,bestfit,FGD"}, "--gpu-policy fgd,bestfit,FGD: fgd is named twice"},
		{"an empty name", []string{"--trace", fixture, "--gpu-experiment", "--gpu-policy", "fgd,"}, `--gpu-policy fgd,: "" is not a GPU policy`},
		{"a pod list by absolute path", []string{"--trace", fixture, "--gpu-experiment", "--trace-pods", "/tmp/pods.csv"}, "--trace-pods /tmp/pods.csv: names a file in the trace's directory (" + fixture + "), not an absolute path"},
		{"demand without experiment", []string{"--trace", fixture, "--demand", "2"}, "--demand: only with --gpu-experiment"},
		{"unknown sampling", []string{"--trace", fixture, "--gpu-experiment", "--sampling", "once"}, `--sampling: "once" is not draws or artifact`},
		{"sampling without experiment", []string{"--trace", fixture, "--sampling", "artifact"}, "--sampling: only with --gpu-experiment"},
		{"unknown ties", []string{"--trace", fixture, "--gpu-experiment", "--ties", "first"}, `--ties: "first" is not random or order`},
		{"ties without experiment", []string{"--trace", fixture, "--ties", "order"}, "--ties: only with --gpu-experiment"},
		{"unknown point averaging", []string{"--trace", fixture, "--gpu-experiment", "--point-averaging", "mean"}, `--point-averaging: "mean" is not first or rounded`},
		{"point averaging without experiment", []string{"--trace", fixture, "--point-averaging", "rounded"}, "--point-averaging: only with --gpu-experiment"},
		{"gpu nodes only without experiment", []string{"--trace", fixture, "--gpu-nodes-only"}, "--gpu-nodes-only: only with --gpu-experiment"},
		{"no trace", []string{"--gpu-experiment"}, "--gpu-experiment: needs --trace DIR"},
		{"with records", []string{"--trace", fixture, "--gpu-experiment", "--records", filepath.Join(dir, "r.csv")}, "--gpu-experiment: --records does not apply"},
		{"with a series", []string{"--trace", fixture, "--gpu-experiment", "--series", filepath.Join(dir, "s.csv")}, "--gpu-experiment: --series does not apply"},
		{"with a snapshot", []string{"--trace", fixture, "--gpu-experiment", "--snapshot", filepath.Join(dir, "c.yaml")}, "--gpu-experiment: --snapshot does not apply"},
		{"with a trace speed", []string{"--trace", fixture, "--gpu-experiment", "--trace-speed", "2"}, "--gpu-experiment: --trace-speed does not apply"},
		{"with a trace order", []string{"--trace", fixture, "--gpu-experiment", "--trace-order", "random"}, "--gpu-experiment: --trace-order does not apply"},
		{"with a report", []string{"--trace", fixture, "--gpu-experiment", "--report", filepath.Join(dir, "r.html")}, "--gpu-experiment: --report does not apply"},
		{"with compare", []string{"--trace", fixture, "--gpu-experiment", "--compare", "hints=false"}, "--gpu-experiment: --compare does not apply"},
		{"with a scenario", []string{"--trace", fixture, "--gpu-experiment", "--scenario", "NodeArrival"}, "--gpu-experiment: --scenario does not apply"},
		{"with a config", []string{"--trace", fixture, "--gpu-experiment", "--config", filepath.Join(dir, "c.yaml")}, "--gpu-experiment: --config does not apply"},
		{"with check", []string{"--trace", fixture, "--gpu-experiment", "--check"}, "--gpu-experiment: --check does not apply"},
		{"with a memory limit", []string{"--trace", fixture, "--gpu-experiment", "--memory-limit", "1Gi"}, "--gpu-experiment: --memory-limit does not apply"},
		{"gpu_spec of no model", []string{"--trace", dir, "--gpu-experiment"}, `openb_pod_list_default.csv:3: column gpu_spec: "A100|H100" names no model of a node with GPUs (models: T4, V100M16)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runSimulate(c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if out != "" {
				t.Fatalf("printed a report: %s", out)
			}
		})
	}
}

// --gpu-model and --gpu-policy set the replay's GPU model and policy, and
// --compare can change either.
func TestGPUReplayFlags(t *testing.T) {
	fixture := "../../sim/testdata/alibaba"
	out, err := runSimulate("--trace", fixture, "--gpu-model", "capacity", "--compare", "gpuModel=device")
	if err != nil || !strings.Contains(out, "gpuModel=device") {
		t.Fatalf("--gpu-model capacity --compare gpuModel=device: %v\n%s", err, out)
	}
	if out, err = runSimulate("--trace", fixture, "--gpu-policy", "fgd", "--compare", "gpuPolicy=bestfit"); err != nil {
		t.Fatalf("--gpu-policy fgd --compare gpuPolicy=bestfit: %v\n%s", err, out)
	}
	// default alone names the profile's own scoring, as in a list: the
	// same bytes as no flag.
	plain, err := runSimulate("--trace", fixture, "--no-wall")
	if err != nil {
		t.Fatal(err)
	}
	if out, err = runSimulate("--trace", fixture, "--no-wall", "--gpu-policy", "default"); err != nil || out != plain {
		t.Fatalf("--gpu-policy default: %v\n%s\nwant, as without the flag:\n%s", err, out, plain)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", fixture, "--gpu-policy", "tetris"}, `--gpu-policy: scheduler.gpuPolicy: "tetris" is not a GPU policy`},
		{[]string{"--trace", fixture, "--gpu-model", "cards"}, `--gpu-model: scheduler.gpuModel: "cards" is not device, capacity or dra`},
		{[]string{"--gpu-policy", "fgd"}, "--gpu-policy: there is no trace"},
		{[]string{"--gpu-model", "device", "--gpu-policy", "fgd"}, "--gpu-model, --gpu-policy: there is no trace"},
		{[]string{"--trace", fixture, "--gpu-experiment", "--gpu-model", "capacity"}, "--gpu-model: the experiment always models GPUs one by one"},
	} {
		if _, err := runSimulate(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// A pod list without any GPU pod can never reach the demand: refused
// before the runs start.
func TestGPUExperimentNoGPUPods(t *testing.T) {
	dir := t.TempDir()
	nodes, _ := os.ReadFile("../../sim/testdata/alibaba/openb_node_list_all_node.csv")
	os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), nodes, 0o644)
	os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,0,0\n"), 0o644)
	_, err := runSimulate("--trace", dir, "--gpu-experiment")
	if err == nil || !strings.Contains(err.Error(), "gpu experiment: no pod of the list asks for a GPU") {
		t.Fatalf("error %v", err)
	}
}
