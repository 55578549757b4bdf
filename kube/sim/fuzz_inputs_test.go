package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets of this file feed the simulator's readers of user
// input with mutated files: scenarios (FuzzScenario), snapshots
// (FuzzSnapshot), Alibaba trace lists (FuzzAlibabaTrace) and what-if
// manifests (FuzzWhatIf). Each reader must never panic or hang, and must
// either refuse its input with an error or give a value that its own
// validation accepts and that the simulator can build from. The seeds are
// the repository's own files and a few bad ones; they run under plain go
// test. Fuzz one with, for example,
// go test -run XXX -fuzz FuzzSnapshot -fuzztime 3m -fuzzminimizetime 100x ./kube/sim
// (without -fuzzminimizetime, minimizing each new input for up to a
// minute, a build of the simulator a run, takes the whole time on the
// large seeds).

// maxFuzzInput bounds an input of the fuzz targets: the readers' own
// limits are far larger, and the fuzzer's inputs stay far smaller.
const maxFuzzInput = 64 << 10

// readSeed reads a file of the repository for a seed corpus.
func readSeed(f *testing.F, path string) []byte {
	f.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// writeInput writes data to a file named name in a new directory of t.
func writeInput(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildSmall builds the simulator for sc and closes it, if sc is small
// enough to build quickly; it returns newSim's error.
func buildSmall(sc *Scenario) error {
	s, err := newSim(sc, Options{})
	if err != nil {
		return err
	}
	s.close()
	return nil
}

// FuzzScenario: Parse refuses a scenario with an error, or gives one that
// Validate accepts again and, if it is small, that the simulator builds
// without a panic.
func FuzzScenario(f *testing.F) {
	for _, name := range Builtins() {
		f.Add(readSeed(f, "scenarios/"+name+".yaml"))
	}
	for _, seed := range []string{
		"",
		"# only a comment\n",
		"name: x\npods: [{name: a, count: 1}]\n",
		"name: x\npods: [{name: a, count: 2000000000}]\n",
		"name: x\nnodes: [{name: n, count: 1, capacity: {cpu: lots}}]\npods: [{name: a, count: 1}]\n",
		"name: x\npods: [{name: a, count: 1}]\n---\nname: y\n",
		"name: x\npods: [{name: a, count: 1, requests: {cpu: \"-1\"}}]\nduration: -1s\n",
		"name: x\nsnapshot: testdata/snapshot/cluster.yaml\n",
		"name: x\ntrace: {format: alibaba-gpu-v2023, dir: testdata/alibaba}\n",
		"name: [\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		sc, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("Parse accepted a scenario that Validate refuses: %v", err)
		}
		if sc.Snapshot != "" || sc.Trace != nil || scenarioSize(sc) > 200 {
			return // FuzzSnapshot and FuzzAlibabaTrace build those
		}
		_ = buildSmall(sc) // an error is fine; a panic fails
	})
}

// scenarioSize counts the nodes and pods a scenario asks for.
func scenarioSize(sc *Scenario) int {
	n := 0
	for _, g := range sc.Nodes {
		n += g.Count
	}
	for _, g := range sc.Pods {
		n += g.Count
	}
	for _, e := range sc.Events {
		if e.AddNodes != nil {
			n += e.AddNodes.Count
		}
	}
	return n
}

