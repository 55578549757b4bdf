package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
)

// TestReporterKeepsTransitionTime: the PodScheduled condition's
// lastTransitionTime is when it last changed status, as kube-scheduler
// keeps it; a new failure message on a pod already PodScheduled=False
// updates the message and the probe time only.
func TestReporterKeepsTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		reason, message string
	}{
		"new message":      {v1.PodReasonUnschedulable, "0/2 nodes are available: 2 Insufficient cpu."},
		"now an error":     {"SchedulerError", "binding rejected: timeout"},
		"same, new reason": {"SchedulerError", "0/1 nodes are available: 1 Insufficient cpu."},
	} {
		t.Run(name, func(t *testing.T) {
			p := cpuPod("p", "1")
			client := fake.NewClientset(p)
			now := t0
			r := APIReporter{Client: client, Recorder: events.NewFakeRecorder(10), Now: func() time.Time { return now }}
			ctx := context.Background()
			r.Unschedulable(ctx, p, v1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.", nil)
			got, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			now = t0.Add(time.Minute)
			r.Unschedulable(ctx, got, tc.reason, tc.message, nil)
			got, _ = client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
			c := scheduledCondition(got)
			if c == nil || c.Message != tc.message || c.Reason != tc.reason {
				t.Fatalf("condition %+v, want reason %q message %q", c, tc.reason, tc.message)
			}
			if !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("lastTransitionTime %v, want %v (the status did not change)", c.LastTransitionTime, t0)
			}
			if !c.LastProbeTime.Time.Equal(now) {
				t.Errorf("lastProbeTime %v, want %v", c.LastProbeTime, now)
			}
		})
	}
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestFailedSchedulingNoteFitsTheEventsAPI: the events API refuses a note
// longer than 1024 bytes, so a long failure message is cut to fit (ending
// in "...") in the event, as kube-scheduler cuts it; the condition keeps
// the whole message.
func TestFailedSchedulingNoteFitsTheEventsAPI(t *testing.T) {
	for name, tc := range map[string]struct {
		message string
		cut     bool
	}{
		"short":       {"0/1 nodes are available: 1 Insufficient cpu.", false},
		"exactly max": {strings.Repeat("x", noteLimit), false},
		"long":        {strings.Repeat("0/9 nodes are available: 9 Insufficient cpu. ", 40), true},
	} {
		t.Run(name, func(t *testing.T) {
			p := cpuPod("p", "1")
			client := fake.NewClientset(p)
			rec := events.NewFakeRecorder(10)
			r := APIReporter{Client: client, Recorder: rec}
			r.Unschedulable(context.Background(), p, v1.PodReasonUnschedulable, tc.message, nil)
			ev := <-rec.Events
			note := strings.TrimPrefix(ev, "Warning FailedScheduling ")
			if len(note) > noteLimit {
				t.Errorf("note is %d bytes, over the events API's %d", len(note), noteLimit)
			}
			if cut := note != tc.message; cut != tc.cut {
				t.Errorf("note cut %v, want %v: %q", cut, tc.cut, note)
			}
			if tc.cut && (!strings.HasSuffix(note, "...") || !strings.HasPrefix(tc.message, strings.TrimSuffix(note, "..."))) {
				t.Errorf("note %q is not the message's start and \"...\"", note)
			}
			got, _ := client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
			if c := scheduledCondition(got); c == nil || c.Message != tc.message {
				t.Errorf("condition %+v does not carry the whole message", c)
			}
		})
	}
}

// TestReporterSetsObservedGeneration: the PodScheduled=False condition
// names the pod generation it was found for, as kube-scheduler v1.37 sets
// it (PodObservedGenerationTracking is GA and always on), so that a
// client can tell a condition about an older spec.
func TestReporterSetsObservedGeneration(t *testing.T) {
	for name, gen := range map[string]int64{"first generation": 1, "after spec updates": 4} {
		t.Run(name, func(t *testing.T) {
			p := cpuPod("p", "1")
			p.Generation = gen
			client := fake.NewClientset(p)
			r := APIReporter{Client: client, Recorder: events.NewFakeRecorder(10)}
			r.Unschedulable(context.Background(), p, v1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.", nil)
			got, _ := client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
			if c := scheduledCondition(got); c == nil || c.ObservedGeneration != gen {
				t.Fatalf("condition %+v, want observedGeneration %d", c, gen)
			}
		})
	}
}
