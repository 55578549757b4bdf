package sim

import (
	"math"
	"testing"
)

// Every pod's time in the queue's places adds up to its wait (creation to
// binding, deletion or the end), and each place shows up where the
// scenario sends pods: gated pods wait in gated, tainted-out pods in
// unschedulable and then, with popFromBackoff=false, in backoff until
// their backoff ends.
func TestPlaceTimes(t *testing.T) {
	for _, c := range []struct {
		scenario, set string
		want          func(PodRecord) float64
		min           float64 // the smallest total the scenario must put there
	}{
		{"SchedulingWhileGated", "", func(r PodRecord) float64 { return r.InGated }, 1},
		{"EarlyRetry", "", func(r PodRecord) float64 { return r.InUnschedulable }, 200 * 2},
		{"EarlyRetry", "popFromBackoff=false", func(r PodRecord) float64 { return r.InBackoff }, 200 * 6.9},
		{"Unschedulable", "", func(r PodRecord) float64 { return r.InActive }, 1},
		{"GangScheduling", "", func(r PodRecord) float64 { return r.InGroupWait + r.InActive + r.InBackoff + r.InUnschedulable }, 1},
	} {
		t.Run(c.scenario+c.set, func(t *testing.T) {
			sc, err := Load(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if c.set != "" {
				if err := sc.Set(splitSetting(c.set)); err != nil {
					t.Fatal(err)
				}
			}
			r := run(t, sc)
			total, flight := 0.0, 0.0
			for _, rec := range r.Records {
				sum := rec.InActive + rec.InBackoff + rec.InUnschedulable + rec.InGated + rec.InFlight + rec.InGroupWait
				if math.Abs(sum-rec.Wait) > 1e-6 {
					t.Fatalf("%s/%s: places add up to %gs, wait %gs: %+v", rec.Namespace, rec.Name, sum, rec.Wait, rec)
				}
				total += c.want(rec)
				flight += rec.InFlight
			}
			if total < c.min {
				t.Errorf("%gs in the expected place over all pods, want at least %gs", total, c.min)
			}
			if r.Scheduled > 0 && flight <= 0 {
				t.Errorf("no time in flight, though %d pods were scheduled", r.Scheduled)
			}
		})
	}
}

func splitSetting(kv string) (string, string) {
	for i := range kv {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:]
		}
	}
	return kv, ""
}
