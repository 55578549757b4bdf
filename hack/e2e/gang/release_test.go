package gang

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// A gang left below minCount by a previous leader, with the room for its
// missing members taken by other pods, as a new scheduler process finds
// it: the scheduler first tries to complete it; 30 s later, at the next
// failed attempt (a node too small for a member wakes it), it deletes the
// bound members, which have a controller; the test, as their controller,
// recreates them, and once there is room for the whole gang it is bound
// whole.
func TestPartialGangReleasedAndBoundWhole(t *testing.T) {
	c := setup(t)
	ns := namespace(t, c)
	const name = "schedq-gang-release"
	makeNodes(t, c, "gang-release", 2, "4")
	makePodGroup(t, c, ns, "train", 4)
	ctx := context.Background()
	yes, zero := true, int64(0)
	member := func(i int, suffix string) *v1.Pod {
		group := "train"
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("train-%d%s", i, suffix),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: types.UID("job-train"), Controller: &yes}}},
			// No kubelet confirms a graceful deletion here: delete at once.
			Spec: v1.PodSpec{SchedulerName: name, SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: &group}, TerminationGracePeriodSeconds: &zero,
				Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		}
	}
	// What the killed leader left: members 0 and 1 bound on node 0.
	for i := range 2 {
		p, err := c.CoreV1().Pods(ns).Create(ctx, member(i, ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().Pods(ns).Bind(ctx, &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name, UID: p.UID},
			Target: v1.ObjectReference{Kind: "Node", Name: "gang-release-0"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A higher-priority pod took node 1.
	hi := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "high"},
		Spec: v1.PodSpec{NodeName: "gang-release-1", Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}}}}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, hi, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 4; i++ {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, member(i, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	startScheduler(t, name)
	// The grace period counts from the gang's first failed attempt, which
	// the scheduler notes once it has reported the attempt on each member
	// it tried (a status patch each, in turn): so from when both show it,
	// not from the scheduler's start, which a loaded machine can stretch
	// past any margin (the attempt at 31 s after the start then fell
	// inside the grace period, released nothing, and nothing brought
	// another attempt).
	waitFor(t, time.Minute, "the gang's first failed attempt, reported on both members it tried", func(context.Context) (bool, error) {
		return conditionMessage(t, c, ns, "train-2") != "" && conditionMessage(t, c, ns, "train-3") != "", nil
	})
	failed := time.Now()
	// A wait on the real clock that cannot be removed: the grace period
	// (30 s) runs on the wall clock in the scheduler (app.Options.Clock
	// does not reach it), and nothing shows when it has passed until an
	// attempt after it, which the tainted node below brings. A second
	// more for the scheduler's note after its last report.
	time.Sleep(time.Until(failed.Add(31 * time.Second)))
	// A node with room for a member, but tainted: an event the gang's
	// hints accept, which brings its next attempt, and no room.
	taintedNode(t, c, "gang-release-tainted", "2")
	waitFor(t, time.Minute, "the bound members to be released", func(context.Context) (bool, error) {
		return boundCount(t, c, ns, []string{"train-0", "train-1"}) == 0, nil
	})
	released := time.Since(started)
	waitFor(t, time.Minute, "a GangReleased event on a released member", func(context.Context) (bool, error) {
		return eventWith(t, c, ns, "train-0", "GangReleased"), nil
	})
	// As the Job would: recreate them. And the room comes back.
	for i := range 2 {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, member(i, "-new"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CoreV1().Pods(ns).Delete(ctx, "high", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	whole := waitBound(t, c, ns, []string{"train-0-new", "train-1-new", "train-2", "train-3"}, time.Minute)
	figure(t, "gang with 2 of minCount 4 bound and no room for the rest: released %v after the scheduler started (grace 30 s, then the next attempt); bound whole %v after the room came back",
		released.Round(time.Millisecond), whole.Round(time.Millisecond))
}

// taintedNode creates a node with cpu and a NoSchedule taint no member
// tolerates, deleted at the end.
func taintedNode(t *testing.T, c kubernetes.Interface, name, cpu string) {
	t.Helper()
	ctx := context.Background()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:   v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "other", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
}
