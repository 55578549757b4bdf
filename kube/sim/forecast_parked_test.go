package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A forecast from a state where nothing arrives after the fork and
// nothing is withdrawn predicts exactly the starts the replay gives, on
// every GPU model. At the fork (20 s) a (a whole GPU), then b1, b2 and
// b3 (half a GPU each), wait parked: r holds n0's one GPU until 3 s after
// the fork, r2 n1's until 13 s after; an attempt takes 1 s. In the replay
// r's end wakes them and a, first in line, starts at once; b1 and b2
// start at r2's end, b3 at b1's. Were the parked pods queued as new in
// the forecast, its start would try all four again, one second each: r's
// end would come in the middle of that pass, and a, tried and parked
// again, would wait behind the pods the pass had not reached.
func TestForecastOfParkedPodsMatchesTheReplay(t *testing.T) {
	pods := timedHeader + "r,1000,1024,1,1000,,LS,Running,0,23,0\nr2,1000,1024,1,1000,,LS,Running,0,33,0\n" +
		"a,1000,1024,1,1000,,LS,Running,1,1000,1\nb1,1000,1024,1,500,,LS,Running,2,100,2\n" +
		"b2,1000,1024,1,500,,LS,Running,2,1000,2\nb3,1000,1024,1,500,,LS,Running,2,1000,2\n"
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,T4\nn1,64000,262144,1,T4\n", pods)
	for _, model := range []string{GPUModelDevice, GPUModelCapacity, GPUModelDRA} {
		t.Run(model, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Scheduler.GPUModel, sc.Scheduler.AttemptCost = model, time.Second
			r := replayTo(t, sc, 20*time.Second)
			st := r.State()
			if len(st.Running) != 2 || len(st.Pending) != 4 {
				t.Fatalf("at the fork: %d running, %d pending; want 2 and 4", len(st.Running), len(st.Pending))
			}
			f, err := RunForecast(sc, st, ForecastOptions{Horizon: 24 * time.Hour, Known: r.Known})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Until(10000 * time.Second); err != nil {
				t.Fatal(err)
			}
			var diff []string
			for i, p := range st.Pending {
				actual, ok := r.Started(p.UID)
				pf := f.Pods[i]
				if !ok || !pf.Starts || pf.Start != actual {
					diff = append(diff, fmt.Sprintf("%s: forecast %v (starts %v), replay %v", p.Name, pf.Wait, pf.Starts, actual.Sub(st.Now)))
				}
			}
			if len(diff) > 0 {
				t.Errorf("the forecast's starts differ from the replay's:\n%s", strings.Join(diff, "\n"))
			}
		})
	}
}
