package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyTrace is two nodes of two T4s: two half shares arrive, then a pod
// of two whole GPUs that waits at most 500 s. Packing the shares on one
// GPU leaves a node idle for it; spreading them (the default scoring's
// least allocated CPU and memory) leaves no node with two free GPUs until
// the shares end at 1000 s, so it is never placed.
func policyTrace(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,16000,65536,2,T4\nn2,16000,65536,2,T4\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"s1,1000,1024,1,500,,LS,Running,0,1000,0\ns2,1000,1024,1,500,,LS,Running,1,1000,1\nw,1000,1024,2,1000,,LS,Running,2,500,2\n"), 0o644)
	return dir
}

// --gpu-policy all replays the trace once per policy and prints one
// table; the same seed prints the same bytes, text and JSON.
func TestGPUPolicyTable(t *testing.T) {
	args := []string{"--trace", policyTrace(t), "--gpu-policy", "all", "--seed", "3"}
	out, err := runSimulate(args...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "policy") || !strings.HasPrefix(lines[1], "default") || !strings.HasPrefix(lines[7], "fgd") {
		t.Fatalf("want a header and 7 rows, default first and fgd last:\n%s", out)
	}
	if again, _ := runSimulate(args...); again != out {
		t.Fatalf("two runs of one seed differ:\n%s\n%s", out, again)
	}
	j1, err := runSimulate(append(args, "-o", "json")...)
	j2, _ := runSimulate(append(args, "-o", "json")...)
	if err != nil || j1 != j2 {
		t.Fatalf("json: %v, same bytes %v", err, j1 == j2)
	}
	var table struct {
		Policies []struct {
			Policy    string  `json:"policy"`
			Never     int     `json:"neverPlaced"`
			Scheduled int     `json:"scheduled"`
			GPUHours  float64 `json:"gpuHours"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(j1), &table); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range table.Policies {
		got[p.Policy] = p.Never
	}
	if len(table.Policies) != 7 || got["default"] != 1 || got["bestfit"] != 0 || got["gpupacking"] != 0 {
		t.Fatalf("never placed by policy %v, want the default scoring to leave the 2-GPU pod out and bestfit and gpupacking to place it", got)
	}
	// The shares hold 0.5 GPU each for about 1000 s; the 2-GPU pod, when
	// placed, 2 GPUs for 498 s.
	for _, p := range table.Policies {
		want := 1000.0 / 3600
		if p.Never == 0 {
			want += 2 * 498.0 / 3600
		}
		if p.GPUHours < want-0.01 || p.GPUHours > want+0.01 {
			t.Errorf("%s: %.4f GPU-hours, want about %.4f", p.Policy, p.GPUHours, want)
		}
	}
	two, err := runSimulate("--trace", policyTrace(t), "--gpu-policy", "FGD,default")
	if err != nil || !strings.Contains(two, "\nfgd ") || !strings.Contains(two, "\ndefault ") || strings.Contains(two, "bestfit") {
		t.Fatalf("--gpu-policy FGD,default: %v\n%s", err, two)
	}
}

// With --gpu-model dra the table is DRA's: the default scoring spreads the
// shares and leaves the 2-GPU pod out, and GpuPacking and BestFit, which
// score from DRA's allocations, pack them and place it.
func TestGPUPolicyTableOnDRA(t *testing.T) {
	out, err := runSimulate("--trace", policyTrace(t), "--gpu-model", "dra", "--gpu-policy", "default,gpupacking,bestfit", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Policies []struct {
			Policy string `json:"policy"`
			Never  int    `json:"neverPlaced"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(out), &table); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range table.Policies {
		got[p.Policy] = p.Never
	}
	if len(got) != 3 || got["default"] != 1 || got["gpupacking"] != 0 || got["bestfit"] != 0 {
		t.Fatalf("never placed by policy %v, want 1 for default and 0 for gpupacking and bestfit", got)
	}
}

// A per-policy replay refuses, before anything runs, what it cannot do.
func TestGPUPolicyTableBadInput(t *testing.T) {
	dir := policyTrace(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", dir, "--gpu-policy", "fgd,nope"}, `--gpu-policy fgd,nope: "nope" is not a GPU policy`},
		{[]string{"--trace", dir, "--gpu-policy", "fgd,all"}, `"all" is not a GPU policy`},
		{[]string{"--trace", dir, "--gpu-policy", "bestfit,BestFit"}, "bestfit is named twice"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--compare", "hints=false"}, "--gpu-policy all: not with --compare"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--series", filepath.Join(dir, "s.csv")}, "not with --series"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--report", filepath.Join(dir, "r.html")}, "not with --report"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--records", filepath.Join(dir, "r.csv")}, "not with --records"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--gpu-model", "capacity"}, "the policies need --gpu-model device or dra, not capacity"},
		{[]string{"--gpu-policy", "all"}, "needs --trace DIR"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--config", "../../sim/testdata/gpu-policy-fgd.yaml"}, "--gpu-policy all: scheduler.config (--config) ../../sim/testdata/gpu-policy-fgd.yaml sets GPUDevices' policy FGD"},
		{[]string{"--trace", dir, "--gpu-policy", "default,fgd", "--config", "../../sim/testdata/gpu-policy-fgd.yaml"}, "--gpu-policy default,fgd: scheduler.config (--config) ../../sim/testdata/gpu-policy-fgd.yaml sets GPUDevices' policy FGD: each replay of a list sets its own (default: none)"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "--trace-speed", "0"}, "--trace-speed"},
		{[]string{"--trace", dir, "--gpu-policy", "all", "-o", "yaml"}, "--output"},
	} {
		out, err := runSimulate(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		if out != "" {
			t.Errorf("%v: printed %q before refusing", c.args, out)
		}
	}
}
