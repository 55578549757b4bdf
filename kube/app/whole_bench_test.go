package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	schedprofile "k8s.io/kubernetes/pkg/scheduler/profile"

	"github.com/schedq/schedq/kube/plugins"
)

// BenchmarkWholeScheduler runs kube-scheduler v1.37.2 (pkg/scheduler,
// in-process, its default profile and parallelism) and schedq's scheduler
// (run, on kube-scheduler's framework with the same default profile:
// --upstream-plugins) side by side on the same workload: a fake
// clientset holding the nodes and the pending pods, all of which fit.
// One iteration is one whole run, from the scheduler's start until the
// last pod is bound; it reports pods/s and the process's CPU time per
// pod. Both take the fake clientset's cost (copies, watch fan-out).
//
//	go test -run '^$' -bench BenchmarkWholeScheduler -benchtime=1x -count=3 ./kube/app/
func BenchmarkWholeScheduler(b *testing.B) {
	watch.DefaultChanSize = 1 << 20 // the fake's watchers panic on a full channel
	for _, w := range []struct {
		name        string
		nodes, pods int
	}{{"SchedulingBasic", 5000, 10000}, {"Small", 500, 2000}} {
		for _, who := range []string{"kube-scheduler", "schedq"} {
			b.Run(w.name+"/"+who, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					c := newBenchCluster(w.nodes, w.pods)
					b.StartTimer()
					cpu0 := procCPU(b)
					start := time.Now()
					if who == "schedq" {
						runSchedqOn(b, c)
					} else {
						runKubeSchedulerOn(b, c)
					}
					wall := time.Since(start)
					b.ReportMetric(float64(w.pods)/wall.Seconds(), "pods/s")
					b.ReportMetric(float64(procCPU(b)-cpu0)/float64(w.pods), "cpu-ns/pod")
				}
			})
		}
	}
}

// benchCluster is a fake clientset whose pods/binding subresource binds
// the pod, counting the bindings; done closes at the last one.
type benchCluster struct {
	client *fake.Clientset
	pods   int64
	bound  atomic.Int64
	done   chan struct{}
}

func newBenchCluster(nodes, pods int) *benchCluster {
	objs := make([]runtime.Object, 0, nodes+pods)
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		objs = append(objs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": fmt.Sprint("zone-", i%3)}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
			}}})
	}
	for i := range pods {
		name := fmt.Sprintf("pod-%d", i)
		objs = append(objs, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.PodSpec{SchedulerName: v1.DefaultSchedulerName, Containers: []v1.Container{{Name: "c",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}}}}}})
	}
	c := &benchCluster{client: fake.NewSimpleClientset(objs...), pods: int64(pods), done: make(chan struct{})}
	c.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		bd := ca.GetObject().(*v1.Binding)
		obj, err := c.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), bd.Namespace, bd.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		if p.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s/%s is already bound", p.Namespace, p.Name)
		}
		p.Spec.NodeName = bd.Target.Name
		if err := c.client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace); err != nil {
			return true, nil, err
		}
		if c.bound.Add(1) == c.pods {
			close(c.done)
		}
		return true, nil, nil
	})
	return c
}

// wait waits for the last binding, failing b after a generous bound.
func (c *benchCluster) wait(b *testing.B) {
	select {
	case <-c.done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d of %d pods bound after 10 minutes", c.bound.Load(), c.pods)
	}
}

func runSchedqOn(b *testing.B, c *benchCluster) {
	o := Options{SchedulerName: v1.DefaultSchedulerName, Scoring: plugins.LeastAllocated}
	o.Config.Upstream = true
	if err := o.loadProfile(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: c.client, events: c.client, lease: c.client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	c.wait(b)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func runKubeSchedulerOn(b *testing.B, c *benchCluster) {
	schedmetrics.Register()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(c.client, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.client.EventsV1()})
	sched, err := kubescheduler.New(ctx, c.client, factory, nil, schedprofile.NewRecorderFactory(broadcaster))
	if err != nil {
		b.Fatal(err)
	}
	broadcaster.StartRecordingToSink(ctx.Done())
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go sched.Run(ctx)
	c.wait(b)
	cancel()
	broadcaster.Shutdown()
	factory.Shutdown()
}

// procCPU is the process's user and system CPU time.
func procCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
