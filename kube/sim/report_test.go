package sim

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// With gangs, a group's attempt is one scheduling attempt and one pod
// attempt per member: the report gives both, labelled, and the per-pod
// figures (the histogram, the records) sum to the pod attempts.
func TestReportGangAttemptsAgree(t *testing.T) {
	r := run(t, load(t, "GangScheduling"))
	sum := 0
	for _, rec := range r.Records {
		sum += rec.Attempts
	}
	if sum != r.PodAttempts || r.PodAttempts <= r.Attempts {
		t.Fatalf("records sum to %d attempts, report %d pod attempts and %d scheduling attempts", sum, r.PodAttempts, r.Attempts)
	}
	want := "scheduling attempts (a gang's attempt counts once); "
	if out := text(r); !strings.Contains(out, want) || !strings.Contains(out, " pod attempts (") {
		t.Fatalf("no labelled attempts in\n%s", out)
	}
}

// Preemptors and victims are never both called "preempted".
func TestReportPreemptionWords(t *testing.T) {
	out := text(run(t, load(t, "PriorityPressure")))
	if !strings.Contains(out, "priority 1000   100 preemptors, 0 victims") || !strings.Contains(out, "priority 0      0 preemptors, 100 victims") {
		t.Fatalf("no preemptors and victims per priority in\n%s", out)
	}
	if strings.Count(out, "preempted") != 1 {
		t.Fatalf("%q appears %d times, want once (the victims' ending)\n%s", "preempted", strings.Count(out, "preempted"), out)
	}
}

// A run that scheduled nothing says so instead of printing percentiles
// of nothing.
func TestReportNothingScheduled(t *testing.T) {
	r := run(t, parse(t, `
name: none
nodes: [{name: n, count: 1, capacity: {cpu: "1", memory: 1Gi}}]
pods: [{name: big, count: 3, requests: {cpu: "2"}}]
`))
	out := text(r)
	if !strings.Contains(out, "time to schedule no pod was scheduled") || strings.Contains(out, "p50 0s") {
		t.Fatalf("want no percentiles\n%s", out)
	}
	var b strings.Builder
	WriteComparison(&b, r, r, "a", "b", false)
	if !strings.Contains(b.String(), "none scheduled") || strings.Contains(b.String(), "p50           0s") {
		t.Fatalf("comparison\n%s", b.String())
	}
}

// The trace table counts the trace's pods only, not a snapshot's.
func TestReportTraceTableCountsTracePods(t *testing.T) {
	sc := traceScenario("testdata/alibaba")
	sc.Snapshot = "testdata/snapshot/cluster.yaml"
	r := run(t, sc)
	if r.TraceSim.Pods != r.Production.Pods || r.Pods <= r.TraceSim.Pods {
		t.Fatalf("trace table: %d simulated pods, %d in production, %d in the run", r.TraceSim.Pods, r.Production.Pods, r.Pods)
	}
	out := text(r)
	if !strings.Contains(out, "  pods                     7          7\n") || strings.Contains(out, "gpu allocated mean") {
		t.Fatalf("trace table\n%s", out)
	}
}

// A run whose pods keep running after the last binding states its length
// once, apart from the throughput's span.
func TestReportOneRunLength(t *testing.T) {
	r := run(t, parse(t, `
name: life
nodes: [{name: n, count: 1, capacity: {cpu: "4", memory: 4Gi}}]
pods: [{name: job, count: 2, requests: {cpu: "1"}, lifetime: {mean: 1m}}]
`))
	out := text(r)
	if !strings.Contains(out, "throughput       80.0 pods/s over 25ms, from the first arrival to the last binding; the run lasted 1m0.025s of virtual time") ||
		!strings.Contains(out, "(of allocatable, time-weighted over the run)") {
		t.Fatalf("run length\n%s", out)
	}
}

