package sim

import (
	"errors"
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
		{"unknown field", valid + "nodez: []\n", []string{"line 3", "field nodez not found"}},
		{"malformed", "name: [x\n", []string{"line"}},
		{"unknown plugin", valid + "scheduler: {disablePlugins: [NodePorts]}\n", []string{`scheduler.disablePlugins[0]: unknown plugin "NodePorts"`}},
		{"bad quantity", "name: x\npods: [{name: p, count: 1, requests: {cpu: lots}}]\n", []string{`pods[0].requests: cpu: "lots" is not a quantity`}},
		{"negative duration", valid + "queue: {maxBackoff: -1s}\n", []string{"queue.maxBackoff: must not be negative"}},
		{"two actions", valid + "events: [{at: 1s, deletePods: {group: p}, removeGates: {group: p}}]\n", []string{"events[0]: needs exactly one of"}},
		{"unknown group", valid + "events: [{at: 1s, removeNodes: {group: ghosts}}]\n", []string{`events[0].removeNodes.group: unknown node group "ghosts"`}},
		{"bad scoring", valid + "scheduler: {scoring: fastest}\n", []string{`scheduler.scoring: "fastest"`}},
		{"bad taint effect", "name: x\nnodes: [{name: n, count: 1, taints: [{key: k, effect: Sometimes}]}]\npods: [{name: p, count: 1}]\n", []string{`nodes[0].taints[0].effect: "Sometimes"`}},
		{"no pods", "name: x\n", []string{"pods: a scenario needs at least one pod group"}},
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
	if _, err := Load("NoSuchScenario"); !errors.Is(err, ErrUnknownScenario) || !strings.Contains(err.Error(), "NodeArrival") {
		t.Errorf("unknown scenario: %v", err)
	}
}

func TestSet(t *testing.T) {
	sc := load(t, "NodeArrival")
	for _, kv := range [][2]string{{"popFromBackoff", "false"}, {"hints", "false"}, {"maxBackoff", "30s"}, {"scoring", "balanced"}, {"seed", "9"}} {
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
	want := []string{"Autoscaler", "EarlyRetry", "MixedChurn", "NodeArrival", "PriorityPressure", "SchedulingBasic", "SchedulingWhileGated", "Unschedulable"}
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
