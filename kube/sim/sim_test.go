package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden summaries in testdata")

func run(t testing.TB, sc *Scenario) *Report {
	t.Helper()
	r, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func load(t testing.TB, name string) *Scenario {
	t.Helper()
	sc, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func text(r *Report) string {
	var b bytes.Buffer
	r.WriteText(&b, false)
	return b.String()
}

// longReplay skips t under the race detector: t replays built-in
// scenarios of thousands of pods on kube-scheduler's plugins on one
// goroutine, where the detector has nothing to find and which take many
// minutes with it. .ci/run runs the package again without -race.
func longReplay(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("a long single-threaded replay: checked without -race (.ci/run runs kube/sim so)")
	}
}

// TestGolden runs every built-in scenario and compares its summary with
// testdata/NAME.golden. Regenerate with: go test ./sim -run Golden -update
func TestGolden(t *testing.T) {
	longReplay(t)
	for _, name := range Builtins() {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", name+".golden"), text(run(t, load(t, name))))
		})
	}
}

// TestDeterminism: the same scenario and seed give the same bytes, text
// and JSON; another seed may differ.
func TestDeterminism(t *testing.T) {
	longReplay(t)
	sc := load(t, "MixedChurn")
	a, b := run(t, sc), run(t, load(t, "MixedChurn"))
	if text(a) != text(b) {
		t.Fatal("two runs of one seed differ")
	}
	a.Wall, b.Wall = nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("JSON of two runs of one seed differ")
	}
}

// TestInvariantsHoldThroughout runs a scenario with the queue's invariant
// checker after every step.
func TestInvariantsHoldThroughout(t *testing.T) {
	longReplay(t)
	sc := load(t, "MixedChurn")
	if _, err := Run(sc, Options{CheckInvariants: true}); err != nil {
		t.Fatal(err)
	}
}