// A run in which no pod arrives (a pod group of count 0) has an empty
// span from the first arrival to the last binding, not one from the zero
// time, in the text and in the JSON.
func TestReportNoPodArrived(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
	}{
		{"empty pod group", `
name: empty
nodes: [{name: n, count: 2, capacity: {cpu: "2", memory: 2Gi}}]
pods: [{name: a, count: 0}]
`},
		{"empty pod group and a later node", `
name: empty-later
duration: 1m
nodes: [{name: n, count: 1, capacity: {cpu: "2", memory: 2Gi}}]
pods: [{name: a, count: 0}]
events: [{at: 30s, addNodes: {name: m, count: 1, capacity: {cpu: "2", memory: 2Gi}}}]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, parse(t, tc.yaml))
			if r.VirtualSeconds != 0 || r.PodsPerSecond != 0 {
				t.Errorf("virtualSeconds %v, podsPerSecond %v, want 0 and 0", r.VirtualSeconds, r.PodsPerSecond)
			}
			if out := text(r); !strings.Contains(out, "throughput       0.0 pods/s over 0s") {
				t.Errorf("throughput line\n%s", out)
			}
		})
	}
}

// A namespace none of whose pods was bound has no time to schedule: the
// text report and the comparison say so, as they do for the whole run,
// instead of percentiles of 0s.
func TestReportNamespaceNoneScheduled(t *testing.T) {
	r := run(t, parse(t, `
name: two-namespaces
nodes: [{name: n, count: 1, capacity: {cpu: "2", memory: 2Gi}}]
pods:
  - {name: small, namespace: fits, count: 1, requests: {cpu: "1"}}
  - {name: big, namespace: never, count: 2, requests: {cpu: "4"}}
`))
	var cmp strings.Builder
	WriteComparison(&cmp, r, r, "a", "b", false)
	for _, tc := range []struct {
		name, out, want, notWant string
	}{
		{"text", text(r), "  namespace never          0 of 2 scheduled; no time to schedule\n", "namespace never          0 of 2 scheduled; time to schedule p50 0s"},
		{"text, the bound namespace", text(r), "  namespace fits           1 of 1 scheduled; time to schedule p50 20ms, p99 20ms, max 20ms\n", ""},
		{"comparison", cmp.String(), "namespace never p50/p99           none scheduled", "0s/0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.out, tc.want) || tc.notWant != "" && strings.Contains(tc.out, tc.notWant) {
				t.Errorf("want %q, not %q, in\n%s", tc.want, tc.notWant, tc.out)
			}
		})
	}
}

// A trace replay in which no trace pod is bound has no scheduling delay:
// the trace table and the per-policy table say none, not 0s, while
// production's delays, of pods it did schedule, are printed.
func TestReportTraceNoneScheduled(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,4000,16384,0,\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
			"big-0,8000,1024,0,0,,BE,Running,0,100,2\n"+
			"big-1,8000,1024,0,0,,BE,Running,10,100,12\n")
	r := run(t, traceScenario(dir))
	var table strings.Builder
	WritePolicyTable(&table, []PolicyRow{PolicyRowOf("default", r)})
	for _, tc := range []struct {
		name, out, want string
	}{
		{"trace table", text(r), "  scheduling delay p50     none       2s\n"},
		{"trace table, max", text(r), "  scheduling delay max     none       2s\n"},
		{"policy table", table.String(), "      none      none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.out, tc.want) || strings.Contains(tc.out, " 0s") {
				t.Errorf("want %q and no 0s in\n%s", tc.want, tc.out)
			}
		})
	}
}

// TestReportThroughputOfASlowRun: a throughput under 0.05 pods/s (a
// trace's months, 8,151 pods over 3,584 hours) is printed to two
// significant digits, where one decimal printed 0.0 pods/s, as for a
// run that scheduled nothing; in the text, the comparison and the page.
func TestReportThroughputOfASlowRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64
		want string
	}{
		{"a trace's months", 8151 / 12901161.02, "0.00063"},
		{"one pod an hour", 1.0 / 3600, "0.00028"},
		{"just under 0.05", 0.0449, "0.045"},
		{"nothing scheduled", 0, "0.0"},
		{"DeviceClaims", 12 / 120.055, "0.1"},
		{"a busy run", 199.9, "199.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Scenario: "slow", Pods: 1, PodsPerSecond: tc.rate, VirtualSeconds: 60, RunSeconds: 60}
			var lines []string
			r.writeThroughput(func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })
			if want := "throughput       " + tc.want + " pods/s over"; len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Errorf("text %q, want it to start %q", lines, want)
			}
			var cmp bytes.Buffer
			WriteComparison(&cmp, r, r, "a", "b", false)
			if !regexp.MustCompile(`throughput \(virtual pods/s\) +` + regexp.QuoteMeta(tc.want) + ` +` + regexp.QuoteMeta(tc.want) + `\n`).Match(cmp.Bytes()) {
				t.Errorf("comparison:\n%s\nwant the throughput row at %s", cmp.String(), tc.want)
			}
			var page bytes.Buffer
			if err := r.WriteHTML(&page); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(page.String(), "; "+tc.want+" pods/s of virtual time.") {
				t.Errorf("the page's headline lacks %s pods/s", tc.want)
			}
		})
	}
	// The page's delta column prints differences, negative too.
	for v, want := range map[float64]string{-199.9: "-199.9", -0.0006: "-0.00060", 0.2: "0.2"} {
		if got := rateText(v); got != want {
			t.Errorf("rateText(%v) = %q, want %q", v, got, want)
		}
	}
}
