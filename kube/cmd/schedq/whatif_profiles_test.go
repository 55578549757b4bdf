package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWhatIfOfEveryProfile: schedq whatif on a scenario whose
// scheduler.config has two profiles, b without TaintToleration's filter,
// on one tainted node where the scenario's pod of b runs: a pod naming b
// fits now there, one naming a (or
// none: the first profile's) does not, and one naming neither profile
// is refused with both named.
func TestWhatIfOfEveryProfile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sched.yaml")
	scenario := filepath.Join(dir, "two.yaml")
	for file, body := range map[string]string{
		cfg: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: b\n" +
			"  plugins: {filter: {disabled: [{name: TaintToleration}]}}\n",
		scenario: "name: two\nscheduler: {config: " + cfg + "}\nnodes: [{name: n, count: 1, capacity: {cpu: \"8\", memory: 32Gi}, taints: [{key: k, value: v}]}]\n" +
			"pods: [{name: pb, count: 1, schedulerName: b, requests: {cpu: \"1\"}}]\n",
	} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, scheduler, want, wantErr string }{
		{"profile b", "b", "default/w: fits now on n-0", ""},
		{"profile a", "a", "default/w: does not fit now", ""},
		{"no name: the first profile", "", "default/w: does not fit now", ""},
		{"neither", "c", "", `schedulerName "c" is not one of the scheduler's profiles ("a", "b")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: app, image: x, resources: {requests: {cpu: \"1\"}}}]\n"
			if tc.scheduler != "" {
				pod += "  schedulerName: " + tc.scheduler + "\n"
			}
			f := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(f, []byte(pod), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			root := newRoot(&out, &errOut)
			root.SetArgs([]string{"whatif", "--scenario", scenario, "--at", "1s", "-f", f})
			err := root.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out.String(), tc.want) {
				t.Errorf("error %v, output:\n%s\nwant %q", err, out.String(), tc.want)
			}
		})
	}
}
