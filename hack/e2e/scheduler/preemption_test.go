package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// victimPods creates count pods pinned to node that terminate at once
// when deleted (there is no kubelet to end a graceful termination),
// unless s sets a grace period: then they stay terminating.
func victimPods(t *testing.T, c kubernetes.Interface, ns, prefix, node string, count int, s podSpec) []string {
	t.Helper()
	zero := int64(0)
	var names []string
	for i := range count {
		p := newPod(ns, fmt.Sprintf("%s-%d", prefix, i), s)
		if s.grace == nil {
			p.Spec.TerminationGracePeriodSeconds = &zero
		}
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	return names
}

func gone(t testing.TB, c kubernetes.Interface, ns, name string) bool {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.DeletionTimestamp != nil
}

// 9. Preemption: two full nodes, one holding pods a PodDisruptionBudget
// protects (of the lowest priority), the other pods of a higher priority
// but unprotected. A high-priority pod preempts on the unprotected node,
// is nominated there and binds there; the protected pods stay. A pod
// whose policy is Never preempts nothing. kube-scheduler's
// DefaultPreemption chooses the victims, through the framework.
func TestPreemption(t *testing.T) {
	testPreemption(t, "framework", startScheduler)
}

func testPreemption(t *testing.T, path string, start func(*testing.T, string) *sched) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	priorityClass(t, c, "e2e-low", 0)
	priorityClass(t, c, "e2e-mid", 100)
	priorityClass(t, c, "e2e-high", 1000)
	never := v1.PreemptNever
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-high-never"}, Value: 1000, PreemptionPolicy: &never}
	if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	one := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}
	// No disruption controller runs here: the budget's status keeps 0
	// disruptions allowed, which forbids evicting any db pod.
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := makeNodes(t, c, "preempt-"+path, 2, nodeSpec{cpu: "2", memory: "4Gi"})
	s := start(t, "schedq-preempt-"+path)
	spec := func(class string, labels map[string]string) podSpec {
		return podSpec{scheduler: s.name, cpu: "1", memory: "64Mi", priorityClass: class, labels: labels}
	}
	db := victimPods(t, c, ns, "db", nodes[0], 2, spec("e2e-low", map[string]string{"app": "db"}))
	web := victimPods(t, c, ns, "web", nodes[1], 2, spec("e2e-mid", map[string]string{"app": "web"}))
	waitBound(t, c, ns, append(append([]string(nil), db...), web...), time.Minute)

	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	begin := time.Now()
	p := newPod(ns, "high", podSpec{scheduler: s.name, cpu: "2", memory: "64Mi", priorityClass: "e2e-high"})
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, c, ns, []string{"high"}, time.Minute)
	watchFor(t, w, 30*time.Second, "high nominated to "+nodes[1]+" and the web pods marked DisruptionTarget", func(seen map[string]bool) bool {
		return seen["nominated:high:"+nodes[1]] && seen["target:web-0"] && seen["target:web-1"]
	})
	took := time.Since(begin)
	if b := bound(t, c, ns); b["high"] != nodes[1] {
		t.Fatalf("high bound to %q, want %s (the node whose victims no budget protects)", b["high"], nodes[1])
	}
	for _, n := range web {
		if !gone(t, c, ns, n) {
			t.Errorf("victim %s still there", n)
		}
	}
	for _, n := range db {
		if gone(t, c, ns, n) {
			t.Errorf("protected pod %s was evicted", n)
		}
	}
	if got := s.metric(t, "scheduler_preemption_attempts_total"); got < 1 {
		t.Errorf("scheduler_preemption_attempts_total = %v", got)
	}

	// preemptionPolicy: Never: the cluster is full and nothing moves.
	polite := newPod(ns, "polite", podSpec{scheduler: s.name, cpu: "1", memory: "64Mi", priorityClass: "e2e-high-never"})
	if _, err := c.CoreV1().Pods(ns).Create(ctx, polite, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "polite to be reported unschedulable", func(context.Context) (bool, error) {
		return strings.Contains(podScheduledFalse(t, c, ns, "polite"), "preemptionPolicy=Never"), nil
	})
	for _, n := range db {
		if gone(t, c, ns, n) {
			t.Errorf("pod %s evicted for a pod that may not preempt", n)
		}
	}
	figure(t, "high-priority pod bound %v after it arrived in a full cluster, on the node without a budget; a Never pod preempted nothing",
		took.Round(time.Millisecond))
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).Delete(ctx, "polite", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	testPreemptionTakesLowerNominations(t, c, ns, path, s.name)
}

// testPreemptionTakesLowerNominations: on a node of its own, full of two
// low-priority pods that stay terminating once deleted (no kubelet ends
// their grace period), mid preempts one and is nominated there; then
// top, of a higher priority, is nominated there too (the terminating
// victim's room is enough for it), and mid's status.nominatedNodeName is
// cleared: it can no longer count on that room.
func testPreemptionTakesLowerNominations(t *testing.T, c kubernetes.Interface, ns, path, scheduler string) {
	ctx := context.Background()
	n := makeNodes(t, c, "preempt-nom-"+path, 1, nodeSpec{cpu: "2", memory: "4Gi"})[0]
	hour := int64(3600)
	pinned := func(class string) podSpec {
		return podSpec{scheduler: scheduler, cpu: "1", memory: "64Mi", priorityClass: class,
			nodeSelector: map[string]string{"kubernetes.io/hostname": n}, grace: &hour}
	}
	waitBound(t, c, ns, victimPods(t, c, ns, "keep", n, 2, pinned("e2e-low")), time.Minute)
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.CoreV1().Pods(ns).Create(ctx, newPod(ns, "mid", pinned("e2e-mid")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchFor(t, w, 30*time.Second, "mid nominated to "+n, func(seen map[string]bool) bool {
		return seen["nominated:mid:"+n] && (seen["target:keep-0"] || seen["target:keep-1"])
	})
	if _, err := c.CoreV1().Pods(ns).Create(ctx, newPod(ns, "top", pinned("e2e-high")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchFor(t, w, 30*time.Second, "top nominated to "+n+" and mid's nomination cleared", func(seen map[string]bool) bool {
		return seen["nominated:top:"+n] && seen["unnominated:mid"]
	})
}

// watchFor reads pod events from w until done says that what it has seen
// is enough: "nominated:POD:NODE" for a status.nominatedNodeName,
// "unnominated:POD" for an event of POD without one (once an earlier
// call saw POD nominated, a clear), and "target:POD" for a
// DisruptionTarget condition.
func watchFor(t *testing.T, w watch.Interface, timeout time.Duration, what string, done func(map[string]bool) bool) {
	t.Helper()
	seen := map[string]bool{}
	deadline := time.After(timeout)
	for !done(seen) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before %s", what)
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			if n := p.Status.NominatedNodeName; n != "" {
				seen["nominated:"+p.Name+":"+n] = true
			} else {
				seen["unnominated:"+p.Name] = true
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == v1.DisruptionTarget && cond.Status == v1.ConditionTrue {
					seen["target:"+p.Name] = true
				}
			}
		case <-deadline:
			t.Fatalf("waiting for %s: saw only %v", what, seen)
		}
	}
}
