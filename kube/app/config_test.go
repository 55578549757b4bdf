package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedq/schedq/kube/internal/errtest"
)

const cfgHeader = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func configFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sched.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestValidateConfigApplies: the settings schedq honours replace the flags.
func TestValidateConfigApplies(t *testing.T) {
	o := valid()
	o.Config.File = configFile(t, cfgHeader+`percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 40
profiles:
- schedulerName: from-file
`)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.SchedulerName != "from-file" || o.PercentageOfNodesToScore != 30 ||
		o.Config.InitialBackoff != 2*time.Second || o.Config.MaxBackoff != 40*time.Second {
		t.Errorf("applied %q %d%% %v %v", o.SchedulerName, o.PercentageOfNodesToScore, o.Config.InitialBackoff, o.Config.MaxBackoff)
	}
	o = valid()
	o.Config.File = configFile(t, cfgHeader+"percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: p\n  percentageOfNodesToScore: 70\n")
	if err := o.Validate(); err != nil || o.PercentageOfNodesToScore != 70 {
		t.Errorf("profile's percentage: %d, %v; want 70", o.PercentageOfNodesToScore, err)
	}
	o = valid()
	o.Config.File = configFile(t, cfgHeader) // all defaults
	if err := o.Validate(); err != nil || o.SchedulerName != "default-scheduler" || o.Config.MaxBackoff != 10*time.Second {
		t.Errorf("defaults: %q %v, %v", o.SchedulerName, o.Config.MaxBackoff, err)
	}
}

// TestValidateConfigRefuses: a file upstream refuses, or one asking for
// what schedq cannot honour, fails Validate with a message naming it.
func TestValidateConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"missing file", "", []string{"--config", "no such file"}},
		{"does not parse", cfgHeader + "profiles: [\n", []string{"--config", "sched.yaml"}},
		{"upstream validation", cfgHeader + "podInitialBackoffSeconds: 0\n", []string{"--config", "podInitialBackoffSeconds", "must be greater than 0"}},
		{"duplicate schedulerName", cfgHeader + "profiles:\n- schedulerName: a\n- schedulerName: a\n", []string{"profiles[1].schedulerName", "Duplicate value"}},
		{"two queue sorts", cfgHeader + "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled:\n      - name: Other\n      disabled:\n      - name: '*'\n",
			[]string{"--config", "profiles[1].plugins.queueSort", "must be the same for all profiles"}},
		{"leader election", cfgHeader + "leaderElection:\n  leaderElect: false\n", []string{"leaderElection: set by the --leader-elect* flags"}},
		{"delay cache until active", cfgHeader + "delayCacheUntilActive: true\n", []string{"delayCacheUntilActive: a standby replica keeps its caches and queue warm"}},
		{"plugin at a point it does not extend", cfgHeader + "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n",
			[]string{"--config", "sched.yaml", `profile "a": plugin "ImageLocality" does not extend FilterPlugin plugin`}},
		// The simulator's GPU model, whose args the framework would pass
		// over here (enabled, its factory refuses it).
		{"GPUDevices' args", cfgHeader + "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: GPUDevices\n    args: {policy: FGD}\n",
			[]string{"--config", "profiles[0].pluginConfig[0] (GPUDevices): the simulator's model of a trace's GPUs"}},
		// A name no pod can carry is the file's field, not the
		// --scheduler-name the command line never gave, and in any profile.
		{"first profile's name no pod can carry", cfgHeader + "profiles:\n- schedulerName: Bad_Name\n",
			[]string{"--config", "sched.yaml: profiles[0].schedulerName", `Invalid value: "Bad_Name": can never match a pod's spec.schedulerName`}},
		{"second profile's name no pod can carry", cfgHeader + "profiles:\n- schedulerName: a\n- schedulerName: Bad_Name\n",
			[]string{"--config", "sched.yaml: profiles[1].schedulerName", `Invalid value: "Bad_Name": can never match a pod's spec.schedulerName`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			o.Config.File = filepath.Join(t.TempDir(), "absent.yaml")
			if tc.body != "" {
				o.Config.File = configFile(t, tc.body)
			}
			err := o.Validate()
			errtest.Names(t, err, tc.want...)
			if o.SchedulerName != "schedq" {
				t.Errorf("a refused file changed the scheduler name to %q", o.SchedulerName)
			}
		})
	}
}

// TestValidateConfigUpstreamPlugins: a file's plugins and pluginConfig
// are taken (kube-scheduler's framework runs them) and its profile kept;
// without a file, the default profile is, and --scheduler-name still
// names the pods.
func TestValidateConfigUpstreamPlugins(t *testing.T) {
	o := valid()
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n  plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n"+
		"  pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 5\n")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	p := o.Config.Profile
	if p == nil || p.SchedulerName != "a" || o.SchedulerName != "a" {
		t.Fatalf("profile %v, scheduler name %q", p, o.SchedulerName)
	}
	if d := p.Plugins.Score.Disabled; len(d) != 1 || d[0].Name != "ImageLocality" {
		t.Fatalf("score disabled %v, want ImageLocality", d)
	}
	o = valid()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Config.Profile == nil || o.Config.Profile.SchedulerName != "default-scheduler" || o.SchedulerName != "schedq" {
		t.Fatalf("without a file: profile %v, scheduler name %q", o.Config.Profile, o.SchedulerName)
	}
}

// TestValidateConfigTwoProfiles: a file with two profiles is taken whole,
// as kube-scheduler takes it: both profiles kept, in order, each built
// once offline, the first's schedulerName replacing --scheduler-name;
// the handlers will let in the pods of both (schedulerNames). A profile
// upstream's framework refuses as it is built is refused, named.
func TestValidateConfigTwoProfiles(t *testing.T) {
	o := valid()
	o.Config.File = configFile(t, cfgHeader+"percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: a\n- schedulerName: b\n  percentageOfNodesToScore: 60\n  plugins:\n    filter:\n      disabled:\n      - name: TaintToleration\n")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(o.Config.Profiles) != 2 || o.Config.Profile != o.Config.Profiles[0] || o.SchedulerName != "a" {
		t.Fatalf("profiles %d, first kept %v, scheduler name %q", len(o.Config.Profiles), o.Config.Profile == o.Config.Profiles[0], o.SchedulerName)
	}
	if got := o.schedulerNames(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("scheduler names %q, want a, b", got)
	}
	if o.PercentageOfNodesToScore != 30 {
		t.Fatalf("percentage %d, want the file's 30 (b's 60 is b's alone)", o.PercentageOfNodesToScore)
	}
	if d := o.Config.Profiles[1].Plugins.Filter.Disabled; len(d) != 1 || d[0].Name != "TaintToleration" {
		t.Fatalf("b's filters disabled %v", d)
	}
	o = valid()
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    preEnqueue:\n      enabled:\n      - name: NodePorts\n")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("profile b's bad plugin: %v, want refused naming b", err)
	}
}
