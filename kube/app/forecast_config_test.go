package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedq/schedq/kube/sim"
)

// TestForecastRunsTheProfileTheSchedulerLoaded: a forecast runs the
// profile the scheduler loaded from --config at its start, as the
// scheduler itself does, not the file as it is on disk at the time of the
// forecast: rewritten (a mounted ConfigMap is updated in place) to a
// profile without NodeResourcesFit, or removed, it changes neither. The
// pending pod asks for 8 CPUs of a 4-CPU node, so it never starts.
func TestForecastRunsTheProfileTheSchedulerLoaded(t *testing.T) {
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: schedq\n"
	const noFit = "  plugins:\n    preFilter: {disabled: [{name: NodeResourcesFit}]}\n    filter: {disabled: [{name: NodeResourcesFit}]}\n"
	for _, tc := range []struct {
		name  string
		after func(file string) error // what happens to the file after the start
	}{
		{"rewritten", func(file string) error { return os.WriteFile(file, []byte(head+noFit), 0o600) }},
		{"removed", os.Remove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sched.yaml")
			if err := os.WriteFile(file, []byte(head), 0o600); err != nil {
				t.Fatal(err)
			}
			o := Options{SchedulerName: "schedq", Config: ConfigOptions{File: file}}
			if err := o.applyConfig(); err != nil {
				t.Fatal(err)
			}
			l := newLiveCluster(t, 1)
			l.pending(l.pod("p", "8", "1h"))
			fc := l.forecasterWith(o)
			if err := tc.after(file); err != nil {
				t.Fatal(err)
			}
			srv := l.serverOf(fc)
			code, body := get(t, srv.URL+"/debug/forecast/default/p")
			var f sim.PodForecast
			if err := json.Unmarshal([]byte(body), &f); code != 200 || err != nil {
				t.Fatalf("HTTP %d %v: %s", code, err, body)
			}
			if f.Starts {
				t.Errorf("forecast %+v, want no start: the profile the scheduler runs has NodeResourcesFit", f)
			}
		})
	}
}

// TestLiveForecastVictimsKeepTheirGracePeriods: the live scheduler's
// forecasts evict as its preemption does, a victim staying on its node
// for its own grace period, not leaving at once.
func TestLiveForecastVictimsKeepTheirGracePeriods(t *testing.T) {
	sc := scenarioOf(Options{})
	if p := sc.Scheduler.Preemption; p == nil || !p.PodGracePeriods || p.GracePeriod != 0 {
		t.Fatalf("forecast's preemption %+v, want on, with each victim's own grace period", p)
	}
}

// TestForecastWithSchedqSettings: the live scheduler's forecasts run with
// a --config file whose Schedq args hold settings the simulator refuses
// from a scenario (the fence margin, the history, the stall timeout: the
// scheduler applies those itself), and with its wake budget and fairness,
// which the forecast's queue takes from the options.
func TestForecastWithSchedqSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sched.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: schedq\n"+
		"  pluginConfig:\n  - name: Schedq\n    args: {wakeBudget: false, fairness: {namespaces: true}, fenceMargin: 3s, history: {tail: exponential}, stallTimeout: 3m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{SchedulerName: "schedq", Config: ConfigOptions{File: file}}
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	if sc := scenarioOf(o); sc.Queue.WakeBudget == nil || *sc.Queue.WakeBudget || !sc.Queue.Fairness {
		t.Errorf("forecast's queue %+v, want the file's wake budget off and fairness on", sc.Queue)
	}
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "1h"))
	srv := l.serverOf(l.forecasterWith(o))
	code, body := get(t, srv.URL+"/debug/forecast/default/p")
	var f sim.PodForecast
	if err := json.Unmarshal([]byte(body), &f); code != 200 || err != nil {
		t.Fatalf("HTTP %d %v: %s", code, err, body)
	}
	if !f.Starts {
		t.Errorf("forecast %+v, want a start: the pod fits", f)
	}
}
