package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/scheduler"
)

// Warm restart: a scheduler finds 2,000 pods unschedulable and stops; a node
// with room for one more pod is added while none runs; the next scheduler
// parks the 2,000 behind NodeResourcesFit (from the records the first left
// in their status) instead of trying them all, and still binds the pod
// the new node fits.
func TestWarmRestart(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "warm-small", 3, nodeSpec{cpu: "1", memory: "4Gi"})
	first := startScheduler(t, "schedq-warm")
	big := makePods(t, c, ns, "big", 2000, podSpec{scheduler: first.name, cpu: "2", memory: "64Mi"})
	mid := makePods(t, c, ns, "mid", 1, podSpec{scheduler: first.name, cpu: "1500m", memory: "64Mi"})
	waitFor(t, time.Minute, "failure records on every pod", func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Annotations[scheduler.FailureAnnotation] == "" || podScheduledFalse(t, c, ns, p.Name) == "" {
				return false, nil
			}
		}
		return len(pods.Items) == len(big)+len(mid), nil
	})
	stopNow(t, first)

	makeNodes(t, c, "warm-grow", 1, nodeSpec{cpu: "1600m", memory: "4Gi"})
	start := time.Now()
	second := startScheduler(t, "schedq-warm")
	delay := waitBound(t, c, ns, mid, 30*time.Second)
	sinceStart := time.Since(start)
	attempts := second.metric(t, "scheduler_schedule_attempts_total")
	if attempts > 10 {
		t.Errorf("the new scheduler made %v attempts; the 2,000 recorded pods should stay parked", attempts)
	}
	for name, node := range bound(t, c, ns) {
		if node != "" && name != mid[0] {
			t.Errorf("%s was bound to %s", name, node)
		}
	}
	figure(t, "restart with %d pods found unschedulable: %v attempts by the new scheduler; the pod a new node fits bound %v after it started (%v after ready)",
		len(big)+len(mid), attempts, sinceStart.Round(time.Millisecond), delay.Round(time.Millisecond))
}

// stopNow stops s before the test ends, leaving its result for the stop
// that t.Cleanup runs.
func stopNow(t *testing.T, s *sched) {
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("scheduler %s: %v", s.name, err)
		}
		s.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("scheduler %s did not stop within 30s", s.name)
	}
}
