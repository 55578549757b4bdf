package scheduler

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedq/schedq/hack/e2e/cluster"
	"github.com/schedq/schedq/kube/app"
)

// cl is the cluster all tests of this package share; each test works in
// its own namespace, with its own nodes and its own scheduler name.
var cl *cluster.Cluster

func TestMain(m *testing.M) {
	// Replicas bind as users of their own, and the audit log of bindings
	// and lease writes says who did what, and when.
	cluster.MainWith(m, cluster.Options{Users: replicaUsers, Audit: true}, func(c *cluster.Cluster) { cl = c })
}

func client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// figure records a measured figure (cluster.Figure).
var figure = cluster.Figure

// freeAddr returns a free loopback address for a scheduler's HTTP server.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// sched is an in-process scheduler with an HTTP address.
type sched struct {
	*inProcess
	name, addr string
}

// startScheduler runs schedq in this process, without leader election,
// until the test ends, and waits until it is ready.
func startScheduler(t *testing.T, name string) *sched {
	t.Helper()
	s := &sched{name: name, addr: freeAddr(t)}
	s.inProcess = runInProcess(t, app.Options{SchedulerName: name, Address: s.addr})
	s.waitReady(t)
	return s
}

// waitReady waits up to a minute for s's /readyz to answer 200.
func (s *sched) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, 60*time.Second, "scheduler "+s.name+" ready", func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// get fetches a path of the scheduler's HTTP server.
func (s *sched) get(t testing.TB, path string) string {
	t.Helper()
	return get(t, s.addr, path)
}

// get fetches a path of the HTTP server at addr.
func get(t testing.TB, addr, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metric returns the sum of a metric's samples whose line contains all of
// the given label fragments.
func (s *sched) metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	return metricAt(t, s.addr, name, labels...)
}

// metricAt is sched.metric for the HTTP server at addr.
func metricAt(t testing.TB, addr, name string, labels ...string) float64 {
	t.Helper()
	var sum float64
	for _, line := range strings.Split(get(t, addr, "/metrics"), "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		var v float64
		fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v)
		sum += v
	}
	return sum
}

// waitFor polls until cond holds (cluster.WaitFor).
var waitFor = cluster.WaitFor

// namespace creates the test's namespace (cluster.Namespace).
var namespace = cluster.Namespace

// nodeSpec describes test nodes.
type nodeSpec struct {
	cpu, memory string
	pods        int
	labels      map[string]string
	taints      []v1.Taint
	noStatus    bool // a node with no allocatable at all
}

// makeNodes creates count nodes named prefix-i and deletes them when the
// test ends. There is no kubelet: the node carries its status from birth.
func makeNodes(t *testing.T, c kubernetes.Interface, prefix string, count int, spec nodeSpec) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		labels := map[string]string{"e2e-test": prefix}
		for k, v := range spec.labels {
			labels[k] = v
		}
		ns := spec
		ns.labels = labels
		n := newNode(name, ns)
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	t.Cleanup(func() {
		for _, n := range names {
			c.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	return names
}

// newNode is a node named name, with the kubernetes.io/hostname label,
// spec's labels, taints and (unless noStatus) allocatable.
func newNode(name string, spec nodeSpec) *v1.Node {
	labels := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range spec.labels {
		labels[k] = v
	}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: spec.taints}}
	if !spec.noStatus {
		pods := spec.pods
		if pods == 0 {
			pods = 110
		}
		rl := v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(spec.cpu), v1.ResourceMemory: resource.MustParse(spec.memory),
			v1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI),
		}
		n.Status = v1.NodeStatus{Capacity: rl, Allocatable: rl, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}
	}
	return n
}

// podSpec describes test pods.
type podSpec struct {
	scheduler     string
	cpu, memory   string
	labels        map[string]string
	nodeSelector  map[string]string
	tolerations   []v1.Toleration
	gates         []string
	priorityClass string
	affinity      *v1.Affinity
	// grace is the pod's termination grace period; nil: the default.
	grace *int64
}

func newPod(ns, name string, s podSpec) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: s.labels},
		Spec: v1.PodSpec{
			SchedulerName:                 s.scheduler,
			NodeSelector:                  s.nodeSelector,
			Tolerations:                   s.tolerations,
			PriorityClassName:             s.priorityClass,
			Affinity:                      s.affinity,
			TerminationGracePeriodSeconds: s.grace,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(s.cpu), v1.ResourceMemory: resource.MustParse(s.memory)},
			}}},
		},
	}
	for _, g := range s.gates {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: g})
	}
	return p
}

func makePods(t *testing.T, c kubernetes.Interface, ns, prefix string, count int, s podSpec) []string {
	t.Helper()
	var names []string
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), newPod(ns, name, s), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

// bound returns the pods of ns with their node ("" if unbound).
func bound(t testing.TB, c kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// waitBound waits until every named pod of ns is bound, and returns how
// long that took. It follows a watch of the pods (cluster.WaitPods), so
// the time is that of the binding's event, not of the next poll.
func waitBound(t *testing.T, c kubernetes.Interface, ns string, names []string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var unbound []string
	cluster.WaitPods(t, c, ns, timeout, fmt.Sprintf("%d pods of %s to be bound", len(names), ns), func(pods map[string]*v1.Pod) bool {
		unbound = unbound[:0]
		for _, n := range names {
			if p := pods[n]; p == nil || p.Spec.NodeName == "" {
				unbound = append(unbound, n)
			}
		}
		return len(unbound) == 0
	}, func(map[string]*v1.Pod) string {
		return fmt.Sprintf("%d not bound after %v, among them%s", len(unbound), timeout, describeUnbound(t, c, ns, unbound[:min(5, len(unbound))]))
	})
	return time.Since(start)
}

// describeUnbound says, for each pod of names, what its PodScheduled
// condition says, or that it has none.
func describeUnbound(t *testing.T, c kubernetes.Interface, ns string, names []string) string {
	var b strings.Builder
	for _, n := range names {
		msg := podScheduledFalse(t, c, ns, n)
		if msg == "" {
			msg = "no PodScheduled=False condition"
		}
		fmt.Fprintf(&b, "\n  %s: %s", n, msg)
	}
	return b.String()
}

func priorityClass(t *testing.T, c kubernetes.Interface, name string, value int32) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := c.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// podScheduledFalse returns the PodScheduled=False message of a pod, if any.
func podScheduledFalse(t testing.TB, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == "Unschedulable" {
			return cond.Message
		}
	}
	return ""
}

// checkFits verifies that on every node the pods bound there fit its
// allocatable cpu and pod count: nothing was bound twice or over-committed.
func checkFits(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := map[string]int64{}
	count := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			cpu[p.Spec.NodeName] += ctr.Resources.Requests.Cpu().MilliValue()
		}
		count[p.Spec.NodeName]++
	}
	for node, used := range cpu {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod bound to node %s: %v", node, err)
		}
		if alloc := n.Status.Allocatable.Cpu().MilliValue(); used > alloc {
			t.Errorf("node %s: %dm cpu requested by its pods, %dm allocatable", node, used, alloc)
		}
		if alloc := n.Status.Allocatable.Pods().Value(); count[node] > alloc {
			t.Errorf("node %s: %d pods, room for %d", node, count[node], alloc)
		}
	}
}