// FuzzSnapshot: a snapshot file is refused with an error that names it,
// or loaded into the simulator, never a panic.
func FuzzSnapshot(f *testing.F) {
	for _, path := range []string{"testdata/snapshot/cluster.yaml", "testdata/snapshot/dra.yaml",
		"testdata/snapshot/dir/nodes.yaml", "testdata/snapshot/dir/pods.yaml"} {
		f.Add(readSeed(f, path))
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", pods: \"10\"}}\n"
	for _, seed := range []string{
		"",
		"# nothing\n",
		node,
		node + "---\n" + node,
		node + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: \"-8\"}}}]}\n",
		node + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}}\n",
		"apiVersion: v1\nkind: NodeList\nitems:\n- {metadata: {name: n2}}\n",
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"j"}}`,
		"apiVersion: v1\nkind: [\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		path := writeInput(t, "snapshot.yaml", data)
		err := buildSmall(snapshotScenario(path))
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("the error does not name the file %s: %v", path, err)
		}
	})
}

// FuzzAlibabaTrace: a trace's node and pod lists are refused with an
// error, or loaded into the simulator on the GPU model that model picks
// (capacity, device or DRA), never a panic.
func FuzzAlibabaTrace(f *testing.F) {
	nodes := readSeed(f, "testdata/alibaba/openb_node_list_all_node.csv")
	pods := readSeed(f, "testdata/alibaba/openb_pod_list_default.csv")
	short := "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-0,1000,1024,1,500\np-1,2000,2048,2,1000\n"
	f.Add(nodes, pods, uint8(0))
	f.Add(nodes, pods, uint8(1))
	f.Add(nodes, pods, uint8(2))
	f.Add(nodes, []byte(short), uint8(1))
	f.Add(nodes, []byte(short), uint8(2))
	f.Add([]byte("\ufeff"+string(nodes)), []byte(short), uint8(0))
	f.Add([]byte("sn,cpu_milli,memory_mib,gpu,model\n"), pods, uint8(0))
	f.Add(nodes, []byte("name,cpu_milli\n"), uint8(0))
	f.Add(nodes, []byte(short+"p-0,1,1,0,0\n"), uint8(0))
	f.Add(nodes, []byte(short+"\"p-2,1,1,0,0\n"), uint8(0))
	models := []string{GPUModelCapacity, GPUModelDevice, GPUModelDRA}
	f.Fuzz(func(t *testing.T, nodes, pods []byte, model uint8) {
		if len(nodes)+len(pods) > maxFuzzInput {
			return
		}
		dir := t.TempDir()
		for name, data := range map[string][]byte{"openb_node_list_all_node.csv": nodes, "openb_pod_list_default.csv": pods} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		sc := &Scenario{Name: "trace", Seed: 1, Trace: &TraceSpec{Format: TraceAlibabaGPU, Dir: dir},
			Scheduler: SchedulerSpec{GPUModel: models[int(model)%len(models)]}}
		if err := sc.Validate(); err != nil {
			t.Fatal(err)
		}
		err := buildSmall(sc)
		if err != nil && !strings.Contains(err.Error(), "trace") {
			t.Fatalf("the error does not say it is the trace's: %v", err)
		}
	})
}

// FuzzWhatIf: what-if manifests are refused with an error, or give pods
// and PodGroups within the limits that Validate and check either refuse
// with an error or accept, never a panic.
func FuzzWhatIf(f *testing.F) {
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: app, image: x, resources: {requests: {cpu: \"1\"}}}]\n"
	group := "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingPolicy: {gang: {minCount: 2}}}\n"
	member := "apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec: {schedulingGroup: {podGroupName: g}, containers: [{name: app, image: x}]}\n"
	for _, seed := range []string{
		pod,
		group + "---\n" + member,
		"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(pod, "\n", "\n  "),
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","annotations":{"schedq.io/runtime":"10m"}},"spec":{"containers":[{"name":"c","image":"x"}]}}`,
		pod + "---\n" + pod,
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {nodeName: n, containers: [{name: c, image: x}]}\n",
		"",
		"kind: [\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		in, err := ParseWhatIf(data)
		if err != nil {
			return
		}
		if n := len(in.Pods) + len(in.PodGroups); n == 0 || n > MaxWhatIfObjects {
			t.Fatalf("%d objects accepted, want 1 to %d", n, MaxWhatIfObjects)
		}
		if in.Validate() != nil {
			return
		}
		_ = in.check(whatIfState(), nil)
	})
}
