package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		{"two profiles", cfgHeader + "profiles:\n- schedulerName: a\n- schedulerName: b\n", []string{"2 profiles; schedq runs one"}},
		{"leader election", cfgHeader + "leaderElection:\n  leaderElect: false\n", []string{"leaderElection: set by the --leader-elect* flags"}},
		{"delay cache until active", cfgHeader + "delayCacheUntilActive: true\n", []string{"delayCacheUntilActive: a standby replica keeps its caches and queue warm"}},
		{"plugin at a point it does not extend", cfgHeader + "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n",
			[]string{"--config", "sched.yaml", `profile "a": plugin "ImageLocality" does not extend FilterPlugin plugin`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			o.Config.File = filepath.Join(t.TempDir(), "absent.yaml")
			if tc.body != "" {
				o.Config.File = configFile(t, tc.body)
			}
			err := o.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
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
