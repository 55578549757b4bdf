package gang

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// schedqBinary builds the schedq command once per test binary.
func schedqBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "schedq")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/schedq/schedq/kube/cmd/schedq").CombinedOutput()
	if err != nil {
		t.Fatalf("go build schedq: %v\n%s", err, out)
	}
	return bin
}

// startReplica starts a schedq process with leader election; it is
// killed when the test ends. extra flags override earlier ones.
func startReplica(t *testing.T, bin, id, name, lease string, extra ...string) *exec.Cmd {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), id+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"scheduler", "--kubeconfig", cl.Kubeconfig(), "--scheduler-name", name,
		"--leader-elect", "--leader-elect-resource-name", lease, "--leader-elect-identity", id,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms",
		"--kube-api-qps=500", "--kube-api-burst=1000", "--secure-port=0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- %s's log ---\n%s", id, b)
		}
	})
	return cmd
}

func holder(c kubernetes.Interface, lease string) string {
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// gangCounts returns, per gang (pod name prefix "gN"), how many members
// are bound.
func gangCounts(t testing.TB, c kubernetes.Interface, ns string, gangs, size int) []int {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, gangs)
	for _, p := range pods.Items {
		var g, i int
		if _, err := fmt.Sscanf(p.Name, "g%d-%d", &g, &i); err == nil && g < gangs && p.Spec.NodeName != "" {
			counts[g]++
		}
	}
	return counts
}

// Failover during a gang's binding: the leader is killed while it binds
// gangs; the new leader binds the rest. No member is lost and, once it
// settles, no gang is below minCount.
func TestFailoverDuringGangBinding(t *testing.T) {
	c := setup(t)
	ns := namespace(t, c)
	bin := schedqBinary(t)
	const gangs, size = 20, 8
	name, lease := "schedq-gang-failover", "schedq-gang-failover"
	makeNodes(t, c, "gang-failover", 50, "4")
	// Replica a binds slowly (20 requests/s), so that it dies mid-gang.
	a := startReplica(t, bin, "a", name, lease, "--kube-api-qps=20", "--kube-api-burst=20")
	waitFor(t, time.Minute, "replica a to lead", func(context.Context) (bool, error) { return holder(c, lease) == "a", nil })
	startReplica(t, bin, "b", name, lease)
	var all []string
	for g := range gangs {
		group := fmt.Sprintf("g%d", g)
		makePodGroup(t, c, ns, group, size)
		all = append(all, makeMembers(t, c, ns, name, group, group, size, "1")...)
	}
	waitFor(t, 2*time.Minute, "replica a to bind some members", func(context.Context) (bool, error) {
		return boundCount(t, c, ns, all) >= 3*size/2, nil
	})
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	partly := 0
	for _, n := range gangCounts(t, c, ns, gangs, size) {
		if n > 0 && n < size {
			partly++
		}
	}
	boundAtKill := boundCount(t, c, ns, all)
	waitBound(t, c, ns, all, 2*time.Minute)
	for g, n := range gangCounts(t, c, ns, gangs, size) {
		if n != size {
			t.Errorf("gang g%d: %d of %d bound after the failover settled", g, n, size)
		}
	}
	if h := holder(c, lease); h != "b" {
		t.Errorf("lease held by %q, want b", h)
	}
	figure(t, "leader killed with %d of %d members bound (%d gangs partly bound at that instant); replica b bound the rest, all %d gangs whole %v after the kill",
		boundAtKill, len(all), partly, gangs, time.Since(killed).Round(time.Millisecond))
}
