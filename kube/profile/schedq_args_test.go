package profile

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/internal/errtest"
)

// schedqConfig is a configuration whose first profile gives Schedq the
// args written after it (indented under the entry), beside another
// plugin's.
func schedqConfig(args string) string {
	return header + `profiles:
- schedulerName: a
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
  - name: Schedq
` + args
}

func to[T any](v T) *T { return &v }

// TestSchedqArgs: schedq's settings are read from the first profile's
// Schedq args, strictly; each bad one is refused naming its field path.
func TestSchedqArgs(t *testing.T) {
	const at = "profiles[0].pluginConfig[1].args"
	for _, tc := range []struct {
		name, args string
		good       *SchedqArgs // accepted: the settings decoded
		want       []string    // refused: substrings of the error
	}{
		{name: "every setting", args: `    args:
      wakeBudget: false
      fairness: {namespaces: true, weights: {team-a: 2, team-b: 0.5}, halfLife: 2m}
      fenceMargin: 3s
      history: {labels: [app, example.com/team], tail: exponential, file: /var/lib/schedq/history.jsonl}
      stallTimeout: 3m
`, good: &SchedqArgs{WakeBudget: to(false),
			Fairness:    FairnessArgs{Namespaces: to(true), Weights: map[string]float64{"team-a": 2, "team-b": 0.5}, HalfLife: to(2 * time.Minute)},
			FenceMargin: to(3 * time.Second), History: HistoryArgs{Labels: []string{"app", "example.com/team"}, Tail: to("exponential"), File: to("/var/lib/schedq/history.jsonl")},
			StallTimeout: to(3 * time.Minute)}},
		{name: "apiVersion and kind", args: "    args:\n      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: SchedqArgs\n      wakeBudget: true\n",
			good: &SchedqArgs{WakeBudget: to(true)}},
		{name: "no args", args: "", good: &SchedqArgs{}},
		{name: "empty args", args: "    args: {}\n", good: &SchedqArgs{}},
		{name: "unknown field", args: "    args: {wakebudget: false}\n",
			want: []string{at + `.wakebudget: Not found: "wakebudget": unknown field`}},
		{name: "unknown nested field", args: "    args: {fairness: {namespace: true}}\n",
			want: []string{at + `.fairness.namespace: Not found: "namespace": unknown field`}},
		// kube-scheduler's strict decoding of the whole file finds it first.
		{name: "duplicate field", args: "    args: {fenceMargin: 1s, fenceMargin: 2s}\n",
			want: []string{`line 9: key "fenceMargin" already set`}},
		{name: "boolean of the wrong type", args: "    args: {wakeBudget: \"no\"}\n",
			want: []string{at + ".wakeBudget: Invalid value", "must be a boolean"}},
		{name: "weight of the wrong type", args: "    args: {fairness: {weights: {team-a: heavy}}}\n",
			want: []string{at + ".fairness.weights: Invalid value", "must be a number"}},
		{name: "duration a number", args: "    args: {stallTimeout: 90}\n",
			want: []string{at + ".stallTimeout: Invalid value", "must be a duration"}},
		{name: "not a duration", args: "    args: {fairness: {halfLife: soon}}\n",
			want: []string{at + `.fairness.halfLife: Invalid value: "soon": not a duration`}},
		{name: "negative fence margin", args: "    args: {fenceMargin: -1s}\n",
			want: []string{at + `.fenceMargin: Invalid value: "-1s": must not be negative`}},
		{name: "negative half-life", args: "    args: {fairness: {halfLife: -1m}}\n",
			want: []string{at + ".fairness.halfLife: Invalid value", "must not be negative"}},
		{name: "negative stall timeout", args: "    args: {stallTimeout: -1m}\n",
			want: []string{at + ".stallTimeout: Invalid value", "must not be negative"}},
		{name: "not a namespace", args: "    args: {fairness: {weights: {Team_A: 1}}}\n",
			want: []string{at + `.fairness.weights[Team_A]: Invalid value: "Team_A": not a namespace name`}},
		{name: "weight zero", args: "    args: {fairness: {weights: {team-a: 0}}}\n",
			want: []string{at + ".fairness.weights[team-a]: Invalid value: 0: a weight is a number above 0"}},
		{name: "not a label key", args: "    args: {history: {labels: [\"a b\"]}}\n",
			want: []string{at + `.history.labels[0]: Invalid value: "a b": not a label key`}},
		{name: "label twice", args: "    args: {history: {labels: [app, app]}}\n",
			want: []string{at + `.history.labels[1]: Duplicate value: "app"`}},
		{name: "unknown tail", args: "    args: {history: {tail: longer}}\n",
			want: []string{at + `.history.tail: Unsupported value: "longer"`, `"exponential"`}},
		{name: "another apiVersion", args: "    args: {apiVersion: schedq.io/v1}\n",
			want: []string{at + `.apiVersion: Unsupported value: "schedq.io/v1"`}},
		{name: "another plugin's kind", args: "    args: {kind: GPUDevicesArgs}\n",
			want: []string{at + `.kind: Unsupported value: "GPUDevicesArgs"`}},
		{name: "args a list", args: "    args: [wakeBudget]\n",
			want: []string{at + ": Invalid value", "must be"}},
		{name: "every error at once", args: "    args: {wakeBudget: true, fenceMargin: -1s, history: {tail: longer}}\n",
			want: []string{at + ".fenceMargin", at + ".history.tail"}},
		{name: "every error at once, one of the wrong type", args: "    args: {wakeBudget: \"no\", fenceMargin: -1s, history: {tail: longer}}\n",
			want: []string{at + ".wakeBudget: Invalid value", at + ".fenceMargin", at + ".history.tail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Decode([]byte(schedqConfig(tc.args)))
			if tc.want != nil {
				errtest.Names(t, err, tc.want...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, path, err := SchedqSettings(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if path != at || !reflect.DeepEqual(a, tc.good) {
				t.Errorf("SchedqSettings: %+v at %q, want %+v at %q", a, path, tc.good, at)
			}
		})
	}
}

// TestSchedqArgsPlace: only the first profile carries schedq's settings,
// under the name Schedq, case and all; a file without them has none;
// and Schedq, which never runs, enabled at an extension point is refused
// as the file is decoded, naming the point, before a program builds the
// framework (which refuses it too).
func TestSchedqArgsPlace(t *testing.T) {
	_, err := Decode([]byte(header + "profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig:\n  - {name: Schedq, args: {wakeBudget: false}}\n"))
	if err == nil || !strings.Contains(err.Error(), `profiles[1].pluginConfig[0].name: Invalid value: "Schedq": schedq's settings are the scheduler's, not a profile's`) {
		t.Errorf("Schedq in the second profile: %v", err)
	}
	for _, name := range []string{"schedq", "SchedQ"} {
		_, err := Decode([]byte(header + "profiles:\n- schedulerName: a\n  pluginConfig:\n  - {name: " + name + ", args: {wakeBudget: false}}\n"))
		if want := `profiles[0].pluginConfig[0].name: Unsupported value: "` + name + `": supported values: "Schedq"`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Schedq's args under %s: %v, want %q (its settings would be dropped)", name, err, want)
		}
	}
	cfg, err := Decode([]byte(header + "profiles:\n- schedulerName: a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, path, err := SchedqSettings(cfg); a != nil || path != "" || err != nil {
		t.Errorf("no Schedq args: %+v %q %v", a, path, err)
	}
	for _, tc := range []struct{ name, point string }{{"filter", "filter"}, {"multi point", "multiPoint"}, {"pre-bind", "preBind"}} {
		_, err := Decode([]byte(header + "profiles:\n- schedulerName: a\n  plugins:\n    " + tc.point + ":\n      enabled: [{name: Schedq}]\n"))
		if want := "profiles[0].plugins." + tc.point + `.enabled: Invalid value: "Schedq": Schedq is no plugin that runs`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Schedq enabled at %s: %v, want %q", tc.name, err, want)
		}
	}
	// The framework refuses it too, as a profile built without Decode.
	cfg.Profiles[0].Plugins.Filter.Enabled = append(cfg.Profiles[0].Plugins.Filter.Enabled, config.Plugin{Name: Schedq})
	f, err := NewFrameworkOn(context.Background(), &cfg.Profiles[0], Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err == nil {
		f.Close()
		t.Fatal("a framework with Schedq enabled was built")
	}
	if !strings.Contains(err.Error(), "plugin Schedq is not available here: it only carries schedq's own settings") {
		t.Errorf("Schedq enabled: %v", err)
	}
}
