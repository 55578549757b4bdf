package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
)

// TestRebuildKeepsWokenPodsAwake: the queue rebuilt when a term ends
// parks behind its failure record only a pod the ended term's queue held
// parked. A pod that queue had woken since its failure (a change the
// record's fingerprints do not show: an assumption forgotten, a
// nomination let go) is queued to be tried: parked again behind the
// record, with the cluster's fingerprints unchanged, it would wait for
// the queue's 5-minute flush.
func TestRebuildKeepsWokenPodsAwake(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wake   bool // a change the fingerprints do not show wakes a after term 1
		parked bool // a is parked in the rebuilt queue
	}{
		{name: "parked when the term ended", wake: false, parked: true},
		{name: "woken before the term ended", wake: true, parked: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := fakeCluster(testNode("n1", "1"), testPod("a", "schedq", "2"))
				log := slog.New(slog.NewTextHandler(io.Discard, nil))
				tm := testTerms(t, fc, fc, scheduler.APIReporter{Client: fc, Recorder: events.NewFakeRecorder(10), Logger: log})

				// Term 1 finds a unschedulable and records why.
				ctx, end := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { tm.run(ctx); close(done) }()
				synctest.Wait()
				end()
				<-done
				got, err := fc.CoreV1().Pods("default").Get(context.Background(), "a", metav1.GetOptions{})
				if err != nil || got.Annotations[scheduler.FailureAnnotation] == "" {
					t.Fatalf("a has no failure record after term 1: %v", err)
				}
				synctest.Wait() // the informer has the record
				if tc.wake {
					// As a forgotten assumption's room would (no object).
					if err := tm.queues.Move(clusterevent.AssignedPodDelete, nil, nil, nil); err != nil {
						t.Fatal(err)
					}
				}
				if _, loc, _ := tm.queues.Get(framework.Key(got)); (loc == schedq.InUnschedulable) == tc.wake {
					t.Fatalf("a is %v in term 1's queue, want woken=%v", loc, tc.wake)
				}

				tm.rebuild(t.Context())
				if _, loc, _ := tm.queues.Get(framework.Key(got)); (loc == schedq.InUnschedulable) != tc.parked {
					t.Errorf("a is %v in the rebuilt queue, want parked=%v", loc, tc.parked)
				}
			})
		})
	}
}
