package app

import (
	"fmt"
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
