package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputsShareNoNames: a node or pod of a snapshot or a trace that has
// the name of one the scenario makes (NAME-i), or of one of the other
// input, is refused before the run, naming both; so is a group named as
// the group the simulator files a trace's or a snapshot's objects under.
func TestInputsShareNoNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	node := func(name string) string {
		return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n"
	}
	pod := func(meta string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: " + meta + "\nspec: {containers: [{name: c, image: x}]}\n"
	}
	podSnap := write("pods.yaml", node("n1")+"---\n"+pod("{name: web-1}"))
	nodeSnap := write("nodes.yaml", node("late-0")+"---\n"+pod("{name: lone}"))
	twice := write("twice.yaml", node("n1")+"---\n"+pod("{name: p}")+"---\n"+pod("{name: p, namespace: default}"))
	classSnap := write("class.yaml", node("n1")+"---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: a\n")
	traceSnap := write("trace-pod.yaml", node("n1")+"---\n"+pod("{name: pod-cpu}"))
	nodes, _ := os.ReadFile("testdata/alibaba/openb_node_list_all_node.csv")
	pods, _ := os.ReadFile("testdata/alibaba/openb_pod_list_default.csv")
	write("tr/openb_node_list_all_node.csv", string(nodes)+"late-0,1000,1024,0,\n")
	write("tr/openb_pod_list_default.csv", string(pods)+"job-0,1000,1024,0,0,,LS,Running,0,10,0\n")
	tr := filepath.Join(dir, "tr")
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"a scenario pod in the snapshot", "name: x\nsnapshot: " + podSnap + "\npods: [{name: web, count: 3}]\n",
			"snapshot " + podSnap + ": pod default/web-1 is also the scenario's (pod group web)"},
		{"an added node in the snapshot", "name: x\nsnapshot: " + nodeSnap + "\npods: []\nevents: [{at: 1m, addNodes: {name: late, count: 1}}]\n",
			"snapshot " + nodeSnap + ": node late-0 is also the scenario's (node group late)"},
		{"a pod twice, once without namespace", "name: x\nsnapshot: " + twice + "\n", "snapshot " + twice + ": pod default/p appears twice"},
		{"an added node in the trace", "name: x\ntrace: {format: alibaba-gpu-v2023, dir: " + tr + "}\nevents: [{at: 1m, addNodes: {name: late, count: 1}}]\n",
			"trace alibaba-gpu-v2023: node late-0 is also the scenario's (node group late)"},
		{"a scenario pod in the trace", "name: x\ntrace: {format: alibaba-gpu-v2023, dir: testdata/alibaba}\npods: [{name: pod-cpu, count: 1}]\n",
			"", // pod-cpu-0 is not pod-cpu: no clash
		},
		{"a trace pod of the scenario's name", "name: x\ntrace: {format: alibaba-gpu-v2023, dir: " + tr + "}\npods: [{name: job, count: 2}]\n",
			"openb_pod_list_default.csv:9: pod default/job-0 is also the scenario's (pod group job)"},
		{"a snapshot object in the scenario's objects", "name: x\nsnapshot: " + classSnap + "\nobjects: [{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast}, provisioner: b}]\n",
			"snapshot " + classSnap + ": StorageClass fast is also in the scenario's objects"},
		{"a trace pod in the snapshot", "name: x\nsnapshot: " + traceSnap + "\ntrace: {format: alibaba-gpu-v2023, dir: testdata/alibaba}\n",
			"openb_pod_list_default.csv:2: pod default/pod-cpu is also the snapshot's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Parse([]byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(sc, Options{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"a pod group named trace", "name: x\ntrace: {format: alibaba-gpu-v2023, dir: d}\npods: [{name: trace, count: 1}]\n", `pods[0].name: "trace" names the trace's pods`},
		{"an added node group named snapshot", "name: x\nsnapshot: s.yaml\nevents: [{at: 1s, addNodes: {name: snapshot, count: 1}}]\n", `events[0].addNodes.name: "snapshot" names the snapshot's nodes`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
