package app

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// TestLiveHistoryCensorsDeleted: runs of 10, 10 and 40 min that succeed,
// and two pods deleted after 30 min while running. Counted as runtimes,
// the deletions put the median at 30 min (S(10) = 3/5, S(30) = 1/5); as
// censored, they are still at risk at 30 min and the median is the 40 min
// run (S(10) = 3/5, S(40) = 0).
func TestLiveHistoryCensorsDeleted(t *testing.T) {
	clk := testingclock.NewFakeClock(liveNow)
	h := &liveHistory{schedulerName: "schedq", clock: clk}
	handler := h.handler()
	pod := func(name string, ran time.Duration) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		p.Spec.SchedulerName, p.Spec.NodeName, p.Status.Phase = "schedq", "n0", v1.PodRunning
		p.Status.StartTime = &metav1.Time{Time: liveNow.Add(-ran)}
		return p
	}
	for i, ran := range []time.Duration{10, 10, 40} {
		old := pod(fmt.Sprint("done", i), ran*time.Minute)
		ended := old.DeepCopy()
		ended.Status.Phase = v1.PodSucceeded
		handler.OnUpdate(old, ended)
	}
	for i := range 2 {
		handler.OnDelete(pod(fmt.Sprint("cut", i), 30*time.Minute))
	}
	if d, ok := h.history().Estimate(pod("x", 0), 0); !ok || d != 40*time.Minute {
		t.Errorf("median: got %v %v, want 40m, the deletions counted as censored", d, ok)
	}
}

// TestLiveHistoryOptions: the live history groups runtimes by the labels
// configured and continues the estimate past its data as configured.
// Team a's pods of size big ran 60 min (20 of them, enough for a class
// of their own), its others 10 min (40); one more run of team a was cut
// at 90 min. By team and size, a big pod's median is 60 min; by owner
// and namespace (the default), every pod's is 10 min. Team b ran once
// for 10 min and nine times was cut at 60 min: S never falls to 1/2,
// and its median is the longest run, 60 min, or with the exponential
// tail 10·ln 0.5 ÷ ln 0.9 min.
func TestLiveHistoryOptions(t *testing.T) {
	pod := func(name, team, size string, ran time.Duration) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"team": team, "size": size}}}
		p.Spec.SchedulerName, p.Spec.NodeName, p.Status.Phase = "schedq", "n0", v1.PodRunning
		p.Status.StartTime = &metav1.Time{Time: liveNow.Add(-ran)}
		return p
	}
	feed := func(o HistoryOptions) *liveHistory {
		h := &liveHistory{schedulerName: "schedq", clock: testingclock.NewFakeClock(liveNow), opts: o}
		handler := h.handler()
		finish := func(p *v1.Pod) {
			ended := p.DeepCopy()
			ended.Status.Phase = v1.PodSucceeded
			handler.OnUpdate(p, ended)
		}
		for i := range 20 {
			finish(pod(fmt.Sprint("big", i), "a", "big", 60*time.Minute))
		}
		for i := range 40 {
			finish(pod(fmt.Sprint("small", i), "a", "small", 10*time.Minute))
		}
		handler.OnDelete(pod("cut", "a", "small", 90*time.Minute))
		finish(pod("b0", "b", "small", 10*time.Minute))
		for i := range 9 {
			handler.OnDelete(pod(fmt.Sprint("bcut", i), "b", "small", 60*time.Minute))
		}
		return h
	}
	byLabels := feed(HistoryOptions{Labels: []string{"team", "size"}}).history()
	if d, ok := byLabels.Estimate(pod("x", "a", "big", 0), 0); !ok || d != 60*time.Minute {
		t.Errorf("by team and size, a big pod: got %v %v, want 60m", d, ok)
	}
	if d, ok := byLabels.Estimate(pod("x", "b", "small", 0), 0); !ok || d != 60*time.Minute {
		t.Errorf("team b, longest tail: got %v %v, want 60m", d, ok)
	}
	if d, ok := feed(HistoryOptions{}).history().Estimate(pod("x", "a", "big", 0), 0); !ok || d != 10*time.Minute {
		t.Errorf("by owner and namespace, a big pod: got %v %v, want 10m", d, ok)
	}
	exp := feed(HistoryOptions{Labels: []string{"team"}, Tail: "exponential"}).history()
	want := time.Duration(float64(10*time.Minute) * math.Log(0.5) / math.Log(0.9))
	if d, ok := exp.Estimate(pod("x", "b", "small", 0), 0); !ok || (d-want).Abs() > time.Second {
		t.Errorf("team b, exponential tail: got %v %v, want %v", d, ok, want)
	}
}

// TestLiveHistoryReplacementsStayBounded: a pod's run replaced again and
// again (a file that lists one pod many times) stays one run, and the
// slots of the replaced runs do not pile up, nor reach a forecast.
func TestLiveHistoryReplacementsStayBounded(t *testing.T) {
	h := newTestHistory(testingclock.NewFakeClock(liveNow))
	finish(h, histPod("other", "a", "", time.Minute))
	p := histPod("p", "a", "", time.Minute)
	for i := range 3 * historyMax {
		h.add(observed{pod: p, d: time.Duration(i+1) * time.Second, cut: true, at: liveNow})
	}
	runs, _ := h.kept()
	if len(runs) != 2 || runs[0].pod.UID != "other" || runs[1].pod.UID != "p" || runs[1].d != 3*historyMax*time.Second {
		t.Fatalf("kept %+v, want other's run, then p's last", runs)
	}
	if len(h.runs) > 8 || len(h.byUID) != 2 {
		t.Errorf("%d slots, %d indexed, for 2 runs", len(h.runs), len(h.byUID))
	}
	h.history() // skips the dead slots: a nil pod would panic
}

// TestLiveForecastCountsARunningPodOnce: after a restart the history
// holds, from its file, a censored run of each pod that was running at
// the last write; a forecast adds every pod running at its copy as a
// censored run too. A pod in both is one run, the copy's (it has run
// longer), not two: counted twice, r (of Job j, running for 50 minutes,
// written at 40) put one more run at risk past 30 minutes, and the
// median of q, of the same Job, moved from 30 minutes to 60 (finished
// runs of 10, 20, 30, 60 and 70 minutes), and p, behind q, with it.
func TestLiveForecastCountsARunningPodOnce(t *testing.T) {
	l := newLiveCluster(t, 2)
	job := func(p *v1.Pod) *v1.Pod {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", Controller: &yes}}
		return p
	}
	srv, fc := l.server()
	for i, d := range []time.Duration{10, 20, 30, 60, 70} {
		done := job(l.pod(fmt.Sprintf("done%d", i), "1", ""))
		fc.hist.add(observed{pod: done, d: d * time.Minute, at: liveNow})
	}
	r := job(l.pod("r", "4", "2h"))
	fc.hist.add(observed{pod: r, d: 40 * time.Minute, cut: true, at: liveNow}) // loaded from the file
	l.running(r, "n0", 50*time.Minute)
	l.pending(job(l.pod("q", "4", "")))
	l.pending(l.pod("p", "4", "1h"))
	_, body := get(t, srv.URL+"/debug/forecast/default/p")
	var p Prediction
	if err := json.Unmarshal([]byte(body), &p); err != nil || !p.Starts || !about(p.Wait, 30*time.Minute) {
		t.Errorf("%v %s, want a start in 30m, when q ends at its median", err, body)
	}
}
