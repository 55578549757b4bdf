// Package gang holds the end-to-end tests of gang scheduling: schedq
// against a real kube-apiserver v1.37 or later with PodGroups on
// (GenericWorkload and scheduling.k8s.io/v1beta1).
package gang

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedq/schedq/hack/e2e/cluster"
	"github.com/schedq/schedq/kube/app"
)

// gangFlags turn PodGroups on in kube-apiserver v1.37.
var gangFlags = []string{"--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"}

var cl *cluster.Cluster

func TestMain(m *testing.M) {
	if reason := apiserverTooOld(); reason != "" {
		cluster.SkipPackage(reason)
		os.Exit(0)
	}
	cluster.MainWith(m, cluster.Options{APIServerFlags: gangFlags}, func(c *cluster.Cluster) { cl = c })
}

// apiserverTooOld says why the kube-apiserver binary cannot serve
// PodGroups v1beta1 (older than v1.37), or "" if it can or is missing (a
// missing binary is cluster.MainWith's to report).
func apiserverTooOld() string {
	bin, err := cluster.FindBinary("", "kube-apiserver")
	if err != nil {
		return ""
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return fmt.Sprintf("%s --version: %v", bin, err)
	}
	m := regexp.MustCompile(`v1\.(\d+)\.`).FindSubmatch(out)
	if m == nil {
		return ""
	}
	if minor, _ := strconv.Atoi(string(m[1])); minor < 37 {
		return fmt.Sprintf("gang tests need kube-apiserver v1.37 or later for PodGroups v1beta1, %s is %s (set %s to a v1.37 build)",
			bin, strings.TrimSpace(string(out)), cluster.EnvBin)
	}
	return ""
}

func setup(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// figure records a measured figure (cluster.Figure).
var figure = cluster.Figure

// logBuffer is a concurrency-safe log sink the test can search.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startScheduler runs schedq in this process until the test ends, and
// returns its log.
func startScheduler(t *testing.T, name string) *logBuffer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, app.Options{
			Kubeconfig: cl.Kubeconfig(), SchedulerName: name, Address: addr,
			QPS: 500, Burst: 1000, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		if t.Failed() {
			t.Logf("--- scheduler log ---\n%s", logs.String())
		}
	})
	waitFor(t, 60*time.Second, "scheduler "+name+" ready", func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return logs
}

// waitFor polls until cond holds (cluster.WaitFor).
var waitFor = cluster.WaitFor

// namespace creates the test's namespace (cluster.Namespace).
var namespace = cluster.Namespace

// makeNodes creates count nodes prefix-i with cpu each, deleted at the end.
func makeNodes(t *testing.T, c kubernetes.Interface, prefix string, count int, cpu string) {
	t.Helper()
	ctx := context.Background()
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")}
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: v1.NodeStatus{Capacity: rl, Allocatable: rl, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
}

// makePodGroup creates a PodGroup with the gang policy.
func makePodGroup(t *testing.T, c kubernetes.Interface, ns, name string, minCount int32) {
	t.Helper()
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	if _, err := c.SchedulingV1beta1().PodGroups(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// makeMembers creates count pods prefix-i of the PodGroup group, each
// asking for cpu, for the scheduler sched.
func makeMembers(t *testing.T, c kubernetes.Interface, ns, sched, group, prefix string, count int, cpu string) []string {
	t.Helper()
	var names []string
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.PodSpec{
				SchedulerName:   sched,
				SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: &group},
				Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")},
				}}},
			},
		}
		created, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.SchedulingGroup == nil {
			t.Fatalf("the API server dropped spec.schedulingGroup of %s: is GenericWorkload on?", name)
		}
		names = append(names, name)
	}
	return names
}

// boundCount returns how many of the pods of ns named in names are bound.
func boundCount(t testing.TB, c kubernetes.Interface, ns string, names []string) int {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	n := 0
	for _, p := range pods.Items {
		if want[p.Name] && p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitBound waits until all names are bound and returns how long it
// took. It follows a watch of the pods (cluster.WaitPods), so the time
// is that of the binding's event, not of the next poll.
func waitBound(t *testing.T, c kubernetes.Interface, ns string, names []string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	cluster.WaitPods(t, c, ns, timeout, fmt.Sprintf("%d pods of %s bound", len(names), ns), func(pods map[string]*v1.Pod) bool {
		for _, n := range names {
			if p := pods[n]; p == nil || p.Spec.NodeName == "" {
				return false
			}
		}
		return true
	}, nil)
	return time.Since(start)
}

// conditionMessage returns the PodScheduled=False message of a pod.
func conditionMessage(t testing.TB, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse {
			return cond.Message
		}
	}
	return ""
}

// eventWith reports whether ns has an event of reason about object name.
func eventWith(t testing.TB, c kubernetes.Interface, ns, name, reason string) bool {
	t.Helper()
	evs, err := c.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}
