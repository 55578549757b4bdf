package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	schedprofile "k8s.io/kubernetes/pkg/scheduler/profile"
)

// BenchmarkWholeScheduler runs kube-scheduler v1.37.2 (pkg/scheduler,
// in-process, its default profile and parallelism) and schedq's scheduler
// (run, on kube-scheduler's framework with the same default profile)
// side by side on the same workload: a fake
// clientset holding the nodes and the pending pods, all of which fit.
// One iteration is one whole run, from the scheduler's start until the
// last pod is bound (its shutdown after that is not counted); it reports
// pods/s and the process's CPU time per pod over that window. Both take the fake clientset's cost (copies, watch fan-out).
//
// schedq-forecasting is schedq with a client asking it, once a second, for
// a pending pod's predicted start (GET /debug/forecast/...): a forecast of
// the whole live state is under way whenever the last is older than its
// TTL, beside the scheduling.
//
// In Arrivals the cluster starts empty: once each pod has been found
// unschedulable (its status written once), the nodes are created, one
// after another, as fast as the fake takes them, and the clock runs from
// the first node to the last binding. How many pods each node wakes, and
// when, is the queue's decision.
//
// In Unschedulable, 1,000 pods that fit no node (64 CPUs, on nodes of 32)
// wait beside the 10,000 that fit, and each pod that fits ends as soon as
// it is bound (deleted): every binding is followed by an assigned pod's
// deletion, an event for which the stuck pods may be tried again. Whether
// they are is the queue's decision; pods/s counts the pods that fit.
//
// In Gangs, the pods that fit are the members of PodGroups of 8 (gang
// minCount 8, scheduling.k8s.io/v1beta1): kube-scheduler's with its
// GenericWorkload feature gate on (its GangScheduling plugin), schedq's
// with its own gang quorum (it runs kube-scheduler's plugins with the
// gate off).
//
//	go test -run '^$' -bench BenchmarkWholeScheduler -benchtime=1x -count=3 ./kube/app/
func BenchmarkWholeScheduler(b *testing.B) {
	for _, w := range []benchWorkload{
		{name: "SchedulingBasic", nodes: 5000, pods: 10000},
		{name: "Small", nodes: 500, pods: 2000},
		{name: "Arrivals", nodes: 500, pods: 2000, arrive: true},
		{name: "Unschedulable", nodes: 500, pods: 10000, stuck: 1000, churn: true},
		{name: "Gangs", nodes: 500, pods: 2000, gangSize: 8},
	} {
		for _, who := range []string{"kube-scheduler", "schedq", "schedq-forecasting"} {
			b.Run(w.name+"/"+who, func(b *testing.B) {
				gateFor(b, w, who)
				defer setWatchBuffer(w)()
				for b.Loop() {
					b.StopTimer()
					c := newBenchCluster(w)
					b.StartTimer()
					wall, cpu := runWorkload(b, c, w, who)
					b.ReportMetric(float64(w.pods)/wall.Seconds(), "pods/s")
					b.ReportMetric(float64(cpu)/float64(w.pods), "cpu-ns/pod")
				}
			})
		}
	}
}

// setWatchBuffer sizes the fake clientset's watch channels for w and
// returns what restores the size. The fake's watchers panic on a full
// channel, and each watch's channel is made (and cleared) whole when the
// watch opens, inside the run's window: a size of 1<<20 cleared about
// 32 MiB per watch, up to a fifth of a small run's CPU. No watch gets
// more events in a run than w has objects to add, bind, fail and delete.
func setWatchBuffer(w benchWorkload) (restore func()) {
	old := watch.DefaultChanSize
	watch.DefaultChanSize = int32(4*(w.pods+w.stuck) + 2*w.nodes + w.pods/max(w.gangSize, 1) + 1024)
	return func() { watch.DefaultChanSize = old }
}

// gateFor turns kube-scheduler's GenericWorkload feature gate on for the
// rest of tb if w has gangs and who is kube-scheduler: its gang
// scheduling needs it; schedq's needs no gate (docs/gangs.md) and runs
// kube-scheduler's plugins with it off.
func gateFor(tb testing.TB, w benchWorkload, who string) {
	if w.gangSize > 0 && who == "kube-scheduler" {
		featuregatetesting.SetFeatureGateDuringTest(tb, utilfeature.DefaultFeatureGate, features.GenericWorkload, true)
	}
}

