package scheduler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func hasDisruptionTarget(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// TestAPIEvictor: the preemptor is nominated in its status, a victim is
// marked and deleted, and a victim already gone is no failure.
func TestAPIEvictor(t *testing.T) {
	high := prioPod("high", 1000, 100)
	low := runningPod("low", "a", 1000, 1, t0)
	gone := runningPod("gone", "a", 1000, 1, t0)
	cs := fake.NewClientset(high, low)
	var marked *v1.Pod
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name := a.(k8stesting.DeleteAction).GetName(); name == "low" {
			obj, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", name)
			if err == nil {
				marked = obj.(*v1.Pod)
			}
		}
		return false, nil, nil
	})
	e := &APIEvictor{Client: cs, SchedulerName: "schedq"}
	var errs []error
	done := make(chan struct{})
	e.Preempt(context.Background(), Preemption{Preemptor: high, Node: "a", Victims: []*v1.Pod{low, gone}}, func(es []error) {
		errs = es
		close(done)
	})
	<-done
	e.Wait()
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	got, err := cs.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
	if err != nil || got.Status.NominatedNodeName != "a" {
		t.Fatalf("preemptor status %+v, err %v", got.Status, err)
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("victim not deleted: %v", err)
	}
	if marked == nil || !hasDisruptionTarget(marked) {
		t.Fatalf("the victim was deleted without the DisruptionTarget condition: %+v", marked)
	}
}

// TestAPIEvictorNamesThePreemptorsProfile: a victim's DisruptionTarget
// condition names the preemptor's profile, as kube-scheduler's does with
// several profiles, not the first one's.
func TestAPIEvictorNamesThePreemptorsProfile(t *testing.T) {
	high := prioPod("high", 1000, 100)
	high.Spec.SchedulerName = "b"
	low := runningPod("low", "a", 1000, 1, t0)
	cs := fake.NewClientset(high, low)
	var marked *v1.Pod
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if obj, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", a.(k8stesting.DeleteAction).GetName()); err == nil {
			marked = obj.(*v1.Pod)
		}
		return false, nil, nil
	})
	e := &APIEvictor{Client: cs, SchedulerName: "a"}
	done := make(chan struct{})
	e.Preempt(context.Background(), Preemption{Preemptor: high, Node: "a", Victims: []*v1.Pod{low}}, func([]error) { close(done) })
	<-done
	e.Wait()
	if marked == nil || len(marked.Status.Conditions) != 1 || !strings.HasPrefix(marked.Status.Conditions[0].Message, "b: ") {
		t.Fatalf("victim's conditions %+v, want one naming profile b", marked)
	}
}
