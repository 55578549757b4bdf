package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/hack/e2e/cluster"
)

// 1. Basic: every pod of ours is bound to a node that fits its requests,
// selector and taints; pods of another scheduler are left alone; nothing
// is bound twice.
func TestBasic(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "basic-plain", 30, nodeSpec{cpu: "4", memory: "16Gi"})
	makeNodes(t, c, "basic-ssd", 10, nodeSpec{cpu: "8", memory: "16Gi", labels: map[string]string{"disk": "ssd"}})
	makeNodes(t, c, "basic-gpu", 10, nodeSpec{cpu: "8", memory: "32Gi",
		taints: []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}})
	s := startScheduler(t, "schedq-basic")

	start := time.Now()
	var ours []string
	ours = append(ours, makePods(t, c, ns, "plain", 350, podSpec{scheduler: s.name, cpu: "250m", memory: "256Mi"})...)
	ours = append(ours, makePods(t, c, ns, "ssd", 100, podSpec{scheduler: s.name, cpu: "250m", memory: "256Mi",
		nodeSelector: map[string]string{"disk": "ssd"}})...)
	ours = append(ours, makePods(t, c, ns, "gpu", 50, podSpec{scheduler: s.name, cpu: "500m", memory: "1Gi",
		tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}})...)
	theirs := makePods(t, c, ns, "theirs", 20, podSpec{scheduler: "someone-else", cpu: "100m", memory: "64Mi"})
	waitBound(t, c, ns, ours, 2*time.Minute)
	elapsed := time.Since(start)

	b := bound(t, c, ns)
	for _, n := range theirs {
		if b[n] != "" {
			t.Errorf("pod %s of another scheduler was bound to %s", n, b[n])
		}
	}
	for _, n := range ours {
		node := b[n]
		switch {
		case strings.HasPrefix(n, "ssd-") && !strings.HasPrefix(node, "basic-ssd-"):
			t.Errorf("%s needs disk=ssd, bound to %s", n, node)
		case strings.HasPrefix(node, "basic-gpu-") && !strings.HasPrefix(n, "gpu-"):
			t.Errorf("%s does not tolerate the gpu taint, bound to %s", n, node)
		}
	}
	checkFits(t, c, ns)
	if got := s.metric(t, "scheduler_bindings_total", `result="error"`); got != 0 {
		t.Errorf("%v bindings failed (a pod bound twice would be refused)", got)
	}
	// An attempt counts as scheduled when its binding's answer reaches
	// the scheduler, which may be just after the test sees the pod bound.
	waitFor(t, 10*time.Second, "the 500 bindings' attempts to be counted", func(context.Context) (bool, error) {
		return s.metric(t, "scheduler_schedule_attempts_total", `result="scheduled"`) >= 500, nil
	})
	if got := s.metric(t, "scheduler_schedule_attempts_total", `result="scheduled"`); got != 500 {
		t.Errorf("%v scheduled attempts for 500 pods", got)
	}
	figure(t, "500 pods on 50 nodes bound in %v (%.0f pods/s)", elapsed.Round(time.Millisecond), 500/elapsed.Seconds())
}

// 2. Event-driven wake-up: pods that fit nowhere stay pending with the
// PodScheduled=False message; a fitting node wakes them at once, not at
// the 5-minute leftover flush.
func TestWakeUpOnNodeAdd(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "wake-small", 3, nodeSpec{cpu: "1", memory: "4Gi"})
	s := startScheduler(t, "schedq-wake")
	pods := makePods(t, c, ns, "big", 10, podSpec{scheduler: s.name, cpu: "2", memory: "1Gi"})
	waitFor(t, time.Minute, "PodScheduled=False on the big pods", func(context.Context) (bool, error) {
		for _, p := range pods {
			if podScheduledFalse(t, c, ns, p) == "" {
				return false, nil
			}
		}
		return true, nil
	})
	msg := podScheduledFalse(t, c, ns, pods[0])
	if want := "0/3 nodes are available: 3 Insufficient cpu."; !strings.Contains(msg, "Insufficient cpu") || !strings.HasPrefix(msg, "0/") {
		t.Errorf("message %q, want one like %q", msg, want)
	}
	if x := s.get(t, "/debug/queue/"+ns+"/"+pods[0]+"?format=text"); !strings.Contains(x, "unschedulable") || !strings.Contains(x, "NodeResourcesFit") {
		t.Errorf("explain:\n%s", x)
	}
	makeNodes(t, c, "wake-big", 1, nodeSpec{cpu: "64", memory: "64Gi"})
	// 30s is far from the 5-minute leftover flush, and the metrics say
	// which it was: the node's arrival moved them, no timeout did. (No
	// tighter wall-clock bound: CI machines are slow and shared.)
	delay := waitBound(t, c, ns, pods, 30*time.Second)
	if got := s.metric(t, "scheduler_queue_incoming_pods_total", `event="NodeAdd"`); got < 1 {
		t.Errorf("%v pods moved by NodeAdd, want the parked ones", got)
	}
	if got := s.metric(t, "scheduler_queue_incoming_pods_total", `event="UnschedulableTimeout"`); got != 0 {
		t.Errorf("%v pods retried by the leftover flush, want 0", got)
	}
	figure(t, "10 parked pods bound %v after a fitting node was added", delay.Round(time.Millisecond))
}