// runWorkload runs who (kube-scheduler, schedq or schedq-forecasting) on
// c, made for w, until every pod that fits is bound, and returns the
// run's window: its wall time and the process's CPU time in it.
func runWorkload(tb testing.TB, c *benchCluster, w benchWorkload, who string) (wall, cpu time.Duration) {
	cpu0 := procCPU(tb)
	start := time.Now()
	first := make(chan arrival, 1)
	if w.arrive {
		go c.arrive(tb, first)
	}
	switch who {
	case "schedq":
		runSchedqOn(tb, c, false)
	case "schedq-forecasting":
		runSchedqOn(tb, c, true)
	default:
		runKubeSchedulerOn(tb, c)
	}
	if w.arrive {
		a := <-first
		start, cpu0 = a.start, a.cpu
	}
	return c.span(start, cpu0)
}

// benchCluster is a fake clientset whose pods/binding subresource binds
// the pod, counting the bindings; done closes at the last one.
type benchCluster struct {
	client *fake.Clientset
	pods   int64
	bound  atomic.Int64
	done   chan struct{}
	// end and endCPU are the time and the process's CPU time at the last
	// binding, set before done closes.
	end    time.Time
	endCPU time.Duration
	// failedAll closes once every pod's status was written (Arrivals);
	// later are the nodes to create then.
	failed    sync.Map
	nFailed   atomic.Int64
	failedAll chan struct{}
	later     []*v1.Node
	// stuckBound counts bindings of pods that fit no node.
	stuckBound atomic.Int64
	// patience is how long wait waits for the last binding.
	patience time.Duration
}

// benchWorkload is one workload of BenchmarkWholeScheduler.
type benchWorkload struct {
	name string
	// pods fit, and are all bound by the end of a run; nodes are there
	// from the start unless arrive.
	nodes, pods int
	arrive      bool
	// stuck pods fit no node; with churn, each pod that fits is deleted
	// as soon as it is bound.
	stuck int
	churn bool
	// gangSize, if above 0, puts the pods in PodGroups of that many
	// members with gang minCount gangSize.
	gangSize int
}

func benchNode(i int) *v1.Node {
	name := fmt.Sprintf("node-%d", i)
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": fmt.Sprint("zone-", i%3)}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
		}}}
}

// benchPod is a pending pod of the default scheduler asking for cpu and
// 128Mi.
func benchPod(name, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{SchedulerName: v1.DefaultSchedulerName, Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("128Mi")}}}}}}
}

// benchObjects are w's nodes (unless they arrive later), PodGroups and
// pods; later are the nodes that arrive.
func benchObjects(w benchWorkload) (objs []runtime.Object, later []*v1.Node) {
	for i := range w.nodes {
		if w.arrive {
			later = append(later, benchNode(i))
		} else {
			objs = append(objs, benchNode(i))
		}
	}
	for i := range w.pods {
		p := benchPod(fmt.Sprintf("pod-%d", i), "100m")
		if w.gangSize > 0 {
			group := fmt.Sprintf("gang-%d", i/w.gangSize)
			if i%w.gangSize == 0 {
				pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: group}}
				pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(w.gangSize)}
				objs = append(objs, pg)
			}
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		}
		objs = append(objs, p)
	}
	for i := range w.stuck {
		objs = append(objs, benchPod(fmt.Sprintf("stuck-%d", i), "64"))
	}
	return objs, later
}

func newBenchCluster(w benchWorkload) *benchCluster {
	objs, later := benchObjects(w)
	c := &benchCluster{client: fake.NewSimpleClientset(objs...), pods: int64(w.pods), done: make(chan struct{}),
		failedAll: make(chan struct{}), later: later, patience: 10 * time.Minute}
	if w.gangSize > 0 { // discovery says PodGroups are served, as schedq asks
		c.client.Resources = []*metav1.APIResourceList{{GroupVersion: schedulingv1beta1.SchemeGroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}}}}
	}
	c.client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || (a.GetVerb() != "patch" && a.GetVerb() != "update") {
			return false, nil, nil
		}
		var name string
		switch a := a.(type) {
		case k8stesting.PatchAction:
			name = a.GetName()
		case k8stesting.UpdateAction:
			name = a.GetObject().(*v1.Pod).Name
		}
		if _, seen := c.failed.LoadOrStore(name, true); !seen && c.nFailed.Add(1) == c.pods {
			close(c.failedAll)
		}
		return false, nil, nil
	})
	c.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		return true, nil, c.bind(ca.GetObject().(*v1.Binding), w.churn)
	})
	return c
}

