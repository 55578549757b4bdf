package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadScenarios: a malformed or invalid scenario is an error that names
// the file, the field and the problem.
func TestBadScenarios(t *testing.T) {
	valid := "name: x\npods: [{name: p, count: 1}]\n"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"negative count", "name: x\npods: [{name: p, count: -3}]\n", []string{"pods[0].count: must not be negative, got -3"}},
		{"unknown field", valid + "nodez: []\n", []string{"nodez: unknown field (fields here: name, description, seed, duration, scheduler, queue, nodes, pods, events, trace, snapshot, objects)"}},
		{"cordoned is unschedulable", "name: x\nnodes: [{name: n, count: 1, cordoned: true}]\npods: [{name: p, count: 1}]\n",
			[]string{"nodes[0].cordoned: unknown field (fields here: name, count, capacity, labels, zones, taints, unschedulable); did you mean unschedulable?"}},
		{"unknown field deep down", valid + "events: [{at: 1s, taintNodes: {group: g, taint: {key: k, efect: NoSchedule}}}]\n",
			[]string{"events[0].taintNodes.taint.efect: unknown field (fields here: key, value, effect)"}},
		{"anti-affinity path", "name: x\npods: [{name: p, count: 1, affinity: [{topologyKey: zone}], antiAffinity: [{matchLabels: {a: b}}]}]\n",
			[]string{"pods[0].antiAffinity[0].topologyKey: must not be empty"}},
		{"second affinity term", "name: x\npods: [{name: p, count: 1, affinity: [{topologyKey: zone}, {matchLabels: {a: b}}]}]\n",
			[]string{"pods[0].affinity[1].topologyKey: must not be empty"}},
		{"not a number", "name: x\npods: [{name: p, count: many}]\n", []string{`pods[0].count: "many" is not a whole number`}},
		{"not a duration", valid + "queue: {maxBackoff: soon}\n", []string{`queue.maxBackoff: "soon" is not a duration such as 500ms, 30s or 10m`}},
		{"not a bool", valid + "queue: {popFromBackoff: maybe}\n", []string{`queue.popFromBackoff: "maybe" is not true or false`}},
		{"priority out of range", "name: x\npods: [{name: p, count: 1, priority: 99999999999}]\n", []string{"pods[0].priority: 99999999999 is out of range (-2147483648 to 2147483647)"}},
		{"seed out of range", valid + "seed: -1\n", []string{"seed: -1 is out of range (0 to 18446744073709551615)"}},
		{"count not a number", "name: x\npods: [{name: p, count: many}]\n", []string{`pods[0].count: "many" is not a whole number`}},
		{"a map for a list", "name: x\npods: {name: p, count: 1}\n", []string{"pods: must be a list, got a map"}},
		{"a list for the scenario", "- name: x\n", []string{"the scenario: must be a map of fields (name, description,"}},
		{"empty file", "", []string{"the file is empty; a scenario needs at least a name and a pods list"}},
		{"comments only", "# a scenario, some day\n", []string{"the file is empty"}},
		{"backoff bounds", valid + "queue: {initialBackoff: 20s, maxBackoff: 10s}\n", []string{"queue.initialBackoff: 20s is more than queue.maxBackoff (10s)"}},
		{"backoff above the default max", valid + "queue: {initialBackoff: 20s}\n", []string{"queue.initialBackoff: 20s is more than queue.maxBackoff (10s, its default)"}},
		{"huge count", "name: x\npods: [{name: p, count: 2000000000}]\n", []string{"pods[0].count: 2000000000 is more than the 1000000 pods a scenario may have"}},
		{"huge total", "name: x\npods: [{name: p, count: 600000}, {name: q, count: 600000}]\n", []string{"pods: 1200000 pods in all, more than the 1000000"}},
		{"huge node total", "name: x\nnodes: [{name: n, count: 600000}]\npods: [{name: p, count: 1}]\nevents: [{at: 1s, addNodes: {name: m, count: 600000}}]\n",
			[]string{"nodes: 1200000 nodes in all (node groups and addNodes events)"}},
		{"count 0 selects nothing", valid + "events: [{at: 1s, deletePods: {group: p, count: 0}}]\n", []string{"events[0].deletePods.count: 0 selects nothing; leave count out to select the whole group"}},
		{"count 0 in a taint change", "name: x\nnodes: [{name: n, count: 1}]\npods: [{name: p, count: 1}]\nevents: [{at: 1s, taintNodes: {group: n, count: 0, taint: {key: k}}}]\n",
			[]string{"events[0].taintNodes.count: 0 selects nothing"}},
		{"malformed", "name: [x\n", []string{"line"}},
		{"disablePlugins", valid + "scheduler: {disablePlugins: [NodePorts]}\n", []string{"scheduler.disablePlugins: was removed"}},
		{"bad quantity", "name: x\npods: [{name: p, count: 1, requests: {cpu: lots}}]\n", []string{`pods[0].requests: cpu: "lots" is not a quantity`}},
		{"negative duration", valid + "queue: {maxBackoff: -1s}\n", []string{"queue.maxBackoff: must not be negative"}},
		{"two actions", valid + "events: [{at: 1s, deletePods: {group: p}, removeGates: {group: p}}]\n", []string{"events[0]: needs exactly one of"}},
		{"unknown group", valid + "events: [{at: 1s, removeNodes: {group: ghosts}}]\n", []string{`events[0].removeNodes.group: unknown node group "ghosts"`}},
		{"scoring", valid + "scheduler: {scoring: fastest}\n", []string{"scheduler.scoring: was removed"}},
		{"bad taint effect", "name: x\nnodes: [{name: n, count: 1, taints: [{key: k, effect: Sometimes}]}]\npods: [{name: p, count: 1}]\n", []string{`nodes[0].taints[0].effect: "Sometimes"`}},
		{"no pods", "name: x\n", []string{"pods: a scenario needs at least one pod group"}},
		{"bad quantities name the first by name", "name: x\nnodes: [{name: n, count: 1, capacity: {pods: z, memory: 4y, cpu: 4x, gpu: q}}]\npods: [{name: p, count: 1}]\n",
			[]string{`nodes[0].capacity: cpu: "4x" is not a quantity`}},
		{"nodes removed before they are added", "name: x\nnodes: [{name: n, count: 1}]\npods: [{name: p, count: 1}]\nevents:\n- {at: 10s, addNodes: {name: late, count: 2}}\n- {at: 5s, removeNodes: {group: late}}\n",
			[]string{`events[1].removeNodes.group: node group "late" is added at 10s (events[0]), after this event at 5s`}},
		{"tainted in the instant before they are added", "name: x\npods: [{name: p, count: 1}]\nevents:\n- {at: 10s, taintNodes: {group: late, taint: {key: k}}}\n- {at: 10s, addNodes: {name: late, count: 2}}\n",
			[]string{`events[0].taintNodes.group: node group "late" is added at 10s (events[1]), after this event at 10s`}},
		{"negative grace period", valid + "scheduler: {preemption: {gracePeriod: -5s}}\n", []string{"scheduler.preemption.gracePeriod: must not be negative, got -5s"}},
		{"two grace periods", valid + "scheduler: {preemption: {gracePeriod: 5s, podGracePeriods: true}}\n", []string{"scheduler.preemption.podGracePeriods: true beside gracePeriod 5s"}},
		{"selector value not a label value", "name: x\npods: [{name: p, count: 1, antiAffinity: [{matchLabels: {group: \"x y\"}, topologyKey: zone}]}]\n",
			[]string{`pods[0].antiAffinity[0].matchLabels.group: "x y" is not a valid label value`}},
		{"spread selector operator", "name: x\npods: [{name: p, count: 1, topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: a, operator: Bogus}]}}]}]\n",
			[]string{`pods[0].topologySpreadConstraints[0].labelSelector: "Bogus" is not a valid label selector operator`}},
		{"node affinity operator", "name: x\npods: [{name: p, count: 1, nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Bogus, values: [x]}]}]}}}]\n",
			[]string{`pods[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Bogus"`}},
		{"preferred node affinity value", "name: x\npods: [{name: p, count: 1, nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: a, operator: In, values: [\"x y\"]}]}}]}}]\n",
			[]string{`pods[0].nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: `, `"x y"`}},
		{"label key not a label key", "name: x\nnodes: [{name: n, count: 1, labels: {\"disk type\": ssd}}]\npods: [{name: p, count: 1}]\n",
			[]string{`nodes[0].labels: "disk type" is not a valid label key`}},
		{"namespace not a namespace", "name: x\npods: [{name: p, namespace: Team_A, count: 1}]\n", []string{`pods[0].namespace: "Team_A" is not a valid namespace`}},
		{"pod group name not a name", "name: x\npods: [{name: Web Pods, count: 2}]\n", []string{`pods[0].name: "Web Pods" is not valid as the pods' group label and in their names (such as "Web Pods-1")`}},
		{"node group name too long for a hostname", "name: x\nnodes: [{name: " + strings.Repeat("n", 62) + ", count: 10}]\npods: [{name: p, count: 1}]\n",
			[]string{`nodes[0].name: "` + strings.Repeat("n", 62) + `" makes node names such as "` + strings.Repeat("n", 62) + `-9", which are not valid: must be no more than 63`}},
		{"pods after the end", "name: x\npods: [{name: p, count: 1}, {name: q, count: 3, arrival: {at: 20m}}]\n",
			[]string{"pods[1].arrival.at: 20m0s is after the run's end (duration 15m0s, the default): the group's pods would never arrive"}},
		{"event after the end", "name: x\nduration: 1m\nnodes: [{name: n, count: 1}]\npods: [{name: p, count: 1}]\nevents: [{at: 30m, removeNodes: {group: n}}]\n",
			[]string{"events[0].at: 30m0s is after the run's end (duration 1m0s): the event would never happen"}},
		{"two documents", valid + "---\nname: y\npods: [{name: q, count: 5}]\n", []string{"line 4: a second YAML document (after ---); a scenario file holds one scenario"}},
		{"toleration effect", "name: x\npods: [{name: p, count: 1, tolerations: [{key: k, operator: Exists, effect: NoSchedul}]}]\n",
			[]string{`pods[0].tolerations[0].effect: "NoSchedul" is not NoSchedule, PreferNoSchedule or NoExecute`}},
		{"toleration value with Exists", "name: x\npods: [{name: p, count: 1, tolerations: [{key: k, operator: Exists, value: gpu}]}]\n",
			[]string{`pods[0].tolerations[0].value: must be empty with operator Exists, got "gpu"`}},
		{"taint key", "name: x\nnodes: [{name: n, count: 1, taints: [{key: \"gpu only\"}]}]\npods: [{name: p, count: 1}]\n",
			[]string{`nodes[0].taints[0].key: "gpu only" is not a valid taint key`}},
		{"duplicate object", valid + "objects:\n- {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast}, provisioner: a}\n- {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast}, provisioner: b}\n",
			[]string{"objects[1]: StorageClass fast is also objects[0]"}},
		{"rate not a number", "name: x\npods: [{name: p, count: 3, arrival: {rate: .nan}}]\n", []string{"pods[0].arrival.rate: must be a number of pods per second, got NaN"}},
		{"rate infinite", "name: x\npods: [{name: p, count: 3, arrival: {rate: .inf}}]\n", []string{"pods[0].arrival.rate: must be a number of pods per second, got +Inf"}},
		{"rate past the longest run", "name: x\npods: [{name: p, count: 3, arrival: {rate: 1e-12}}]\n",
			[]string{"pods[0].arrival.rate: 1e-12 pods/s: the last of 3 pods would arrive after the longest virtual time (2562047h47m16.854775807s)"}},
		{"duplicate group", "name: x\npods: [{name: p, count: 1}, {name: p, count: 2}]\n", []string{`pods[1].name: duplicate group "p"`}},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append([]string{path}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(valid+"# "+strings.Repeat("x", MaxScenarioBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "larger than the 4 MiB a scenario file may have") {
		t.Errorf("over-large file: %v", err)
	}
	if _, err := Load("NoSuchScenario"); !errors.Is(err, ErrUnknownScenario) || !strings.Contains(err.Error(), "NodeArrival") {
		t.Errorf("unknown scenario: %v", err)
	}
}

// TestEventsInAnyListOrder: an event may name a node group that an
// addNodes event listed after it adds earlier in time.
func TestEventsInAnyListOrder(t *testing.T) {
	sc := "name: x\npods: [{name: p, count: 1}]\nevents:\n- {at: 20s, removeNodes: {group: late}}\n- {at: 10s, addNodes: {name: late, count: 2}}\n"
	if _, err := Parse([]byte(sc)); err != nil {
		t.Fatal(err)
	}
}

// TestDocumentSeparators: a scenario may start or end with "---", and be
// followed by empty documents or comments.
func TestDocumentSeparators(t *testing.T) {
	body := "name: x\npods: [{name: p, count: 1}]\n"
	for _, c := range []struct{ name, doc string }{
		{"leading", "---\n" + body}, {"trailing", body + "---\n"}, {"comment after", body + "---\n# more later\n"},
	} {
		if _, err := Parse([]byte(c.doc)); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestSet(t *testing.T) {
	sc := load(t, "NodeArrival")
	for _, kv := range [][2]string{{"popFromBackoff", "false"}, {"hints", "false"}, {"maxBackoff", "30s"}, {"plugins", "upstream"}, {"seed", "9"}} {
		if err := sc.Set(kv[0], kv[1]); err != nil {
			t.Errorf("Set(%s, %s): %v", kv[0], kv[1], err)
		}
	}
	if *sc.Queue.PopFromBackoff || *sc.Queue.QueueingHints || sc.Seed != 9 {
		t.Fatalf("not applied: %+v", sc.Queue)
	}
	for _, kv := range [][2]string{{"speed", "fast"}, {"hints", "maybe"}, {"maxBackoff", "soon"}, {"scoring", "fastest"}, {"initialBackoff", "-1s"}} {
		if err := sc.Set(kv[0], kv[1]); err == nil {
			t.Errorf("Set(%s, %s) accepted", kv[0], kv[1])
		}
	}
}

func TestBuiltinsAreListed(t *testing.T) {
	want := []string{"Autoscaler", "DeviceClaims", "EarlyRetry", "GangScheduling", "MixedChurn", "NodeArrival", "PriorityPressure", "SchedulingBasic", "SchedulingWhileGated", "TenantFlood", "Unschedulable", "VolumeWait", "ZoneSpread"}
	if got := strings.Join(Builtins(), ","); got != strings.Join(want, ",") {
		t.Fatalf("built-ins %s", got)
	}
}

// BenchmarkSchedulingBasic is the simulator's cost on the largest built-in
// scenario (goal: under 10 s of wall time on 2 cores).
func BenchmarkSchedulingBasic(b *testing.B) {
	sc := load(b, "SchedulingBasic")
	for b.Loop() {
		r, err := Run(sc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(r.Attempts)/r.Wall.Seconds, "cycles/s")
	}
}

// TestMaxBackoffZeroIsOff: in a scenario, maxBackoff: 0 turns backoff off,
// as kube-scheduler's podMaxBackoffSeconds: 0 does; unset keeps the default.
func TestMaxBackoffZeroIsOff(t *testing.T) {
	sc, err := Parse([]byte("name: x\npods: [{name: p, count: 1}]\nqueue: {maxBackoff: 0s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Queue.backoffOff() {
		t.Fatal("maxBackoff: 0s left backoff on")
	}
	if sc, _ := Parse([]byte("name: x\npods: [{name: p, count: 1}]\n")); sc.Queue.backoffOff() {
		t.Fatal("an unset maxBackoff turned backoff off")
	}
	zero, off, def := load(t, "NodeArrival"), load(t, "NodeArrival"), load(t, "NodeArrival")
	if err := zero.Set("maxBackoff", "0s"); err != nil {
		t.Fatal(err)
	}
	if err := off.Set("disableBackoff", "true"); err != nil {
		t.Fatal(err)
	}
	rz, ro, rd := run(t, zero), run(t, off), run(t, def)
	if rz.Settings.MaxBackoff != "off" {
		t.Errorf("settings say maxBackoff %s, want off", rz.Settings.MaxBackoff)
	}
	if text(rz) != text(ro) {
		t.Errorf("maxBackoff=0 and disableBackoff=true differ:\n%s\n---\n%s", text(rz), text(ro))
	}
	if text(rz) == text(rd) {
		t.Error("maxBackoff=0 ran as the default backoff")
	}
}

// TestSelectionCount: an event's count left out selects the whole group;
// a count selects that many.
func TestSelectionCount(t *testing.T) {
	sc := parse(t, `
name: x
nodes: [{name: n, count: 3, capacity: {cpu: "1", memory: 1Gi, pods: "10"}}]
pods: [{name: p, count: 3, requests: {cpu: "1"}}]
events:
  - {at: 1s, removeNodes: {group: n, count: 1}}
  - {at: 2s, taintNodes: {group: n, taint: {key: k}}}
`)
	if sc.Events[0].RemoveNodes.Count != 1 || !sc.Events[0].RemoveNodes.countSet || sc.Events[1].TaintNodes.countSet {
		t.Fatalf("selections %+v %+v", *sc.Events[0].RemoveNodes, *sc.Events[1].TaintNodes)
	}
	r := run(t, sc)
	// One node removed at 1s (its pod recreated), the other two tainted at
	// 2s: the recreated pod has nowhere to go.
	if r.Scheduled != 3 || r.Pending != 1 || r.Evicted != 1 {
		t.Fatalf("scheduled %d, pending %d, evicted %d", r.Scheduled, r.Pending, r.Evicted)
	}
}

// TestLoadPathsRelativeToTheFile: a scenario file's relative paths are
// taken from the file's directory, wherever the command runs; an
// absolute path is kept; a scenario parsed from bytes keeps them
// relative to the current directory.
func TestLoadPathsRelativeToTheFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n")
	if err := os.WriteFile(filepath.Join(dir, "cfg.yaml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "abs.yaml")
	if err := os.WriteFile(abs, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	body := "name: rel\nnodes: [{name: n, count: 1, capacity: {cpu: '1', memory: 1Gi}}]\npods: [{name: p, count: 1, requests: {cpu: 100m}}]\nscheduler: {config: %s}\n"
	for _, tc := range []struct{ name, config, want string }{
		{"relative", "cfg.yaml", filepath.Join(dir, "cfg.yaml")},
		{"absolute", abs, abs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(file, fmt.Appendf(nil, body, tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if s.Scheduler.Config != tc.want {
				t.Fatalf("scheduler.config %q, want %q", s.Scheduler.Config, tc.want)
			}
		})
	}
	if _, err := Parse(fmt.Appendf(nil, body, "cfg.yaml")); err == nil || !strings.Contains(err.Error(), "cfg.yaml") {
		t.Fatalf("Parse: %v, want the config not found in the current directory", err)
	}
}

// TestNegativeDurationAlone: a negative duration is refused as such, and
// the run's end it would make is not held against the pod groups and
// events too (every one of them "after the run's end"), which would bury
// the one mistake under messages about correct lines.
func TestNegativeDurationAlone(t *testing.T) {
	_, err := Parse([]byte("name: x\nduration: -1m\nnodes: [{name: n, count: 1}]\npods: [{name: p, count: 1}]\nevents: [{at: 10s, removeNodes: {group: n}}]\n"))
	if err == nil || err.Error() != "duration: must not be negative, got -1m0s" {
		t.Errorf("error %q, want the duration's alone", err)
	}
}
