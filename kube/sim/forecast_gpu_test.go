package sim

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A forecast forked from a trace replay keeps the replay's GPU devices,
// in the device model and with DRA: three 600-thousandth shares, each on its own GPU of a 3-GPU
// node, leave 1,200 thousandths free but no whole GPU, so the whole-GPU
// pod d waits for the shares' ends at 100 s, as it does in the replay.
// Counted as plain capacity, it would fit at once.
func TestForecastKeepsTheReplaysGPUDevices(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,3,T4\n", timedHeader+
		"a,1000,1024,1,600,,LS,Running,0,100,0\nb,1000,1024,1,600,,LS,Running,0,100,0\nc,1000,1024,1,600,,LS,Running,0,100,0\n"+
		"d,1000,1024,1,1000,,LS,Running,10,500,10\n")
	for _, model := range []string{GPUModelDevice, GPUModelDRA} {
		sc := traceScenario(dir)
		sc.Scheduler.GPUModel = model
		_, _, d := forecastOfFork(t, sc, 20*time.Second, 3)
		if !d.Starts || d.Wait < 80*time.Second || d.Wait > 81*time.Second {
			t.Errorf("%s: d: %+v; want a start when the shares end, 80 s after the fork", model, d)
		}
	}
}

// The forecast keeps the GPUs each running pod holds in the replay:
// a and b share GPU 0 and c takes GPU 1; once a ends, GPU 0 holds b's
// half and GPU 1 c's 300, so no GPU is whole for d until b ends at 200 s.
// Placed again, best fit, c would join b on GPU 0 and leave GPU 1 whole.
func TestForecastKeepsTheGPUsPodsHold(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\n", timedHeader+
		"a,1000,1024,1,500,,LS,Running,0,50,0\nb,1000,1024,1,500,,LS,Running,1,200,1\nc,1000,1024,1,300,,LS,Running,2,400,2\n"+
		"d,1000,1024,1,1000,,LS,Running,60,900,60\n")
	r, st, d := forecastOfFork(t, traceScenario(dir), 70*time.Second, 2)
	if err := r.Until(1000 * time.Second); err != nil {
		t.Fatal(err)
	}
	actual, ok := r.Started(st.Pending[0].UID)
	if !ok || actual.Sub(st.Now) < 129*time.Second || actual.Sub(st.Now) > 131*time.Second {
		t.Fatalf("the replay started d at %v, %v after the fork; want when b ends, 130 s after", ok, actual.Sub(st.Now))
	}
	if !d.Starts || d.Wait < 130*time.Second || d.Wait > 131*time.Second {
		t.Fatalf("d: %+v; want a start when b ends, 130 s after the fork", d)
	}
}

// replayTo replays sc to at, failing t if it cannot.
func replayTo(t *testing.T, sc *Scenario, at time.Duration) *Replay {
	t.Helper()
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Until(at); err != nil {
		t.Fatal(err)
	}
	return r
}

// forecastOfFork replays the trace of sc to at, where running pods run
// and one pod is pending, and forecasts that pod's start with the
// replay's own runtimes.
func forecastOfFork(t *testing.T, sc *Scenario, at time.Duration, running int) (*Replay, *ForecastState, PodForecast) {
	t.Helper()
	r := replayTo(t, sc, at)
	st := r.State()
	if len(st.Running) != running || len(st.Pending) != 1 {
		t.Fatalf("at %v: %d running, %d pending; want %d and one", at, len(st.Running), len(st.Pending), running)
	}
	f, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour, Known: r.Known})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Of(types.NamespacedName{Namespace: st.Pending[0].Namespace, Name: st.Pending[0].Name})
	if err != nil {
		t.Fatal(err)
	}
	return r, st, p
}

// TestWhatIfGPUPodClaimsDevices: in a trace replayed with GPUs as DRA
// devices, a what-if pod that asks for alibaba.com/gpu-milli claims its
// GPUs as the trace's pods do. Three shares of 600 hold a GPU each of a
// 3-GPU node: a whole GPU does not fit now (counted as the extended
// resource alone, 1,200 thousandths free, it would), and starts when the
// shares end, 80 s after the fork; a share of 300 fits now. On the device
// model the same.
func TestWhatIfGPUPodClaimsDevices(t *testing.T) {
	dir := writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,3,T4\n", timedHeader+
		"a,1000,1024,1,600,,LS,Running,0,100,0\nb,1000,1024,1,600,,LS,Running,0,100,0\nc,1000,1024,1,600,,LS,Running,0,100,0\n")
	podOf := func(name, milli string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: \"1\", memory: 1Gi, alibaba.com/gpu-milli: \"" + milli + "\"}\n"
	}
	for _, model := range []string{GPUModelDRA, GPUModelDevice} {
		sc := traceScenario(dir)
		sc.Scheduler.GPUModel = model
		r := replayTo(t, sc, 20*time.Second)
		in, err := ParseWhatIf([]byte(podOf("whole", "1000") + "---\n" + podOf("share", "300")))
		if err != nil {
			t.Fatal(err)
		}
		w, err := RunWhatIf(sc, r.State(), in, ForecastOptions{Horizon: time.Hour, Known: r.Known})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		whole, share := w.Pods[0], w.Pods[1]
		if whole.FitsNow || !whole.Forecast.Starts || whole.Forecast.Wait < 80*time.Second || whole.Forecast.Wait > 81*time.Second {
			t.Errorf("%s: whole GPU: fits now %v, %+v; want a start when the shares end, 80 s after the fork", model, whole.FitsNow, whole.Forecast)
		}
		if !share.FitsNow {
			t.Errorf("%s: a share of 300 does not fit now: %+v", model, share)
		}
	}
	sc := traceScenario(dir)
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseWhatIf([]byte(podOf("odd", "1500")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunWhatIf(sc, r.State(), in, ForecastOptions{Horizon: time.Hour}); err == nil || !strings.Contains(err.Error(), "pod default/odd: GPU request of 1500 thousandths is neither a share of one GPU nor whole GPUs") {
		t.Errorf("a request of 1500: %v", err)
	}
}