// bind makes a binding in the fake's tracker, then, with churn, ends the
// pod (deletes it). The last binding records the end of the run's window
// and closes done.
func (c *benchCluster) bind(bd *v1.Binding, churn bool) error {
	pods := v1.SchemeGroupVersion.WithResource("pods")
	obj, err := c.client.Tracker().Get(pods, bd.Namespace, bd.Name)
	if err != nil {
		return err
	}
	p := obj.(*v1.Pod).DeepCopy()
	if p.Spec.NodeName != "" {
		return fmt.Errorf("pod %s/%s is already bound", p.Namespace, p.Name)
	}
	p.Spec.NodeName = bd.Target.Name
	if err := c.client.Tracker().Update(pods, p, p.Namespace); err != nil {
		return err
	}
	if strings.HasPrefix(p.Name, "stuck-") {
		c.stuckBound.Add(1)
		return nil
	}
	if churn {
		if err := c.client.Tracker().Delete(pods, p.Namespace, p.Name); err != nil {
			return err
		}
	}
	if c.bound.Add(1) == c.pods {
		c.end = time.Now()
		c.endCPU, _ = cpuTime() // getrusage on this process does not fail
		close(c.done)
	}
	return nil
}

// arrival is when the first node was created, and the CPU time then.
type arrival struct {
	start time.Time
	cpu   time.Duration
}

// arrive creates the nodes once every pod was found unschedulable, and
// sends when it began.
func (c *benchCluster) arrive(b testing.TB, first chan<- arrival) {
	<-c.failedAll
	first <- arrival{time.Now(), procCPU(b)}
	for _, n := range c.later {
		if _, err := c.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			b.Error(err)
			return
		}
	}
}

// span is a run's window, from start (when the process had used cpu0 of
// CPU time) to the last binding: its wall time and the CPU time used in
// it. The scheduler's shutdown after the last binding is not in it. Call
// it once done has closed.
func (c *benchCluster) span(start time.Time, cpu0 time.Duration) (wall, cpu time.Duration) {
	return c.end.Sub(start), c.endCPU - cpu0
}

// wait waits for the last binding, failing b after c.patience.
func (c *benchCluster) wait(b testing.TB) {
	select {
	case <-c.done:
	case <-time.After(c.patience):
		b.Fatalf("%d of %d pods bound after %v", c.bound.Load(), c.pods, c.patience)
	}
}

// runSchedqOn runs schedq's scheduler on c until every pod is bound; with
// forecasting, a client asks it for forecasts back to back meanwhile.
func runSchedqOn(b testing.TB, c *benchCluster, forecasting bool) {
	o := Options{SchedulerName: v1.DefaultSchedulerName}
	if err := o.loadProfile(); err != nil {
		b.Fatal(err)
	}
	if forecasting {
		o.Address = freeAddress(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: c.client, events: c.client, lease: c.client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	asked := make(chan int)
	if forecasting {
		url := fmt.Sprintf("http://%s/debug/forecast/default/pod-%d", o.Address, c.pods-1)
		go askForecasts(ctx, url, asked)
	}
	c.wait(b)
	cancel()
	if forecasting {
		n := <-asked
		if bb, ok := b.(*testing.B); ok {
			bb.ReportMetric(float64(n), "forecast-answers")
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// freeAddress is a loopback address with a port free a moment ago.
func freeAddress(b testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// askForecasts GETs url once a second, as a user's dashboard would, until
// ctx ends, then sends how many answers were forecasts (HTTP 200; before
// the server listens, while the first forecast is under way, and once the
// pod is bound, the answers are errors).
func askForecasts(ctx context.Context, url string, asked chan<- int) {
	n := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			asked <- n
			return
		case <-tick.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			n++
		}
	}
}

func runKubeSchedulerOn(b testing.TB, c *benchCluster) {
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
	ran := make(chan struct{})
	go func() {
		sched.Run(ctx)
		close(ran)
	}()
	c.wait(b)
	cancel()
	<-ran // its loop ends before the next run starts: no CPU taken from it
	broadcaster.Shutdown()
	factory.Shutdown()
}

// procCPU is the process's user and system CPU time.
func procCPU(b testing.TB) time.Duration {
	d, err := cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// cpuTime is the process's user and system CPU time.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
