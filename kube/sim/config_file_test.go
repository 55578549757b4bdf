package sim

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// configScenario is a small scenario whose scheduler.config is file,
// with the scheduler and queue settings extra adds.
func configScenario(file, scheduler, queue string) string {
	return "name: cfg\nduration: 1m\nscheduler: {config: " + file + scheduler + "}\nqueue: {" + queue + "}\n" +
		"nodes: [{name: n, count: 2, capacity: {cpu: \"4\", memory: 8Gi}}]\npods: [{name: p, count: 2, requests: {cpu: \"1\"}}]\n"
}

// TestConfigFileSettings: the settings a KubeSchedulerConfiguration file
// gives itself (percentageOfNodesToScore, the profile's first, and the pod
// backoffs) decide in the simulator as in schedq scheduler; a scenario
// setting that contradicts one is refused with both named; what the file
// leaves unset leaves the scenario's; and what schedq does not honour
// (extenders, parallelism, leaderElection, clientConnection,
// delayCacheUntilActive) is refused,
// never silently ignored.
func TestConfigFileSettings(t *testing.T) {
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	for _, tc := range []struct {
		name, file, scheduler, queue string
		percent                      int
		initial, max                 string // the report's backoff settings
		want                         string // the error, if refused
	}{
		{name: "file's settings", file: "percentageOfNodesToScore: 30\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\nprofiles: [{schedulerName: x, percentageOfNodesToScore: 50}]\n",
			percent: 50, initial: "2s", max: "20s"},
		{name: "top-level percentage", file: "percentageOfNodesToScore: 30\n", percent: 30, initial: "1s", max: "10s"},
		{name: "two profiles: the top-level percentage for b, a's own in its framework", file: "percentageOfNodesToScore: 30\nprofiles: [{schedulerName: a, percentageOfNodesToScore: 50}, {schedulerName: b}]\n",
			percent: 30, initial: "1s", max: "10s"},
		{name: "scenario's where the file sets none", file: "podMaxBackoffSeconds: 20\n", scheduler: ", percentageOfNodesToScore: 40", queue: "initialBackoff: 3s",
			percent: 40, initial: "3s", max: "20s"},
		{name: "scenario agrees", file: "podInitialBackoffSeconds: 2\npercentageOfNodesToScore: 30\n", scheduler: ", percentageOfNodesToScore: 30", queue: "initialBackoff: 2s",
			percent: 30, initial: "2s", max: "10s"},
		{name: "percentage contradicted", file: "profiles: [{percentageOfNodesToScore: 50}]\n", scheduler: ", percentageOfNodesToScore: 30",
			want: "scheduler.percentageOfNodesToScore: 30, but scheduler.config CFG sets percentageOfNodesToScore 50: the file decides"},
		{name: "initial backoff contradicted", file: "podInitialBackoffSeconds: 2\n", queue: "initialBackoff: 1s",
			want: "queue.initialBackoff: 1s, but scheduler.config CFG sets podInitialBackoffSeconds 2"},
		{name: "max backoff contradicted", file: "podMaxBackoffSeconds: 20\n", queue: "maxBackoff: 0s",
			want: "queue.maxBackoff: 0s, but scheduler.config CFG sets podMaxBackoffSeconds 20"},
		{name: "backoff off contradicted", file: "podMaxBackoffSeconds: 20\n", queue: "disableBackoff: true",
			want: "queue.disableBackoff: true, but scheduler.config CFG sets the pod backoff"},
		{name: "file's initial above the scenario's max", file: "podInitialBackoffSeconds: 5\n", queue: "maxBackoff: 3s",
			want: "queue.initialBackoff: with the backoff of scheduler.config CFG: 5s is more than queue.maxBackoff (3s)"},
		{name: "extenders", file: "extenders: [{urlPrefix: 'http://x', filterVerb: filter}]\n", want: "scheduler.config: CFG: extenders: not supported"},
		{name: "parallelism", file: "parallelism: 4\n", want: "scheduler.config: CFG: parallelism: the cycle runs on one goroutine"},
		{name: "leaderElection", file: "leaderElection: {leaderElect: false}\n", want: "scheduler.config: CFG: leaderElection: the simulator runs one scheduler"},
		{name: "delayCacheUntilActive", file: "delayCacheUntilActive: true\n", want: "scheduler.config: CFG: delayCacheUntilActive: the simulator runs one scheduler"},
		{name: "clientConnection", file: "clientConnection: {qps: 10}\n", want: "scheduler.config: CFG: clientConnection: the simulator has no API server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sched.yaml")
			if err := os.WriteFile(file, []byte(head+tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			sc, err := Parse([]byte(configScenario(file, tc.scheduler, tc.queue)))
			if tc.want != "" {
				if want := strings.ReplaceAll(tc.want, "CFG", file); err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := runSim(t, sc)
			st := s.report().Settings
			if got := s.sc.Scheduler.PercentageOfNodesToScore; got != tc.percent || st.InitialBackoff != tc.initial || st.MaxBackoff != tc.max {
				t.Errorf("percentageOfNodesToScore %d, backoff %s..%s; want %d, %s..%s", got, st.InitialBackoff, st.MaxBackoff, tc.percent, tc.initial, tc.max)
			}
		})
	}
}

// TestSnapshotPodsOfTheProfile: the snapshot's pending pods that the
// simulated scheduler places are those of its profile's schedulerName, as
// schedq scheduler with the same file would place: the default
// scheduler's (with no file, or a profile of that name), or the named
// profile's, leaving the default scheduler's alone; with two profiles,
// the pods of both, each under its own.
func TestSnapshotPodsOfTheProfile(t *testing.T) {
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	for _, tc := range []struct {
		name, file         string // file "": no scheduler.config
		pending, leftAlone int
	}{
		{name: "no file", pending: 2, leftAlone: 1},
		{name: "profile without a name", file: "profiles: [{}]\n", pending: 2, leftAlone: 1},
		{name: "volcano's profile", file: "profiles: [{schedulerName: volcano}]\n", pending: 1, leftAlone: 2},
		{name: "both profiles", file: "profiles: [{schedulerName: volcano}, {schedulerName: default-scheduler}]\n", pending: 3, leftAlone: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := snapshotScenario("testdata/snapshot/cluster.yaml")
			if tc.file != "" {
				sc.Scheduler.Config = filepath.Join(t.TempDir(), "sched.yaml")
				if err := os.WriteFile(sc.Scheduler.Config, []byte(head+tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := run(t, sc)
			if got := r.Snapshot; got == nil || got.Pending != tc.pending || got.LeftAlone != tc.leftAlone {
				t.Fatalf("snapshot %+v, want %d pending placed, %d left to other schedulers", got, tc.pending, tc.leftAlone)
			}
		})
	}
}

// schedqScenario is a small NodeArrival: pods of two namespaces wait for
// nodes that join later, a few of them for an SSD node of the last wave,
// so that the wake budget and fairness each change the run.
const schedqScenario = `name: schedq-settings
duration: 3m
nodes: [{name: node, count: 2, capacity: {cpu: "4", memory: 16Gi}}]
pods:
- {name: first, count: 8, requests: {cpu: "1", memory: 1Gi}}
- {name: a, namespace: team-a, count: 12, requests: {cpu: "1", memory: 1Gi}, arrival: {at: 2s, rate: 50}}
- {name: b, namespace: team-b, count: 4, requests: {cpu: "1", memory: 1Gi}, arrival: {at: 3s, rate: 50}}
- {name: ssd, count: 4, requests: {cpu: "1", memory: 1Gi}, nodeSelector: {disktype: ssd}, arrival: {at: 3s, rate: 20}}
events:
- {at: 30s, addNodes: {name: wave1, count: 2, capacity: {cpu: "4", memory: 16Gi}}}
- {at: 60s, addNodes: {name: wave2, count: 2, capacity: {cpu: "4", memory: 16Gi}}}
- {at: 90s, addNodes: {name: ssd-wave, count: 1, capacity: {cpu: "4", memory: 16Gi}, labels: {disktype: ssd}}}
`

// TestConfigFileSchedqSettings: schedq's own settings in the file's
// Schedq args (profile.SchedqArgs) reach the simulator where they apply:
// the wake budget and fairness give the run the same queue settings,
// attempts and waits per namespace as the scenario's own fields, and
// other ones than without them; a scenario field that
// contradicts one is refused naming both; the settings that only schedq
// scheduler has (the fence margin, the forecasts' history, the stall
// timeout) are refused, each named.
func TestConfigFileSchedqSettings(t *testing.T) {
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: Schedq\n    args: "
	const at = "profiles[0].pluginConfig[0].args"
	load := func(t *testing.T, args string, queue func(*QueueSpec)) (*Scenario, error) {
		t.Helper()
		sc, err := Parse([]byte(schedqScenario))
		if err != nil {
			t.Fatal(err)
		}
		if args != "" {
			file := filepath.Join(t.TempDir(), "sched.yaml")
			if err := os.WriteFile(file, []byte(head+args+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			sc.Scheduler.Config = file
		}
		if queue != nil {
			queue(&sc.Queue)
		}
		return sc, sc.Validate()
	}
	for _, tc := range []struct {
		name  string
		args  string
		field func(*QueueSpec) // the scenario's own way to the same run
	}{
		{"wake budget off", "{wakeBudget: false}", func(q *QueueSpec) { q.WakeBudget = new(bool) }},
		{"fairness", "{fairness: {namespaces: true, weights: {team-b: 2}, halfLife: 30s}}", func(q *QueueSpec) {
			q.Fairness, q.FairnessWeights, q.FairnessHalfLife = true, map[string]float64{"team-b": 2}, 30*time.Second
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byFile, err := load(t, tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			byField, err := load(t, "", tc.field)
			if err != nil {
				t.Fatal(err)
			}
			byNeither, err := load(t, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			f, g, n := runSim(t, byFile), runSim(t, byField), runSim(t, byNeither)
			if !reflect.DeepEqual(f.sc.Queue, g.sc.Queue) {
				t.Errorf("queue by the file %+v, by the scenario %+v", f.sc.Queue, g.sc.Queue)
			}
			fr, gr, nr := f.report(), g.report(), n.report()
			fr.Settings.Scoring, gr.Settings.Scoring, nr.Settings.Scoring = "", "", "" // the file's name, or the default profile
			if fr.Attempts != gr.Attempts || fr.Settings != gr.Settings || !reflect.DeepEqual(fr.ByNamespace, gr.ByNamespace) {
				t.Errorf("by the file: %d attempts, %+v, %+v; by the scenario: %d, %+v, %+v", fr.Attempts, fr.Settings, fr.ByNamespace, gr.Attempts, gr.Settings, gr.ByNamespace)
			}
			if fr.Attempts == nr.Attempts && reflect.DeepEqual(fr.ByNamespace, nr.ByNamespace) {
				t.Errorf("the file's setting changed nothing in the run: %d attempts, %+v", fr.Attempts, fr.ByNamespace)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		args  string
		queue func(*QueueSpec)
		want  []string
	}{
		{"wake budget contradicted", "{wakeBudget: false}", func(q *QueueSpec) { q.WakeBudget = new(true) },
			[]string{"queue.wakeBudget: true, but scheduler.config CFG sets " + at + ".wakeBudget false: the file decides"}},
		{"fairness contradicted", "{fairness: {namespaces: false}}", func(q *QueueSpec) { q.Fairness = true },
			[]string{"queue.fairness: true, but scheduler.config CFG sets " + at + ".fairness.namespaces false"}},
		{"weights contradicted", "{fairness: {namespaces: true, weights: {default: 2}}}", func(q *QueueSpec) {
			q.Fairness, q.FairnessWeights = true, map[string]float64{"default": 3}
		}, []string{"queue.fairnessWeights: map[default:3], but scheduler.config CFG sets " + at + ".fairness.weights map[default:2]"}},
		{"half-life contradicted", "{fairness: {namespaces: true, halfLife: 1m}}", func(q *QueueSpec) { q.Fairness, q.FairnessHalfLife = true, time.Minute/2 },
			[]string{"queue.fairnessHalfLife: 30s, but scheduler.config CFG sets " + at + ".fairness.halfLife 1m0s"}},
		{"weights without fairness", "{fairness: {weights: {default: 2}}}", nil,
			[]string{"queue.fairness: with the Schedq args of scheduler.config CFG: fairnessWeights and fairnessHalfLife need fairness: true"}},
		{"fence margin", "{fenceMargin: 3s}", nil, []string{"scheduler.config: CFG: " + at + ".fenceMargin: schedq scheduler's only"}},
		{"history", "{history: {tail: exponential}}", nil, []string{"scheduler.config: CFG: " + at + ".history: schedq scheduler's and schedq whatif's only"}},
		{"history file", "{history: {file: /var/lib/schedq/history.jsonl}}", nil, []string{"scheduler.config: CFG: " + at + ".history: schedq scheduler's and schedq whatif's only"}},
		{"stall timeout", "{stallTimeout: 5m}", nil, []string{"scheduler.config: CFG: " + at + ".stallTimeout: schedq scheduler's only"}},
		{"bad args", "{fairness: {halfLife: soon}}", nil, []string{"CFG: " + at + `.fairness.halfLife: Invalid value: "soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := load(t, tc.args, tc.queue)
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "CFG", sc.Scheduler.Config); err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q", err, w)
				}
			}
		})
	}
	// A file that repeats the scenario's own values is accepted.
	if _, err := load(t, "{wakeBudget: false, fairness: {namespaces: true}}", func(q *QueueSpec) { q.WakeBudget, q.Fairness = new(bool), true }); err != nil {
		t.Errorf("agreeing file and scenario: %v", err)
	}
}
