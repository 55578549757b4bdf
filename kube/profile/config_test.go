package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedq/schedq/kube/internal/errtest"
)

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadRefuses: each bad file is refused with upstream's message and
// the field path (each want is a substring of the error).
func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"does not parse", header + "profiles: [\n", []string{"config.yaml", "yaml"}},
		{"unknown field", header + "percentageOfNodesToScor: 5\n", []string{`unknown field "percentageOfNodesToScor"`}},
		{"unknown plugin", header + "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n",
			[]string{"profiles[0].plugins.filter.enabled[0].name", `"NoSuchPlugin"`, "does not exist"}},
		{"invalid weight", header + `profiles:
- schedulerName: a
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
        resources:
        - name: cpu
          weight: 101
`, []string{"profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight", "resource weight of cpu not in valid range (0, 100]"}},
		{"plugin arg of wrong type", header + `profiles:
- schedulerName: a
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultConstraints: none
`, []string{"defaultConstraints", "cannot unmarshal"}},
		{"two profiles, one schedulerName", header + "profiles:\n- schedulerName: a\n- schedulerName: a\n",
			[]string{"profiles[1].schedulerName", "Duplicate value"}},
		{"empty file", "", []string{"config.yaml: empty file (want apiVersion: kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration)"}},
		{"comments only", "# later\n\n", []string{"config.yaml: empty file (want"}},
		{"no kind", "apiVersion: kubescheduler.config.k8s.io/v1\nprofiles:\n- schedulerName: secret-sauce\n", []string{"config.yaml: no kind field (want"}},
		{"no apiVersion", "kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: secret-sauce\n", []string{"config.yaml: no apiVersion field (want"}},
		{"removed version", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
			[]string{`no kind "KubeSchedulerConfiguration" is registered for version "kubescheduler.config.k8s.io/v1beta3" (want apiVersion: kubescheduler.config.k8s.io/v1`}},
		{"two documents", header + "profiles:\n- schedulerName: a\n---\n" + header + "percentageOfNodesToScore: 500\n", []string{"config.yaml: document 2: a second YAML document (after ---)"}},
		{"percentage out of range", header + "percentageOfNodesToScore: 101\n", []string{"percentageOfNodesToScore", "101"}},
		{"backoff below initial", header + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
			[]string{"podMaxBackoffSeconds", "must be greater than or equal to PodInitialBackoffSeconds"}},
		// As a time.Duration, 9223372037 s and more wrap around to a
		// negative backoff, which the queue would refuse only once
		// connected (or, worse, take).
		{"max backoff beyond the longest duration", header + "podMaxBackoffSeconds: 9223372036854775807\n",
			[]string{"podMaxBackoffSeconds: Invalid value: 9223372036854775807", "at most 9223372036"}},
		{"a profile's name no pod can carry", header + "profiles:\n- schedulerName: a\n- schedulerName: Bad_Name\n",
			[]string{`profiles[1].schedulerName: Invalid value: "Bad_Name": can never match a pod's spec.schedulerName`}},
		// YAML's .nan, which the decoder reports as "json: unsupported
		// value: NaN", naming neither line nor field.
		{"NaN", header + "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: Schedq\n    args:\n      fairness: {namespaces: true, weights: {team-a: .nan}}\n",
			[]string{"config.yaml: line 8: profiles[0].pluginConfig[0].args.fairness.weights.team-a: .nan is not a finite number"}},
		{"initial backoff beyond the longest duration", header + "podInitialBackoffSeconds: 9223372037\npodMaxBackoffSeconds: 9223372037\n",
			[]string{"podInitialBackoffSeconds: Invalid value: 9223372037", "podMaxBackoffSeconds: Invalid value: 9223372037"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.body))
			errtest.Names(t, err, tc.want...)
			// Neither the file's content nor the scheme's Go source.
			if msg := err.Error(); strings.Contains(msg, "secret-sauce") || strings.Contains(msg, ".go:") {
				t.Errorf("error %q quotes the file or the scheme's source", msg)
			}
		})
	}
}

// TestLoadSeparators: a file may start or end with "---", and hold
// comments after it.
func TestLoadSeparators(t *testing.T) {
	body := header + "profiles:\n- schedulerName: a\n"
	for _, c := range []struct{ name, doc string }{
		{"leading", "---\n" + body}, {"trailing", body + "---\n"}, {"comment after", body + "---\n# later\n"},
	} {
		if _, err := Load(writeConfig(t, c.doc)); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestLoadDefaults(t *testing.T) {
	def, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Profiles) != 1 || def.Profiles[0].SchedulerName != "default-scheduler" {
		t.Fatalf("default profiles %+v, want default-scheduler only", def.Profiles)
	}
	var names []string
	for _, p := range def.Profiles[0].Plugins.MultiPoint.Enabled {
		names = append(names, p.Name)
	}
	for _, want := range []string{"PodTopologySpread", "VolumeBinding", "NodePorts", "DynamicResources", "DefaultPreemption"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("default profile lacks %s: %v", want, names)
		}
	}
	cfg, err := Load(writeConfig(t, header+"percentageOfNodesToScore: 20\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 30\nprofiles:\n- schedulerName: a\n- schedulerName: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.PercentageOfNodesToScore != 20 || cfg.PodInitialBackoffSeconds != 2 || cfg.PodMaxBackoffSeconds != 30 {
		t.Errorf("got %d%% %ds %ds", *cfg.PercentageOfNodesToScore, cfg.PodInitialBackoffSeconds, cfg.PodMaxBackoffSeconds)
	}
	if len(cfg.Profiles) != 2 || cfg.Profiles[1].SchedulerName != "b" || cfg.Profiles[1].Plugins == nil {
		t.Errorf("profiles %+v, want a and b with the default plugins", cfg.Profiles)
	}
}

// TestLoadRefusesEndlessFile: a path that never ends (/dev/zero) or a file
// over MaxConfigBytes is refused with the limit, not read for ever.
func TestLoadRefusesEndlessFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#\n"), MaxConfigBytes/2+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/dev/zero", big} {
		if _, err := os.Stat(file); err != nil {
			t.Logf("%s: %v", file, err)
			continue
		}
		_, err := Load(file)
		if err == nil || !strings.Contains(err.Error(), file+": larger than the 4 MiB a configuration file may have") {
			t.Errorf("%s: %v, want the limit named", file, err)
		}
	}
}
