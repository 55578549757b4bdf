package profile

import (
	"os"
	"strings"
	"testing"
)

// FuzzLoadSettings feeds LoadSettings, the reader of a
// KubeSchedulerConfiguration file with schedq's own settings, with mutated
// files: it must never panic or hang, and must either refuse the file with
// an error that names it or give a configuration that decodes again to
// the same settings. The seeds, the repository's configuration files and
// a few bad ones, run under plain go test. Fuzz it with
// go test -run XXX -fuzz FuzzLoadSettings -fuzztime 3m -fuzzminimizetime 100x ./kube/profile
func FuzzLoadSettings(f *testing.F) {
	for _, path := range []string{"../sim/testdata/gpu-policy-fgd.yaml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		header,
		header + "percentageOfNodesToScore: 50\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\n",
		schedqConfig(`    args:
      wakeBudget: false
      fairness: {namespaces: true, weights: {team-a: 2, team-b: 0.5}, halfLife: 2m}
      fenceMargin: 3s
      history: {labels: [app, example.com/team], tail: exponential, file: /var/lib/schedq/history.jsonl}
      stallTimeout: 3m
`),
		header + "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n",
		header + "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: 10\n- schedulerName: b\n",
		header + "profiles: [\n",
		header + "---\n" + header,
		"",
		"kind: KubeSchedulerConfiguration\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		path := writeConfig(t, string(data))
		cfg, set, err := LoadSettings(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("the error does not name the file %s: %v", path, err)
			}
			return
		}
		if cfg == nil {
			t.Fatal("no configuration and no error")
		}
		if _, _, err := SchedqSettings(cfg); err != nil {
			t.Fatalf("LoadSettings accepted settings that SchedqSettings refuses: %v", err)
		}
		if _, err := Unhonoured(cfg); err != nil {
			t.Fatal(err)
		}
		if set.Schedq != nil && set.SchedqPath == "" {
			t.Fatal("Schedq settings without their field path")
		}
	})
}
