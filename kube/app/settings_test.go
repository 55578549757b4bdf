package app

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedq/schedq"

	"github.com/schedq/schedq/kube/internal/errtest"
)

// schedqFile is a --config file whose profile gives Schedq args.
func schedqFile(t *testing.T, args string) string {
	t.Helper()
	return configFile(t, cfgHeader+"profiles:\n- schedulerName: schedq\n  pluginConfig:\n  - name: Schedq\n    args: "+args+"\n")
}

// TestConfigSchedqSettingsApply: the settings of the file's Schedq args
// replace the flags' values; those it leaves keep them.
func TestConfigSchedqSettingsApply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  string
		flags func(*Options)
		check func(*Options) bool
	}{
		{"wake budget off", "{wakeBudget: false}", nil, func(o *Options) bool { return o.NoWakeBudget }},
		{"wake budget on, over the flag's default", "{wakeBudget: true}", nil, func(o *Options) bool { return !o.NoWakeBudget }},
		{"fairness", "{fairness: {namespaces: true, weights: {team-a: 2}, halfLife: 2m}}", nil, func(o *Options) bool {
			return o.Fairness.Namespaces && reflect.DeepEqual(o.Fairness.Weights, map[string]float64{"team-a": 2}) && o.Fairness.HalfLife == 2*time.Minute
		}},
		{"fence margin", "{fenceMargin: 3s}", nil, func(o *Options) bool { return o.FenceMargin == 3*time.Second }},
		{"history", "{history: {labels: [app, team], tail: exponential}}", nil, func(o *Options) bool {
			return reflect.DeepEqual(o.History.Labels, []string{"app", "team"}) && o.History.Tail == "exponential"
		}},
		{"stall timeout", "{stallTimeout: 5m}", nil, func(o *Options) bool { return o.StallTimeout == 5*time.Minute }},
		{"the flags give what the file leaves", "{fairness: {halfLife: 2m}}",
			func(o *Options) { o.Fairness.Namespaces, o.NoWakeBudget, o.History.Tail = true, true, "exponential" },
			func(o *Options) bool {
				return o.Fairness.Namespaces && o.Fairness.HalfLife == 2*time.Minute && o.NoWakeBudget && o.History.Tail == "exponential"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			if tc.flags != nil {
				tc.flags(&o)
			}
			o.Config.File = schedqFile(t, tc.args)
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if !tc.check(&o) {
				t.Errorf("options after Validate: %+v", o)
			}
		})
	}
}

// TestConfigSchedqSettingsRefused: a setting of the file that does not
// fit with the others (its own, or the flags') is refused naming the
// file and its field, as the flag would be named.
func TestConfigSchedqSettingsRefused(t *testing.T) {
	const at = "profiles[0].pluginConfig[0].args"
	for _, tc := range []struct {
		name  string
		args  string
		flags func(*Options)
		want  []string
	}{
		{"bad value, named by the decoder", "{fairness: {halfLife: soon}}", nil,
			[]string{"--config", "sched.yaml", at + `.fairness.halfLife: Invalid value: "soon"`}},
		{"weights without fairness", "{fairness: {weights: {team-a: 2}}}", nil,
			[]string{"sched.yaml: " + at + ".fairness.weights needs --fair-namespaces (or fairness.namespaces: true in the file)"}},
		{"half-life without fairness, weights by the flag", "{fairness: {halfLife: 1m}}", func(o *Options) { o.Fairness.Weights = map[string]float64{"a": 2} },
			[]string{"--fair-namespace-weights and --config ", "sched.yaml: " + at + ".fairness.halfLife need --fair-namespaces (or fairness.namespaces: true in the file)"}},
		{"half-life with fairness off in the file, on by the flag", "{fairness: {namespaces: false, halfLife: 1m}}", func(o *Options) { o.Fairness.Namespaces = true },
			[]string{at + ".fairness.halfLife needs --config", at + ".fairness.namespaces"}},
		{"fence margin past the lease", "{fenceMargin: 20s}", nil,
			[]string{"sched.yaml: " + at + ".fenceMargin: 20s must be 0", "--leader-elect-lease-duration (15s)"}},
		{"fence margin without leader election", "{fenceMargin: 3s}", func(o *Options) { o.LeaderElect = false },
			[]string{"sched.yaml: " + at + ".fenceMargin: only with leader election on"}},
		{"stall timeout under a minute", "{stallTimeout: 30s}", nil,
			[]string{"sched.yaml: " + at + ".stallTimeout: 30s is less than 1m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			if tc.flags != nil {
				tc.flags(&o)
			}
			o.Config.File = schedqFile(t, tc.args)
			err := o.Validate()
			errtest.Names(t, err, tc.want...)
		})
	}
}

