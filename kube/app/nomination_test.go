package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNewProcessTakesOverNominations runs the whole scheduler (run, with
// its queue of the term behind the handlers) on a fake clientset, as a
// new leader after a failover: the previous leader preempted for "high"
// on n1 (status.nominatedNodeName) and its victim is still terminating
// there. The new process must count high's nomination, so that "sneak",
// of lower priority, does not take the room that is being freed for high.
func TestNewProcessTakesOverNominations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		victim := testPod("victim", "schedq", "2")
		victim.Spec.NodeName = "n1"
		now := metav1.Now()
		victim.DeletionTimestamp = &now
		victim.Finalizers = []string{"example.com/slow"} // terminating, still there
		high := testPod("high", "schedq", "4")
		high.Spec.Priority = ptr(int32(100))
		high.Status.NominatedNodeName = "n1"
		sneak := testPod("sneak", "schedq", "2")
		client := fakeCluster(testNode("n1", "4"), victim, high, sneak)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil,
				Options{SchedulerName: "schedq"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		time.Sleep(time.Second) // virtual time: let the start-up polls pass
		synctest.Wait()
		for _, name := range []string{"high", "sneak"} {
			p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName != "" {
				t.Errorf("%s bound to %s: the room on n1 is nominated to high", name, p.Spec.NodeName)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func ptr[T any](v T) *T { return &v }
