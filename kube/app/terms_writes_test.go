package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// TestTermEndsAfterItsEvictions: a term whose context ends while the
// evictor deletes a victim of its preemption (a request in flight that
// does not heed the context) does not end before that deletion has: a
// successor must not start while the old term still writes.
func TestTermEndsAfterItsEvictions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := profile.Default()
		if err != nil {
			t.Fatal(err)
		}
		fw, qcfg, q := frameworkAndQueue(t, &cfg.Profiles[0], nil)

		lowPrio, highPrio := int32(1), int32(100)
		low := testPod("low", "schedq", "2")
		low.Spec.Priority, low.Spec.NodeName = &lowPrio, "n1"
		high := testPod("high", "schedq", "2")
		high.Spec.Priority = &highPrio
		entered, release, deleted := make(chan struct{}), make(chan struct{}), make(chan struct{})
		client := heldWrites{fakeCluster(low, high), func(resource, subresource string) {
			if resource == "pods" && subresource == "" { // the deletion, not a binding
				close(entered)
				<-release // the request is in flight whatever the context says
				close(deleted)
			}
		}}
		c := scheduler.NewCache()
		h := &scheduler.Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
		h.AddNode(testNode("n1", "2"))
		h.AddPod(low)
		h.AddPod(high)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		tm := &terms{
			queues: &switchQueue{cur: q}, cache: c, handlers: h, qcfg: qcfg, client: client,
			backoff: newOutageBackoff(clock.RealClock{}), state: &state{}, log: log, reporter: quietReporter{},
			opts:    scheduler.Options{Profiles: []*profile.Framework{fw}, Logger: log},
			preempt: &scheduler.PreemptionOptions{Evictor: guardedEvictor{next: &scheduler.APIEvictor{Client: client, Logger: log}}},
		}
		ctx, cancel := context.WithCancel(t.Context())
		ended := make(chan struct{})
		go func() {
			tm.run(ctx)
			close(ended)
		}()
		<-entered
		cancel()
		synctest.Wait() // everything else has settled
		select {
		case <-ended:
			t.Error("the term ended while an eviction of its was under way")
		default:
		}
		close(release)
		<-ended
		select {
		case <-deleted:
		default:
			t.Fatal("the deletion never ended")
		}
	})
}

// TestTermWaitsForItsGangReleases: the end of a term (waitWrites) waits
// for the deletions of a gang release still in flight.
func TestTermWaitsForItsGangReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		member := testPod("m", "schedq", "1")
		release := make(chan struct{})
		client := heldWrites{fakeCluster(member), func(resource, subresource string) {
			if resource == "pods" && subresource == "" {
				<-release // the request is in flight whatever the context says
			}
		}}
		r := &scheduler.APIReleaser{Client: client}
		tm := &terms{releaser: r}
		released := make(chan struct{})
		r.Release(t.Context(), "default/g", []*v1.Pod{member}, "test", func([]error) { close(released) })
		ended := make(chan struct{})
		go func() {
			tm.waitWrites()
			close(ended)
		}()
		synctest.Wait()
		select {
		case <-ended:
			t.Error("the term ended while a gang release of its was under way")
		default:
		}
		close(release)
		<-ended
		select {
		case <-released:
		default:
			t.Fatal("the term ended before the release did")
		}
	})
}
