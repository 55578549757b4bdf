package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func runWhatIf(t *testing.T, manifest string, args ...string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(append([]string{"whatif", "--scenario", "PriorityPressure", "--at", "1m", "-f", f}, args...))
	err := root.Execute()
	return out.String(), err
}

const urgentPod = `apiVersion: v1
kind: Pod
metadata: {name: urgent}
spec:
  priority: 2000
  containers: [{name: app, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`

func TestWhatIf(t *testing.T) {
	a, err := runWhatIf(t, urgentPod)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a, "default/urgent: fits on node-") || !strings.Contains(a, "by preempting default/low-") ||
		!strings.Contains(a, "100 pods pending") {
		t.Errorf("got:\n%s\nwant the pod to preempt a low pod, with the 100 recreated low pods pending", a)
	}
	b, _ := runWhatIf(t, urgentPod)
	if a != b {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
}

// TestWhatIfBadInput: bad input is an error naming it, printed before
// anything else. The cases with badSnap, a snapshot only the replay
// reads, show that the flag is refused before the replay starts.
func TestWhatIfBadInput(t *testing.T) {
	badSnap := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badSnap, []byte("apiVersion: v1\nkind: Nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noDuration := filepath.Join(t.TempDir(), "small.yaml")
	if err := os.WriteFile(noDuration, []byte("name: small\nnodes: [{name: node, count: 1, capacity: {cpu: \"8\", memory: 32Gi}}]\npods: [{name: p, count: 1, requests: {cpu: \"1\"}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, manifest string
		args           []string
		want           string
	}{
		{"other kind", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", nil, "kind Service is not a Pod or a PodGroup"},
		{"not yaml", "{", nil, "-f "},
		// A decoding error says what is wrong in a line, not the decoder's
		// message quoting the whole document.
		{"no kind", "name: s\nduration: 1m\nnodes: [{name: " + strings.Repeat("n", 300) + "}]\n", nil, "m.yaml: document 1: no kind field (want Pod or PodGroup)"},
		{"unregistered kind", "apiVersion: v1\nkind: Nonsense\nmetadata: {name: x}\n", nil, "m.yaml: document 1: Nonsense x: this kind is not one a what-if adds (Pod or PodGroup)"},
		{"request not a quantity", strings.Replace(urgentPod, `cpu: "1"`, "cpu: one", 1), nil, `m.yaml: document 1: Pod urgent: spec.containers[0].resources.requests.cpu: "one" is not a quantity`},
		{"no apiVersion", "kind: Pod\nmetadata: {name: p}\n", nil, "m.yaml: document 1: Pod p: no apiVersion field"},
		{"missing namespace", strings.Replace(urgentPod, "{name: urgent}", "{name: urgent, namespace: nowhere}", 1), nil, `m.yaml: pod nowhere/urgent: namespace "nowhere" does not exist`},
		{"horizon", urgentPod, []string{"--horizon", "0s"}, "--horizon: must be more than 0 and at most 720h0m0s, got 0s"},
		{"horizon before the replay", urgentPod, []string{"--snapshot", badSnap, "--horizon", "-1h"}, "--horizon: must be more than 0 and at most 720h0m0s, got -1h0m0s"},
		{"horizon too long before the replay", urgentPod, []string{"--snapshot", badSnap, "--horizon", "1000h"}, "--horizon: must be more than 0 and at most 720h0m0s, got 1000h0m0s"},
		{"output", urgentPod, []string{"-o", "yaml"}, `--output: "yaml"`},
		{"at past the scenario's end", urgentPod, []string{"--at", "6m"}, "--at 6m0s: past the end of PriorityPressure at 5m0s (the scenario's duration): there is no state there to add to"},
		{"at past the default end", urgentPod, []string{"--scenario", noDuration, "--at", "16m"}, "--at 16m0s: past the end of small at 15m0s (the default duration of a scenario that sets none)"},
		{"history label not a label key", urgentPod, []string{"--snapshot", badSnap, "--history-label", "team name"}, `--history-label: "team name" is not a label key`},
		{"history label twice", urgentPod, []string{"--snapshot", badSnap, "--history-label", "team,team"}, `--history-label: "team" is listed twice`},
		{"history tail", urgentPod, []string{"--snapshot", badSnap, "--history-tail", "short"}, `--history-tail: history tail "short": not longest or exponential`},
		{"trace speed zero", urgentPod, []string{"--snapshot", badSnap, "--trace", "../../sim/testdata/alibaba", "--trace-speed", "0"}, "--trace-speed: must be more than 0 and at most 1000000, got 0"},
		{"trace speed without a trace", urgentPod, []string{"--snapshot", badSnap, "--trace-speed", "2"}, "--trace-speed 2: there is no trace to speed up"},
		{"gpu model without a trace", urgentPod, []string{"--snapshot", badSnap, "--gpu-model", "device"}, "--gpu-model: there is no trace"},
		{"gpu model unknown", urgentPod, []string{"--snapshot", badSnap, "--trace", "../../sim/testdata/alibaba", "--gpu-model", "cards"}, `--gpu-model: scheduler.gpuModel: "cards" is not device, capacity or dra`},
		// What needs no state is checked before the replay.
		{"other scheduler before the replay", strings.Replace(urgentPod, "spec:\n", "spec:\n  schedulerName: other\n", 1), []string{"--snapshot", badSnap},
			`pod default/urgent: schedulerName "other" is not one of the scheduler's profiles`},
		{"bound pod before the replay", strings.Replace(urgentPod, "spec:\n", "spec:\n  nodeName: n1\n", 1), []string{"--snapshot", badSnap},
			"pod default/urgent: names node n1; a what-if pod is one not yet scheduled"},
		{"runtime before the replay", strings.Replace(urgentPod, "{name: urgent}", "{name: urgent, annotations: {schedq.io/expected-runtime: soon}}", 1), []string{"--snapshot", badSnap},
			"pod default/urgent: "},
		{"one pod twice before the replay", urgentPod + "---\n" + urgentPod, []string{"--snapshot", badSnap}, "pod default/urgent: a pod of that name exists already"},
		{"pod without a name before the replay", strings.Replace(urgentPod, "{name: urgent}", "{labels: {a: b}}", 1), []string{"--snapshot", badSnap}, "pod 1: no name"},
		{"other scheduler", strings.Replace(urgentPod, "spec:\n", "spec:\n  schedulerName: other\n", 1), nil,
			`m.yaml: pod default/urgent: schedulerName "other" is not one of the scheduler's profiles ("schedq", "default-scheduler")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runWhatIf(t, c.manifest, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
			if slices.Contains(c.args, badSnap) && strings.Contains(err.Error(), "snapshot") {
				t.Errorf("the replay started before the check: %v", err)
			}
			if out != "" {
				t.Errorf("printed %q on an error", out)
			}
			if err != nil && (len(err.Error()) > 500 || strings.Contains(err.Error(), strings.Repeat("n", 300))) {
				t.Errorf("the error quotes the document: %v", err)
			}
		})
	}
}

// TestWhatIfTraceSpeed: --trace-speed brings the trace's arrivals closer
// in the replay the what-if starts from: at 15s, the pods created from
// 20s to 60s have arrived only when the speed is 10.
func TestWhatIfTraceSpeed(t *testing.T) {
	f := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(f, []byte(urgentPod), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, speed, want string
	}{
		{"as in the trace", "1", ", 0 pods pending"},
		{"ten times closer", "10", ", 3 pods pending"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := executeErr("whatif", "--trace", "../../sim/testdata/alibaba", "--at", "15s", "--trace-speed", c.speed, "-f", f)
			if err != nil || !strings.Contains(out, c.want) {
				t.Fatalf("error %v, output %q; want %q", err, out, c.want)
			}
		})
	}
}

// TestWhatIfHistoryFromConfig: the history of the Schedq args of the
// scenario's scheduler.config is the replay's, as schedq scheduler takes
// it: with the file's labels (team) the running pods of a team no
// finished pod had end at an unknown time, where without them (their
// owner kind and namespace) the finished pods' runtimes serve. A flag
// that repeats the file's value is accepted, one that contradicts it
// refused naming both.
func TestWhatIfHistoryFromConfig(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	cfg := write("hist.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n"+
		"  - name: Schedq\n    args: {history: {labels: [team], tail: exponential}}\n")
	const body = "duration: 2h\nnodes: [{name: node, count: 1, capacity: {cpu: \"100\", memory: 800Gi}}]\npods:\n" +
		"- {name: done, count: 40, requests: {cpu: \"1\"}, labels: {team: a}, lifetime: {distribution: fixed, mean: 10m}}\n" +
		"- {name: long, count: 2, requests: {cpu: \"1\"}, labels: {team: b}, lifetime: {distribution: fixed, mean: 1h}, arrival: {at: 40m}}\n"
	write("none.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n"+
		"  - name: Schedq\n    args: {history: {labels: []}}\n")
	withFile := write("with.yaml", "name: with\nscheduler: {config: hist.yaml}\n"+body)
	withNone := write("with-none.yaml", "name: with-none\nscheduler: {config: none.yaml}\n"+body)
	without := write("without.yaml", "name: without\n"+body)
	const unknown = "2 running pods end at an unknown time"
	for _, tc := range []struct {
		name, scenario string
		flags          []string
		want           string // in the output; "!" + text: not in it
		wantErr        string
	}{
		{"the file's labels", withFile, nil, unknown, ""},
		{"no file", without, nil, "!" + unknown, ""},
		{"flags repeating the file's", withFile, []string{"--history-label", "team", "--history-tail", "exponential"}, unknown, ""},
		{"label contradicting the file's", withFile, []string{"--history-label", "app"}, "",
			"--history-label=app: scheduler.config " + cfg + ": profiles[0].pluginConfig[0].args.history.labels is team; give it in one place"},
		{"label against the file's empty list", withNone, []string{"--history-label", "team"}, "",
			"--history-label=team: scheduler.config " + filepath.Join(dir, "none.yaml") + ": profiles[0].pluginConfig[0].args.history.labels is [] (none); give it in one place"},
		{"tail contradicting the file's", withFile, []string{"--history-tail", "longest"}, "",
			"--history-tail=longest: scheduler.config " + cfg + ": profiles[0].pluginConfig[0].args.history.tail is exponential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(m, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec: {containers: [{name: app, image: x}]}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			root := newRoot(&out, &errOut)
			root.SetArgs(append([]string{"whatif", "--scenario", tc.scenario, "--at", "45m", "--known-runtimes=false", "-f", m}, tc.flags...))
			err := root.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if text, not := strings.CutPrefix(tc.want, "!"); strings.Contains(out.String(), text) == not {
				t.Errorf("output:\n%s\nwant %q (! = not)", out.String(), tc.want)
			}
		})
	}
}
