package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoProfiles is a KubeSchedulerConfiguration of profile a (the default
// plugins) and profile b, which packs (NodeResourcesFit's MostAllocated,
// without BalancedAllocation) and ignores taints (TaintToleration's
// filter disabled).
const twoProfiles = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
- schedulerName: b
  plugins:
    filter:
      disabled: [{name: TaintToleration}]
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}]
`

// writeConfig writes a KubeSchedulerConfiguration file for t.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sched.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// nodesOf returns the node of each pod of group g (NAME-0, NAME-1...),
// "" for a pending one.
func nodesOf(s *sim, g string, n int) []string {
	out := make([]string, n)
	for i := range out {
		for k, p := range s.cl.pods {
			if k.Name == podName(&PodGroup{Name: g}, i) {
				out[i] = p.Spec.NodeName
			}
		}
	}
	return out
}

// TestTwoProfilesPlacePodsTheirWay: a scheduler.config of two profiles
// runs both, as schedq scheduler does: the pods of a group that names
// profile b (pods[].schedulerName) are placed by b's plugins, the others
// by the first profile's, a. On two free nodes a spreads its pods and b
// packs its own on one node; a taint keeps a's pods off a node, not b's.
// The report counts each profile's pods.
func TestTwoProfilesPlacePodsTheirWay(t *testing.T) {
	for _, tc := range []struct {
		name, nodes, b string
		check          func(t *testing.T, a, b []string)
		line           string // the report's line for profile b
	}{
		{
			name:  "b packs where a spreads",
			nodes: "[{name: n, count: 2, capacity: {cpu: \"8\", memory: 16Gi}}]",
			b:     "schedulerName: b",
			check: func(t *testing.T, a, b []string) {
				if count(a, "n-0") != 2 || count(a, "n-1") != 2 {
					t.Errorf("profile a's pods on %v, want two on each node (LeastAllocated)", a)
				}
				if count(b, b[0]) != 4 || b[0] == "" {
					t.Errorf("profile b's pods on %v, want all on one node (MostAllocated)", b)
				}
			},
			line: "profile b: 4 scheduled, 0 pending, of 4",
		},
		{
			name:  "b ignores the taint a respects",
			nodes: "[{name: plain, count: 1, capacity: {cpu: \"2\", memory: 16Gi}}, {name: tainted, count: 1, capacity: {cpu: \"8\", memory: 16Gi}, taints: [{key: k, value: v}]}]",
			b:     "schedulerName: b",
			check: func(t *testing.T, a, b []string) {
				if count(a, "plain-0") != 2 || count(a, "") != 2 {
					t.Errorf("profile a's pods on %v, want two on plain-0 and two pending (tainted-0 is tainted)", a)
				}
				if count(b, "tainted-0") != 4 {
					t.Errorf("profile b's pods on %v, want all four on tainted-0 (b does not filter taints)", b)
				}
			},
			line: "profile b: 4 scheduled, 0 pending, of 4",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, twoProfiles)
			sc, err := Parse([]byte("name: two\nduration: 1m\nscheduler: {config: " + file + "}\nnodes: " + tc.nodes + "\n" +
				"pods:\n- {name: pa, count: 4, requests: {cpu: \"1\"}}\n- {name: pb, count: 4, " + tc.b + ", requests: {cpu: \"1\"}, arrival: {at: 10s}}\n"))
			if err != nil {
				t.Fatal(err)
			}
			s := runSim(t, sc)
			a, b := nodesOf(s, "pa", 4), nodesOf(s, "pb", 4)
			tc.check(t, a, b)
			if out := text(s.report()); !strings.Contains(out, "  "+tc.line+"\n") || !strings.Contains(out, "  profile a: ") {
				t.Errorf("report lacks a line per profile (%q):\n%s", tc.line, out)
			}
		})
	}
}

// count is how many of list are s.
func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestUnknownSchedulerNameRefused: a pod group whose schedulerName names
// no profile of scheduler.config (or of the default profile, without
// one) is refused at validation, by its field path, with the profiles
// named.
func TestUnknownSchedulerNameRefused(t *testing.T) {
	two := writeConfig(t, twoProfiles)
	for _, tc := range []struct{ name, scheduler, want string }{
		{"not in the file", "{config: " + two + "}", `pods[1].schedulerName: "c" names no profile of ` + two + ` (its profiles: "a", "b")`},
		{"default profile", "{}", `pods[1].schedulerName: "c" names no profile of kube-scheduler's default configuration (its profiles: "default-scheduler")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("name: x\nscheduler: " + tc.scheduler + "\nnodes: [{name: n, count: 1, capacity: {cpu: \"1\"}}]\n" +
				"pods: [{name: p, count: 1}, {name: q, count: 1, schedulerName: c}]\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOneProfileNamedByGroup: with one profile, a group may name it, and
// its pods are the simulated scheduler's as those of a group that names
// none; the report has no line per profile.
func TestOneProfileNamedByGroup(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 1m\nnodes: [{name: n, count: 1, capacity: {cpu: \"2\"}}]\n" +
		"pods: [{name: p, count: 1, requests: {cpu: \"1\"}}, {name: q, count: 1, schedulerName: default-scheduler, requests: {cpu: \"1\"}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, sc)
	if r.Scheduled != 2 || r.ByProfile != nil {
		t.Errorf("%d scheduled, by profile %v; want 2, none", r.Scheduled, r.ByProfile)
	}
}
