package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/schedq/schedq/kube/app"
)

// schedqDefaults are the Schedq args that spell each of schedq's own
// settings at its default, as docs/scheduler.md gives the flags' defaults,
// by field (app.SettingsFields).
var schedqDefaults = map[string]string{
	"wakeBudget":          "wakeBudget: true",
	"fairness.namespaces": "fairness: {namespaces: false, weights: {}, halfLife: 0s}",
	"fairness.weights":    "",
	"fairness.halfLife":   "",
	"history.labels":      "history: {labels: [], tail: longest, file: \"\"}",
	"history.tail":        "",
	"history.file":        "",
	"stallTimeout":        "stallTimeout: 0s",
	"fenceMargin":         "fenceMargin: 0s",
}

// TestSchedqSettingsDefaultsAreTheFlags: a file whose Schedq args give
// every setting its default agrees with each flag given at its own
// default (a flag given with another value than the file's is refused),
// so the file's fields and the flags cannot drift apart in meaning or
// default (changing a flag's default fails here); the file alone is
// accepted too. A setting added to the flags and not to schedqDefaults
// fails here as well.
func TestSchedqSettingsDefaultsAreTheFlags(t *testing.T) {
	notInCluster(t)
	server, _ := apiServer(t)
	kc := kubeconfigFor(t, server)
	var parts []string
	for field := range schedqDefaults {
		if _, ok := schedqDefaultsFlag(field); !ok {
			t.Errorf("schedqDefaults has %s, which is no setting", field)
		}
		if s := schedqDefaults[field]; s != "" {
			parts = append(parts, s)
		}
	}
	file := filepath.Join(t.TempDir(), "defaults.yaml")
	text := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: schedq\n" +
		"  pluginConfig:\n  - name: Schedq\n    args: {" + strings.Join(parts, ", ") + "}\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var sched *pflag.FlagSet
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		if c.Name() == "scheduler" {
			sched = c.Flags()
		}
	}
	args := []string{"scheduler", "--kubeconfig", kc, "--address=", "--config", file}
	for flag, field := range app.SettingsFields() {
		if _, ok := schedqDefaults[field]; !ok {
			t.Errorf("schedqDefaults lacks %s (--%s)", field, flag)
		}
		f := sched.Lookup(flag)
		if f == nil {
			t.Fatalf("no flag --%s", flag)
		}
		def := f.DefValue
		if def == "[]" {
			def = ""
		}
		// An empty list is no value: --fair-namespace-weights takes
		// none, and --history-label= is refused (TestEmptyFlagRefused).
		if flag != "fair-namespace-weights" && flag != "history-label" {
			args = append(args, "--"+flag+"="+def)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"the file alone", args[:6]},
		{"with every flag at its default", args},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execute(tc.args...)
			if err == nil || !strings.Contains(err.Error(), "API server "+server+" is not reachable") {
				t.Fatalf("%v: err %v, want the flags and the file accepted and the stand-in contacted", tc.args, err)
			}
		})
	}
}

// schedqDefaultsFlag is the flag of the setting at field.
func schedqDefaultsFlag(field string) (string, bool) {
	for flag, f := range app.SettingsFields() {
		if f == field {
			return flag, true
		}
	}
	return "", false
}
