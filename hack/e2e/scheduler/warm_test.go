package scheduler

import (
	"context"
	"io"
	"net/http"
	"syscall"
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

// stopNow stops s before the test ends.
func stopNow(t *testing.T, s *sched) {
	if err := s.stop(); err != nil {
		t.Fatalf("scheduler %s: %v", s.name, err)
	}
}

// Warm failover: the leader finds 2,000 pods unschedulable; the standby,
// whose queue was filled before, parks them as the leader's records come
// in. The leader is killed, a node with room for one more pod is added,
// and the standby takes over: it binds that pod and leaves the 2,000
// parked instead of trying them all.
func TestWarmFailover(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	name, lease := "schedq-warm-failover", "schedq-warm-failover"
	makeNodes(t, c, "warm-fo-small", 3, nodeSpec{cpu: "1", memory: "4Gi"})
	a := startReplica(t, "a", name, lease)
	waitFor(t, time.Minute, "replica a to lead", func(context.Context) (bool, error) { return holder(t, c, lease) == "a", nil })
	b := startReplica(t, "b", name, lease)
	waitFor(t, time.Minute, "replica b to be ready (standby)", func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + b.addr + "/readyz")
		if err != nil {
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && string(body) == "ok: standby\n", nil
	})
	big := makePods(t, c, ns, "big", 2000, podSpec{scheduler: name, cpu: "2", memory: "64Mi"})
	mid := makePods(t, c, ns, "mid", 1, podSpec{scheduler: name, cpu: "1500m", memory: "64Mi"})
	waitFor(t, 2*time.Minute, "failure records on every pod", func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Annotations[scheduler.FailureAnnotation] == "" {
				return false, nil
			}
		}
		return len(pods.Items) == len(big)+len(mid), nil
	})
	// The standby follows: every recorded pod leaves its activeQ.
	waitFor(t, time.Minute, "the standby to park the recorded pods", func(context.Context) (bool, error) {
		return metricAt(t, b.addr, "scheduler_pending_pods", `queue="unschedulable"`) == float64(len(big)+len(mid)), nil
	})
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	makeNodes(t, c, "warm-fo-grow", 1, nodeSpec{cpu: "1600m", memory: "4Gi"})
	waitFor(t, time.Minute, "replica b to take the lease", func(context.Context) (bool, error) { return holder(t, c, lease) == "b", nil })
	takeover := time.Since(killed)
	waitBound(t, c, ns, mid, 30*time.Second)
	boundAfter := time.Since(killed)
	attempts := metricAt(t, b.addr, "scheduler_schedule_attempts_total")
	if attempts > 10 {
		t.Errorf("the new leader made %v attempts; the 2,000 recorded pods should stay parked", attempts)
	}
	figure(t, "SIGKILL of the leader with %d pods found unschedulable: replica b led after %v; the pod a node added during the failover fits bound %v after the kill; %v attempts by the new leader",
		len(big)+len(mid), takeover.Round(time.Millisecond), boundAfter.Round(time.Millisecond), attempts)
}