// 3. Gates: a gated pod stays pending and is not attempted; once its gates
// are removed, it binds.
func TestSchedulingGates(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "gates", 2, nodeSpec{cpu: "4", memory: "8Gi"})
	s := startScheduler(t, "schedq-gates")
	makePods(t, c, ns, "gated", 1, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", gates: []string{"example.com/wait"}})
	free := makePods(t, c, ns, "free", 1, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi"})
	waitBound(t, c, ns, free, 30*time.Second)
	waitFor(t, 10*time.Second, "the gated pod to be reported gated", func(context.Context) (bool, error) {
		return strings.Contains(s.get(t, "/debug/queue/"+ns+"/gated-0?format=text"), "gated by SchedulingGates"), nil
	})
	if b := bound(t, c, ns); b["gated-0"] != "" {
		t.Fatal("a gated pod was bound")
	}
	waitFor(t, 10*time.Second, "the free pod's attempt to be counted", func(context.Context) (bool, error) {
		return s.metric(t, "scheduler_schedule_attempts_total") >= 1, nil
	})
	if got := s.metric(t, "scheduler_schedule_attempts_total"); got != 1 {
		t.Fatalf("%v attempts: the gated pod was tried", got)
	}
	ctx := context.Background()
	p, err := c.CoreV1().Pods(ns).Get(ctx, "gated-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.SchedulingGates = nil
	if _, err := c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	delay := waitBound(t, c, ns, []string{"gated-0"}, 30*time.Second)
	figure(t, "gated pod bound %v after its gates were removed", delay.Round(time.Millisecond))
}

// 4. Priority: under pressure, higher-priority pods bind first.
func TestPriorityUnderPressure(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	priorityClass(t, c, "e2e-high", 1000)
	priorityClass(t, c, "e2e-low", 0)
	// Pods first, then the scheduler: they are all pending when it starts.
	low := makePods(t, c, ns, "low", 20, podSpec{scheduler: "schedq-prio", cpu: "1", memory: "64Mi", priorityClass: "e2e-low"})
	high := makePods(t, c, ns, "high", 10, podSpec{scheduler: "schedq-prio", cpu: "1", memory: "64Mi", priorityClass: "e2e-high"})
	makeNodes(t, c, "prio", 3, nodeSpec{cpu: "4", memory: "8Gi"})
	startScheduler(t, "schedq-prio")
	waitBound(t, c, ns, high, time.Minute)
	waitFor(t, time.Minute, "room to be full", func(context.Context) (bool, error) {
		n := 0
		for _, node := range bound(t, c, ns) {
			if node != "" {
				n++
			}
		}
		return n == 12, nil
	})
	b := bound(t, c, ns)
	lowBound := 0
	for _, p := range low {
		if b[p] != "" {
			lowBound++
		}
	}
	if lowBound != 2 {
		t.Fatalf("%d low-priority pods bound, want 2 (12 slots, 10 high)", lowBound)
	}
	figure(t, "all 10 high-priority pods bound, 2 of 20 low-priority pods in the 12 slots left")
}

// 5. Affinity: a pod with required affinity to a pod not yet scheduled
// binds once that pod is assigned, through the targeted move.
func TestAffinityTargetedMove(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "aff", 5, nodeSpec{cpu: "4", memory: "8Gi"})
	s := startScheduler(t, "schedq-aff")
	aff := &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: "kubernetes.io/hostname",
	}}}}
	makePods(t, c, ns, "web", 1, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", affinity: aff})
	waitFor(t, 30*time.Second, "web to park on InterPodAffinity", func(context.Context) (bool, error) {
		return strings.Contains(s.get(t, "/debug/queue/"+ns+"/web-0?format=text"), "InterPodAffinity"), nil
	})
	start := time.Now()
	makePods(t, c, ns, "db", 1, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", labels: map[string]string{"app": "db"}})
	waitBound(t, c, ns, []string{"db-0", "web-0"}, 30*time.Second)
	b := bound(t, c, ns)
	if b["web-0"] != b["db-0"] {
		t.Fatalf("web on %s, db on %s: affinity to the db's host not honoured", b["web-0"], b["db-0"])
	}
	if got := s.metric(t, "scheduler_queue_incoming_pods_total", `event="AssignedPodAdd"`); got < 1 {
		t.Errorf("the web pod was not moved by the assigned pod's arrival (AssignedPodAdd = %v)", got)
	}
	figure(t, "pod with affinity bound %v after its peer was created", time.Since(start).Round(time.Millisecond))
}

// 8. Bad objects: a pod larger than any node, a pod naming a missing
// priority class, and a node with no allocatable; the scheduler keeps
// running and reports each clearly.
func TestBadObjects(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "bad-empty", 1, nodeSpec{noStatus: true})
	makeNodes(t, c, "bad-ok", 2, nodeSpec{cpu: "2", memory: "4Gi"})
	s := startScheduler(t, "schedq-bad")
	huge := makePods(t, c, ns, "huge", 1, podSpec{scheduler: s.name, cpu: "1000", memory: "1Gi"})
	waitFor(t, 30*time.Second, "the huge pod's PodScheduled=False", func(context.Context) (bool, error) {
		return podScheduledFalse(t, c, ns, huge[0]) != "", nil
	})
	msg := podScheduledFalse(t, c, ns, huge[0])
	// kube-scheduler's message: each reason with its count of nodes, the
	// strings sorted ("1 Insufficient memory, 1 Too many pods, 3
	// Insufficient cpu": the node with no allocatable fails all three).
	if !strings.HasPrefix(msg, "0/3 nodes are available: ") || !strings.Contains(msg, "3 Insufficient cpu") {
		t.Errorf("huge pod: %q", msg)
	}
	_, err := c.CoreV1().Pods(ns).Create(context.Background(),
		newPod(ns, "noclass", podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", priorityClass: "does-not-exist"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "does-not-exist") {
		t.Errorf("a pod naming a missing priority class: %v", err)
	}
	ok := makePods(t, c, ns, "ok", 4, podSpec{scheduler: s.name, cpu: "500m", memory: "64Mi"})
	waitBound(t, c, ns, ok, 30*time.Second)
	for _, p := range ok {
		if n := bound(t, c, ns)[p]; strings.HasPrefix(n, "bad-empty") {
			t.Errorf("%s bound to the node with no allocatable", p)
		}
	}
	figure(t, "huge pod: %q; missing priority class refused by the API server: %v; scheduler still scheduling", msg, err != nil)
}

// 9. Load: 5000 pods on 500 nodes. The pods are created first (16 at a
// time), then the scheduler starts, so the figure is scheduling throughput,
// not the test's creation rate.
func TestLoad(t *testing.T) {
	if testing.Short() {
		cluster.Skip(t, "load test skipped in -short mode")
	}
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "load", 500, nodeSpec{cpu: "8", memory: "32Gi"})
	const n = 5000
	names := make([]string, n)
	errs := make(chan error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				names[i] = fmt.Sprintf("p-%d", i)
				_, err := c.CoreV1().Pods(ns).Create(context.Background(),
					newPod(ns, names[i], podSpec{scheduler: "schedq-load", cpu: "100m", memory: "128Mi"}), metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	start := time.Now()
	startScheduler(t, "schedq-load")
	waitBound(t, c, ns, names, 5*time.Minute)
	elapsed := time.Since(start)
	checkFits(t, c, ns)
	figure(t, "5000 pending pods on 500 nodes bound in %v from the scheduler's start: %.0f pods/s", elapsed.Round(time.Millisecond), n/elapsed.Seconds())
}

// TestOverflowingRequests: requests whose quantities overflow int64 when
// converted (as milli-CPU, or as bytes) are refused with a clear reason in
// the PodScheduled condition, never bound, and do not corrupt the nodes'
// accounting: plain pods still bind, and no node holds more than it has.
func TestOverflowingRequests(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "ovf", 2, nodeSpec{cpu: "4", memory: "8Gi"})
	s := startScheduler(t, "schedq-ovf")
	var absurd []string
	for i, spec := range []podSpec{
		{cpu: "1e18", memory: "64Mi"},
		{cpu: "100P", memory: "64Mi"},
		{cpu: "9223372036854775807", memory: "64Mi"},
	} {
		spec.scheduler = s.name
		absurd = append(absurd, makePods(t, c, ns, fmt.Sprintf("absurd%d", i), 1, spec)...)
	}
	for _, p := range absurd {
		waitFor(t, 30*time.Second, p+"'s PodScheduled=False", func(context.Context) (bool, error) {
			return podScheduledFalse(t, c, ns, p) != "", nil
		})
		if msg := podScheduledFalse(t, c, ns, p); !strings.Contains(msg, "overflows") {
			t.Errorf("%s: PodScheduled message %q does not say the request overflows", p, msg)
		}
	}
	ok := makePods(t, c, ns, "ok", 6, podSpec{scheduler: s.name, cpu: "1", memory: "64Mi"})
	waitBound(t, c, ns, ok, 30*time.Second)
	b := bound(t, c, ns)
	for _, p := range absurd {
		if n := b[p]; n != "" {
			t.Errorf("%s bound to %s", p, n)
		}
	}
	checkFits(t, c, ns)
	figure(t, "pods requesting cpu 1e18, 100P and 9223372036854775807: refused (%q); 6 plain pods bound, no node over-committed", podScheduledFalse(t, c, ns, absurd[0]))
}