// TestFileConflicts: a flag given with another value than the file's is
// refused naming both; given with the same value, or not given, it is not.
func TestFileConflicts(t *testing.T) {
	const at = "profiles[0].pluginConfig[0].args"
	args := "{wakeBudget: true, fairness: {namespaces: true, weights: {team-a: 2}, halfLife: 2m}, fenceMargin: 3s, history: {labels: [app], tail: exponential}, stallTimeout: 5m}"
	for _, tc := range []struct {
		name  string
		flag  string
		flags func(*Options)
		want  string // "": no conflict
	}{
		{"wake budget", "no-wake-budget", func(o *Options) { o.NoWakeBudget = true }, "--no-wake-budget=true: --config %s: " + at + ".wakeBudget is true"},
		{"fairness", "fair-namespaces", func(o *Options) { o.Fairness.Namespaces = false }, "--fair-namespaces=false: --config %s: " + at + ".fairness.namespaces is true"},
		{"weights", "fair-namespace-weights", func(o *Options) { o.Fairness.Weights = map[string]float64{"team-a": 3} }, "--fair-namespace-weights=team-a=3: --config %s: " + at + ".fairness.weights is team-a=2"},
		{"half-life", "fair-half-life", func(o *Options) { o.Fairness.HalfLife = time.Minute }, "--fair-half-life=1m0s: --config %s: " + at + ".fairness.halfLife is 2m0s"},
		{"fence margin", "leader-elect-fence-margin", func(o *Options) { o.FenceMargin = time.Second }, "--leader-elect-fence-margin=1s: --config %s: " + at + ".fenceMargin is 3s"},
		{"history labels", "history-label", func(o *Options) { o.History.Labels = []string{"team"} }, "--history-label=team: --config %s: " + at + ".history.labels is app"},
		{"history tail", "history-tail", func(o *Options) { o.History.Tail = "longest" }, "--history-tail=longest: --config %s: " + at + ".history.tail is exponential"},
		{"stall timeout", "stall-timeout", func(o *Options) { o.StallTimeout = 3 * time.Minute }, "--stall-timeout=3m0s: --config %s: " + at + ".stallTimeout is 5m0s"},
		{"same value", "fair-half-life", func(o *Options) { o.Fairness.HalfLife = 2 * time.Minute }, ""},
		{"same weights", "fair-namespace-weights", func(o *Options) { o.Fairness.Weights = map[string]float64{"team-a": 2} }, ""},
		{"flag not given", "", func(o *Options) { o.FenceMargin = time.Second }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := valid()
			tc.flags(&flags)
			o := flags
			o.Config.File = schedqFile(t, args)
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			errs := o.FileConflicts(flags, func(f string) bool { return f == tc.flag })
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("conflicts %v, want none", errs)
				}
				return
			}
			want := strings.Replace(tc.want, "%s", o.Config.File, 1)
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), want) || !strings.HasSuffix(errs[0].Error(), "give it in one place") {
				t.Fatalf("conflicts %v, want one starting %q", errs, want)
			}
		})
	}
}

// TestFileConflictsWithEmptyValues: a file's empty list of labels or map
// of weights, which a flag contradicts, is shown as the file writes it.
func TestFileConflictsWithEmptyValues(t *testing.T) {
	const at = "profiles[0].pluginConfig[0].args"
	for _, tc := range []struct {
		name, flag string
		flags      func(*Options)
		want       string
	}{
		{"no labels", "history-label", func(o *Options) { o.History.Labels = []string{"team"} }, at + ".history.labels is [] (none); give it in one place"},
		{"no weights", "fair-namespace-weights", func(o *Options) { o.Fairness.Weights = map[string]float64{"a": 2} }, at + ".fairness.weights is {} (none); give it in one place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := valid()
			tc.flags(&flags)
			o := flags
			o.Config.File = schedqFile(t, "{fairness: {namespaces: true, weights: {}}, history: {labels: []}}")
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			errs := o.FileConflicts(flags, func(f string) bool { return f == tc.flag })
			if len(errs) != 1 || !strings.HasSuffix(errs[0].Error(), tc.want) {
				t.Fatalf("conflicts %v, want one ending %q", errs, tc.want)
			}
		})
	}
}

// TestFairnessFromFileReachesTheQueue: fairness turned on by the file
// makes the queue the scheduler builds (queueConfig, as Run builds it)
// interleave the namespaces, as the flag does; with neither, the flood
// of team-a's pods goes first.
func TestFairnessFromFileReachesTheQueue(t *testing.T) {
	fair := []string{"team-a/a1", "team-b/b1", "team-a/a2", "team-b/b2", "team-a/a3"}
	fifo := []string{"team-a/a1", "team-a/a2", "team-a/a3", "team-b/b1", "team-b/b2"}
	for _, tc := range []struct {
		name  string
		file  string // Schedq args; "": no --config
		flags func(*Options)
		want  []string
	}{
		{"by the file", "{fairness: {namespaces: true}}", nil, fair},
		{"by the flag", "", func(o *Options) { o.Fairness.Namespaces = true }, fair},
		{"by neither", "{wakeBudget: true}", nil, fifo},
		{"off by the file", "{fairness: {namespaces: false}}", nil, fifo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			if tc.flags != nil {
				tc.flags(&o)
			}
			if tc.file != "" {
				o.Config.File = schedqFile(t, tc.file)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			q, err := schedq.New(o.queueConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"a1", "a2", "a3"} {
				q.Add(nsPod("team-a", n))
			}
			q.Add(nsPod("team-b", "b1"))
			q.Add(nsPod("team-b", "b2"))
			var got []string
			for range tc.want {
				a, err := q.Pop(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, a.Item.Namespace+"/"+a.Item.Name)
				q.Done(a)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pop order %v, want %v", got, tc.want)
			}
		})
	}
}
