package cluster_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schedq/schedq/hack/e2e/cluster"
)

var shared *cluster.Cluster

func TestMain(m *testing.M) {
	cluster.Main(m, func(c *cluster.Cluster) { shared = c })
}

func TestSmoke(t *testing.T) {
	c := shared
	ctx := t.Context()
	t.Logf("cluster start (etcd + kube-apiserver ready): %v", c.StartupDuration().Round(time.Millisecond))
	logRSS(t, "after start")

	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	// There is no kubelet: the test plays its part and reports the status.
	node.Status = corev1.NodeStatus{
		Capacity:    res,
		Allocatable: res,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "Fake", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node status: %v", err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			SchedulerName: "schedq",
			Containers: []corev1.Container{{
				Name:  "c",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("256Mi"),
				}},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	check := func(when string) {
		t.Helper()
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list nodes: %v", when, err)
		}
		var n *corev1.Node
		for i := range nodes.Items {
			if nodes.Items[i].Name == "node-1" {
				n = &nodes.Items[i]
			}
		}
		if n == nil {
			t.Fatalf("%s: node-1 not in the list of %d nodes", when, len(nodes.Items))
		}
		if len(n.Spec.Taints) != 0 {
			t.Errorf("%s: node has taints %v, want none", when, n.Spec.Taints)
		}
		alloc := n.Status.Allocatable
		if cpu := alloc.Cpu(); cpu.Cmp(resource.MustParse("4")) != 0 {
			t.Errorf("%s: allocatable cpu %v, want 4", when, cpu)
		}
		if mem := alloc.Memory(); mem.Cmp(resource.MustParse("8Gi")) != 0 {
			t.Errorf("%s: allocatable memory %v, want 8Gi", when, mem)
		}
		if pods := alloc.Pods(); pods.Value() != 110 {
			t.Errorf("%s: allocatable pods %v, want 110", when, pods)
		}
		pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list pods: %v", when, err)
		}
		if len(pods.Items) != 1 || pods.Items[0].Name != "pod-1" || pods.Items[0].Spec.NodeName != "" {
			t.Fatalf("%s: pods %+v, want the one unbound pod-1", when, pods.Items)
		}
	}
	check("before restart")

	start := time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatalf("restart API server: %v", err)
	}
	t.Logf("kube-apiserver restart (SIGTERM, start, ready): %v", time.Since(start).Round(time.Millisecond))
	logRSS(t, "after restart")
	check("after restart")

	// The same kind of client, made from the kubeconfig file a scheduler
	// process would use.
	kc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	if kc.Host != c.Host() {
		t.Errorf("kubeconfig host %q, want %q", kc.Host, c.Host())
	}

	// With no kubelet, a pod deleted with grace period 0 goes at once.
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns.Name).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx2 context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns.Name).Get(ctx2, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("pod still there after delete with grace period 0: %v", err)
	}

	if bin, err := c.SchedulerBinary(); err != nil {
		t.Logf("kube-scheduler not available: %v", err)
	} else {
		t.Logf("kube-scheduler at %s", bin)
	}
}

func TestFindBinaryMissing(t *testing.T) {
	_, err := cluster.FindBinary(t.TempDir(), "kube-apiserver")
	if !errors.Is(err, cluster.ErrMissingBinary) {
		t.Fatalf("err = %v, want ErrMissingBinary", err)
	}
	for _, want := range []string{"kube-apiserver", cluster.BuildCommand, cluster.EnvBin} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// logRSS logs the resident memory of the servers (Linux only).
func logRSS(t *testing.T, when string) {
	t.Helper()
	t.Logf("RSS %s: kube-apiserver %s, etcd %s", when, rss(shared.APIServerPID()), rss(shared.EtcdPID()))
}

func rss(pid int) string {
	if pid == 0 {
		return "n/a"
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "n/a"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "n/a"
}

// TestOutage checks ForTest and the two halves of a restart on a private
// cluster: while kube-apiserver is down requests fail, afterwards the data
// is still there.
func TestOutage(t *testing.T) {
	c := cluster.ForTest(t, cluster.Options{})
	ctx := t.Context()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	t0 := time.Now()
	c.StopAPIServer()
	t.Logf("kube-apiserver stop: %v", time.Since(t0).Round(time.Millisecond))
	if c.APIServerPID() != 0 {
		t.Errorf("APIServerPID = %d after StopAPIServer, want 0", c.APIServerPID())
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{}); err == nil {
		t.Fatal("get node succeeded while kube-apiserver was stopped")
	}
	t0 = time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatalf("start API server: %v", err)
	}
	t.Logf("kube-apiserver start: %v", time.Since(t0).Round(time.Millisecond))
	if _, err := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("get node after StartAPIServer: %v", err)
	}
	if err := c.StartAPIServer(ctx); err == nil {
		t.Error("StartAPIServer on a running server succeeded, want an error")
	}
}

// TestKubeSchedulerBindsPod runs the built kube-scheduler against the
// cluster through Kubeconfig and waits for it to bind a pod: the cluster is
// usable by a real scheduler process.
func TestKubeSchedulerBindsPod(t *testing.T) {
	c := shared
	ctx := t.Context()
	bin, err := c.SchedulerBinary()
	if err != nil {
		cluster.Missing(t, err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler-test"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("10"),
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "ks-node", Labels: map[string]string{"kubernetes.io/hostname": "ks-node"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	node.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "Fake", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node status: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ks-pod", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			// Only this test's node, whatever other tests left behind.
			NodeSelector: map[string]string{"kubernetes.io/hostname": "ks-node"},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	logPath := c.Dir() + "/kube-scheduler-test.log"
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	// --secure-port=0: no metrics/health server, so no port to collide on.
	cmd := exec.Command(bin, "--kubeconfig="+c.Kubeconfig(), "--leader-elect=false", "--secure-port=0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Spec.NodeName == "ks-node", nil
	})
	if err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("kube-scheduler did not bind the pod: %v\n--- kube-scheduler log ---\n%s", err, b)
	}
	t.Logf("kube-scheduler started and bound the pod in %v", time.Since(start).Round(time.Millisecond))
}