// Each queue feature has a scenario whose result shows it.
func TestFeatures(t *testing.T) {
	longReplay(t)
	t.Run("hints save the attempts that irrelevant nodes would cause", func(t *testing.T) {
		on := run(t, load(t, "NodeArrival"))
		sc := load(t, "NodeArrival")
		sc.Set("hints", "false")
		off := run(t, sc)
		if off.Attempts <= on.Attempts || off.WastedAttempts <= on.WastedAttempts {
			t.Fatalf("hints off: %d attempts (%d wasted); on: %d (%d)", off.Attempts, off.WastedAttempts, on.Attempts, on.WastedAttempts)
		}
		if on.Scheduled != on.Pods || off.Scheduled != off.Pods {
			t.Fatal("every pod of NodeArrival must be scheduled in the end")
		}
	})
	t.Run("gated pods cost no attempts", func(t *testing.T) {
		r := run(t, load(t, "SchedulingWhileGated"))
		if r.Attempts != r.Scheduled || r.Peak.Gated != 10000 || r.Scheduled != 150 {
			t.Fatalf("attempts %d, scheduled %d, peak gated %d", r.Attempts, r.Scheduled, r.Peak.Gated)
		}
	})
	t.Run("high priority preempts its way in", func(t *testing.T) {
		r := run(t, load(t, "PriorityPressure"))
		if len(r.ByPriority) != 2 || r.ByPriority[0].Priority != 1000 || r.ByPriority[0].Scheduled != 100 {
			t.Fatalf("by priority %+v", r.ByPriority)
		}
		x := r.Preemption
		if x == nil || x.Preemptions != 100 || x.Victims != 100 || x.Recreated != 100 ||
			len(x.ByPriority) != 2 || x.ByPriority[1] != (PreemptionCount{Priority: 0, Victims: 100}) {
			t.Fatalf("preemption %+v", x)
		}
	})
	t.Run("without preemption the full cluster keeps them out", func(t *testing.T) {
		sc := load(t, "PriorityPressure")
		sc.Scheduler.Preemption = nil
		r := run(t, sc)
		if r.Preemption != nil || r.ByPriority[0].Scheduled != 0 {
			t.Fatalf("preemption %+v, by priority %+v", r.Preemption, r.ByPriority)
		}
	})
	t.Run("pods that fit nowhere park after one attempt", func(t *testing.T) {
		r := run(t, load(t, "Unschedulable"))
		if r.Pending != 200 || r.Scheduled != 2000 || r.Attempts != 2200 {
			t.Fatalf("pending %d, scheduled %d, attempts %d", r.Pending, r.Scheduled, r.Attempts)
		}
		if len(r.PendingReasons) != 1 || !strings.Contains(r.PendingReasons[0].Label, "Insufficient cpu") {
			t.Fatalf("pending reasons %+v", r.PendingReasons)
		}
	})
	t.Run("pop from backoff keeps the scheduler busy", func(t *testing.T) {
		on := run(t, load(t, "EarlyRetry"))
		sc := load(t, "EarlyRetry")
		sc.Set("popFromBackoff", "false")
		off := run(t, sc)
		if on.Incoming == nil || off.Incoming == nil {
			t.Fatal("no incoming counts")
		}
		popped := func(r *Report) int {
			for _, c := range r.Incoming {
				if c.Event == "PopFromBackoffQ" {
					return c.Count
				}
			}
			return 0
		}
		if popped(off) != 0 {
			t.Fatalf("popFromBackoff=false still popped %d from backoff", popped(off))
		}
		if popped(on) == 0 {
			t.Fatal("popFromBackoff=true never popped from backoff")
		}
		if on.TimeToSchedule.P50 >= off.TimeToSchedule.P50 {
			t.Fatalf("time to schedule p50 %.2fs with pop-from-backoff, %.2fs without", on.TimeToSchedule.P50, off.TimeToSchedule.P50)
		}
	})
	t.Run("backoff holds failed pods back; disabled, it holds none", func(t *testing.T) {
		on := run(t, load(t, "EarlyRetry"))
		sc := load(t, "EarlyRetry")
		sc.Set("disableBackoff", "true")
		off := run(t, sc)
		if on.Peak.Backoff == 0 || incoming(on, "backoff", "") == 0 {
			t.Fatalf("with backoff: peak backoffQ %d, %d pods sent to backoffQ", on.Peak.Backoff, incoming(on, "backoff", ""))
		}
		if off.Peak.Backoff != 0 || incoming(off, "backoff", "") != 0 {
			t.Fatalf("backoff off: peak backoffQ %d, %d pods sent to backoffQ", off.Peak.Backoff, incoming(off, "backoff", ""))
		}
	})
	t.Run("the leftover flush retries pods no event wakes", func(t *testing.T) {
		sc := parse(t, `
name: leftover
nodes: [{name: n, count: 2, capacity: {cpu: "4", memory: 16Gi, pods: "110"}}]
pods:
  - {name: huge, count: 5, requests: {cpu: "64", memory: 1Gi}}
  - {name: small, count: 60, requests: {cpu: 100m, memory: 128Mi}, arrival: {at: 1s, rate: 2}}
queue: {maxInUnschedulable: 5s, flushUnschedulableInterval: 5s}
`)
		r := run(t, sc)
		if got := incoming(r, "", "UnschedulableTimeout"); got < 5 {
			t.Fatalf("%d leftover retries, want each huge pod retried while the small ones arrive", got)
		}
		if r.Attempts <= 65 {
			t.Fatalf("%d attempts: the parked pods were never retried", r.Attempts)
		}
	})
	t.Run("a pod waiting on affinity moves when its peer is bound", func(t *testing.T) {
		sc := parse(t, `
name: affinity
nodes: [{name: n, count: 5, capacity: {cpu: "4", memory: 16Gi, pods: "110"}}]
pods:
  - name: web
    count: 3
    requests: {cpu: 100m, memory: 128Mi}
    affinity: [{matchLabels: {app: db}, topologyKey: kubernetes.io/hostname}]
  - {name: db, count: 1, requests: {cpu: 100m, memory: 128Mi}, labels: {app: db}, arrival: {at: 10s}}
`)
		r := run(t, sc)
		if r.Scheduled != 4 {
			t.Fatalf("%d of 4 scheduled", r.Scheduled)
		}
		if got := incoming(r, "", "AssignedPodAdd"); got != 3 {
			t.Fatalf("%d pods moved by AssignedPodAdd, want the 3 web pods", got)
		}
	})
}

// incoming sums the report's incoming counts for a queue and an event
// ("" matches any).
func incoming(r *Report, queue, event string) int {
	n := 0
	for _, c := range r.Incoming {
		if (queue == "" || c.Queue == queue) && (event == "" || c.Event == event) {
			n += c.Count
		}
	}
	return n
}

func parse(t testing.TB, yaml string) *Scenario {
	t.Helper()
	sc, err := Parse([]byte(strings.TrimPrefix(yaml, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestHTMLReport(t *testing.T) {
	r := run(t, load(t, "NodeArrival"))
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<svg", `data-series="active"`, `data-series="unschedulable"`, "NodeArrival", "2160 of 2160 pods scheduled"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "src=") || strings.Contains(html, "href=") {
		t.Error("the report must be self-contained")
	}
}

// checkGolden fails t if got differs from the golden file at path, or
// rewrites the file with got under -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s changed; run with -update if that is intended\n--- got\n%s--- want\n%s", path, got, want)
	}
}
