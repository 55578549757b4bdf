package sim

import (
	"strings"
	"testing"
)

// nsStats returns namespace ns's figures in r.
func nsStats(t *testing.T, r *Report, ns string) NamespaceStats {
	t.Helper()
	for _, n := range r.ByNamespace {
		if n.Namespace == ns {
			return n
		}
	}
	t.Fatalf("no namespace %s in %+v", ns, r.ByNamespace)
	return NamespaceStats{}
}

// TestTenantFlood: with fair sharing, the small namespace's p99 time to
// schedule is within 2x of what it is alone; without it, the small
// namespace waits behind the flood.
func TestTenantFlood(t *testing.T) {
	longReplay(t)
	fair := run(t, load(t, "TenantFlood"))
	sc := load(t, "TenantFlood")
	if err := sc.Set("fairness", "false"); err != nil {
		t.Fatal(err)
	}
	unfair := run(t, sc)
	sc = load(t, "TenantFlood")
	sc.Pods = sc.Pods[1:] // the small namespace alone
	aloneR := run(t, sc)
	if aloneR.Scheduled != 100 || len(aloneR.ByNamespace) != 0 {
		t.Fatalf("alone: %d scheduled, %+v", aloneR.Scheduled, aloneR.ByNamespace)
	}
	alone := aloneR.TimeToSchedule.P99
	on, off := nsStats(t, fair, "team-small"), nsStats(t, unfair, "team-small")
	t.Logf("team-small p99: alone %.3fs, fairness on %.3fs, off %.3fs", alone, on.TimeToSchedule.P99, off.TimeToSchedule.P99)
	if on.Scheduled != 100 || off.Scheduled != 100 {
		t.Fatalf("scheduled %d and %d of team-small's 100", on.Scheduled, off.Scheduled)
	}
	if on.TimeToSchedule.P99 > 2*alone {
		t.Errorf("with fairness, team-small's p99 %.3fs is more than twice alone (%.3fs)", on.TimeToSchedule.P99, alone)
	}
	if off.TimeToSchedule.P99 < 10*alone || off.TimeToSchedule.P50 < 30 {
		t.Errorf("without fairness, team-small's p50/p99 %.3fs/%.3fs: want it behind the flood (tens of seconds)", off.TimeToSchedule.P50, off.TimeToSchedule.P99)
	}
	// The flood is not starved: it finishes about when it would anyway.
	if f, u := nsStats(t, fair, "team-flood"), nsStats(t, unfair, "team-flood"); f.Scheduled != 10000 || f.TimeToSchedule.Max > u.TimeToSchedule.Max+1 {
		t.Errorf("team-flood with fairness: %+v, without %+v", f, u)
	}
	if txt := text(fair); !strings.Contains(txt, "fairness         between namespaces") || !strings.Contains(txt, "namespace team-small") {
		t.Errorf("text report lacks fairness and namespaces:\n%s", txt)
	}
}

func TestFairnessFields(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"queue: {fairness: true, fairnessWeights: {a: -1}}", "queue.fairnessWeights.a"},
		{"queue: {fairness: true, fairnessHalfLife: -1s}", "queue.fairnessHalfLife"},
		// As --fair-namespace-weights and the Schedq args refuse it: no
		// pod is in such a namespace, so the weight would do nothing.
		{`queue: {fairness: true, fairnessWeights: {"Team A": 2}}`, `queue.fairnessWeights.Team A: "Team A" is not a namespace name`},
		{"queue: {fairnessWeights: {a: 2}}", "need fairness: true"},
	} {
		_, err := Parse([]byte("name: x\npods: [{name: p, count: 1}]\n" + tc.yaml + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.yaml, err, tc.want)
		}
	}
	sc, err := Parse([]byte("name: x\npods: [{name: p, count: 1}]\nqueue: {fairness: true, fairnessWeights: {a: 2}, fairnessHalfLife: 30s}\n"))
	if err != nil || sc.Queue.fairness() == nil || sc.Queue.fairness().HalfLife.Seconds() != 30 {
		t.Fatalf("valid fairness: %v", err)
	}
	if err := sc.Set("fairness", "maybe"); err == nil {
		t.Error("Set(fairness, maybe) accepted")
	}
}
