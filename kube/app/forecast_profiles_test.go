package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq/kube/sim"
)

// TestLiveForecastRunsEveryProfile: a scheduler whose --config has two
// profiles, b without TaintToleration's filter, forecasts the pending
// pods of both, each with its own profile's framework, as it schedules
// them: on one tainted node, b's pod starts now and a's never does; a
// what-if pod of b fits now, one of a does not, and one naming neither
// is refused.
func TestLiveForecastRunsEveryProfile(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    filter:\n      disabled:\n      - name: TaintToleration\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	l := newLiveCluster(t, 0)
	l.cache.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{v1.LabelHostname: "n0"}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"),
			v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}}})
	for _, name := range []string{"a", "b"} {
		p := l.pod("p"+name, "1", "1h")
		p.Spec.SchedulerName = name
		l.pending(p)
	}
	ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
		objects: []cache.Store{l.objs}, schedulerName: o.SchedulerName, profiles: liveProfiles(o), clock: l.clk}
	srv := l.serverOf(newForecaster(o, ls, l.clk))

	for _, tc := range []struct {
		pod    string
		starts bool
	}{{"pa", false}, {"pb", true}} {
		code, body := get(t, srv.URL+"/debug/forecast/default/"+tc.pod)
		var f sim.PodForecast
		if err := json.Unmarshal([]byte(body), &f); code != 200 || err != nil {
			t.Fatalf("%s: HTTP %d %v: %s", tc.pod, code, err, body)
		}
		if f.Starts != tc.starts || tc.starts && (f.Node != "n0" || !about(f.Wait, 0)) {
			t.Errorf("%s: forecast %+v, want starts=%v (now, on n0, if it starts)", tc.pod, f, tc.starts)
		}
	}
	for _, tc := range []struct{ scheduler, want string }{
		{"b", "default/w: fits now on n0"},
		{"a", "default/w: does not fit now"},
	} {
		pod := strings.Replace(strings.Replace(whatIfPod, "%s", "1", 1), "schedulerName: schedq", "schedulerName: "+tc.scheduler, 1)
		code, text := post(t, srv.URL+"/debug/whatif?format=text", pod)
		if code != 200 || !strings.Contains(text, tc.want) {
			t.Errorf("what-if of %s: HTTP %d, want %q in\n%s", tc.scheduler, code, tc.want, text)
		}
	}
	pod := strings.Replace(whatIfPod, "%s", "1", 1)
	if code, text := post(t, srv.URL+"/debug/whatif?format=text", pod); code != 400 || !strings.Contains(text, `schedulerName "schedq" is not one of the scheduler's profiles ("a", "b")`) {
		t.Errorf("what-if of schedq: HTTP %d %s, want 400 naming both profiles", code, text)
	}
}

// TestLiveHistoryLearnsEveryProfile: with several profiles, the runtimes
// the forecasts learn are those of every profile's pods (each forecast
// places them all), and still not those of another scheduler's.
func TestLiveHistoryLearnsEveryProfile(t *testing.T) {
	h := &liveHistory{schedulerName: "a", profiles: []string{"a", "b"}, clock: testingclock.NewFakeClock(liveNow)}
	handler := h.handler()
	for i, tc := range []struct {
		scheduler string
		ran       time.Duration
	}{{"b", 20 * time.Minute}, {"b", 20 * time.Minute}, {"b", 20 * time.Minute},
		{"other", 90 * time.Minute}, {"other", 90 * time.Minute}, {"other", 90 * time.Minute}, {"other", 90 * time.Minute}} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("done", i), Namespace: "default"}}
		p.Spec.SchedulerName, p.Spec.NodeName, p.Status.Phase = tc.scheduler, "n0", v1.PodRunning
		p.Status.StartTime = &metav1.Time{Time: liveNow.Add(-tc.ran)}
		ended := p.DeepCopy()
		ended.Status.Phase = v1.PodSucceeded
		handler.OnUpdate(p, ended)
	}
	x := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
	if d, ok := h.history().Estimate(x, 0); !ok || d != 20*time.Minute {
		t.Errorf("estimate %v %v, want 20m, profile b's runs alone", d, ok)
	}
}
