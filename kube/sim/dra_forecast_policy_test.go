package sim

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestDRAForecastKeepsTheGPUPolicy: a forecast forked from a DRA replay
// under a GPU policy places the pods as the replay does. x2 holds 600 of
// GPU 1 and GPU 0 is whole; s (300) and w (a whole GPU) wait for h's
// CPU. When h ends, BestFit puts s on GPU 1 (400 left) and w on GPU 0,
// at once; DRA's first fit without the policy would put s on GPU 0, and
// w would wait for x2's end, 900 s later.
func TestDRAForecastKeepsTheGPUPolicy(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn,16000,65536,2,V100\n", timedHeader+
		"x1,1000,1024,1,600,,LS,Running,0,20,0\n"+
		"x2,1000,1024,1,600,,LS,Running,1,1000,1\n"+
		"h,14000,1024,0,0,,LS,Running,2,100,2\n"+
		"s,2000,1024,1,300,,LS,Running,50,2000,50\n"+
		"w,2000,1024,1,1000,,LS,Running,51,2000,51\n")
	for _, tc := range []struct{ model, policy string }{
		{GPUModelDRA, "bestfit"}, {GPUModelDRA, "fgd"}, {GPUModelDevice, "bestfit"}, {GPUModelDevice, "fgd"},
	} {
		t.Run(tc.model+" "+tc.policy, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy = tc.model, tc.policy
			r := replayTo(t, sc, 60*time.Second)
			st := r.State()
			if len(st.Running) != 2 || len(st.Pending) != 2 {
				t.Fatalf("at 60s: %d running, %d pending; want x2 and h, s and w", len(st.Running), len(st.Pending))
			}
			f, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour, Known: r.Known})
			if err != nil {
				t.Fatal(err)
			}
			w, err := f.Of(types.NamespacedName{Namespace: "default", Name: "w"})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Until(2000 * time.Second); err != nil {
				t.Fatal(err)
			}
			var uid types.UID
			for _, p := range st.Pending {
				if p.Name == "w" {
					uid = p.UID
				}
			}
			actual, ok := r.Started(uid)
			if !ok || actual.Sub(st.Now) > 41*time.Second {
				t.Fatalf("the replay started w %v after the fork (%v); want when h ends, 40 s after", actual.Sub(st.Now), ok)
			}
			if !w.Starts || w.Wait < 40*time.Second || w.Wait > 41*time.Second {
				t.Errorf("forecast of w: %+v; want a start when h ends, 40 s after the fork, as in the replay", w)
			}
		})
	}
}
