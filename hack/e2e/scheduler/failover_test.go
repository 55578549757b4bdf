package scheduler

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedq/schedq/hack/e2e/cluster"
	"github.com/schedq/schedq/kube/app"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// schedqBinary builds the schedq command once for the package.
func schedqBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		// Inside the cluster's directory, which the cluster's Stop
		// removes: a directory of its own was left behind (141 MB a run).
		dir := filepath.Join(cl.Dir(), "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "schedq")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/schedq/schedq/kube/cmd/schedq").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build schedq: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// replica is a schedq process with leader election.
type replica struct {
	id, addr string
	log      string // the path of its log
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the process has exited
	err      error         // its exit status, once exited is closed
}

// replicaUsers are the users replicas bind as: replica id "a" (or "a2",
// a later process in the same slot) is user "replica-a".
var replicaUsers = []string{"replica-a", "replica-b", "replica-c"}

// startReplica starts a schedq process with leader election, as the user
// of its slot (the first letter of id). Later arguments override earlier
// ones (e.g. "--kube-api-qps=20").
func startReplica(t *testing.T, id, name, lease string, extra ...string) *replica {
	t.Helper()
	r := &replica{id: id, addr: freeAddr(t), exited: make(chan struct{})}
	log, err := os.Create(filepath.Join(t.TempDir(), id+".log"))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cl.KubeconfigFor("replica-" + id[:1])
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"scheduler", "--kubeconfig", kubeconfig, "--scheduler-name", name,
		"--leader-elect", "--leader-elect-resource-name", lease, "--leader-elect-identity", id,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms",
		"--kube-api-qps=500", "--kube-api-burst=1000", "--address", r.addr, "--secure-port=0"}, extra...)
	r.log = log.Name()
	r.cmd = exec.Command(schedqBinary(t), args...)
	r.cmd.Stdout, r.cmd.Stderr = log, log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		log.Close()
		close(r.exited)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.exited
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("--- %s's log ---\n%s", id, tail(b, 40))
		}
	})
	return r
}

func tail(b []byte, lines int) string {
	n := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n++; n > lines {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// holder returns who holds the lease.
func holder(t testing.TB, c kubernetes.Interface, lease string) string {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// 6. Failover: two replicas with leader election; the leader is killed
// mid-run, with SIGKILL and with SIGTERM; the other takes over, rebuilds
// its queue from the API server, and every pod is bound, once.
func TestFailover(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			c := client(t)
			ns := namespace(t, c)
			name := "schedq-failover-" + map[syscall.Signal]string{syscall.SIGKILL: "kill", syscall.SIGTERM: "term"}[sig]
			lease := name
			makeNodes(t, c, name, 20, nodeSpec{cpu: "8", memory: "16Gi"})
			a := startReplica(t, "a", name, lease)
			waitFor(t, time.Minute, "replica a to lead", func(context.Context) (bool, error) { return holder(t, c, lease) == "a", nil })
			b := startReplica(t, "b", name, lease)
			waitFor(t, time.Minute, "replica b to be ready (standby)", func(context.Context) (bool, error) {
				resp, err := http.Get("http://" + b.addr + "/readyz")
				if err != nil {
					return false, nil
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode == 200 && string(body) == "ok: standby\n", nil
			})

			first := makePods(t, c, ns, "first", 150, podSpec{scheduler: name, cpu: "200m", memory: "64Mi"})
			waitFor(t, time.Minute, "the leader to bind some pods", func(context.Context) (bool, error) {
				n := 0
				for _, node := range bound(t, c, ns) {
					if node != "" {
						n++
					}
				}
				return n >= 30, nil
			})
			// Only the leader schedules: the standby keeps its queue warm
			// and tries nothing.
			if n := metricAt(t, b.addr, "scheduler_schedule_attempts_total"); n != 0 {
				t.Fatalf("the standby made %v scheduling attempts", n)
			}
			// Counted when each binding's answer arrives: wait for it.
			waitFor(t, 10*time.Second, "the leader's attempts for 30 bound pods to be counted", func(context.Context) (bool, error) {
				return metricAt(t, a.addr, "scheduler_schedule_attempts_total") >= 30, nil
			})
			killed := time.Now()
			if err := a.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if sig == syscall.SIGTERM {
				select {
				case <-a.exited:
					if a.err != nil {
						t.Errorf("replica a did not exit cleanly on SIGTERM: %v", a.err)
					}
				case <-time.After(30 * time.Second):
					t.Error("replica a did not exit within 30s of SIGTERM")
				}
			}
			second := makePods(t, c, ns, "second", 150, podSpec{scheduler: name, cpu: "200m", memory: "64Mi"})
			waitFor(t, time.Minute, "replica b to take the lease", func(context.Context) (bool, error) { return holder(t, c, lease) == "b", nil })
			takeover := time.Since(killed)
			waitBound(t, c, ns, append(first, second...), 2*time.Minute)
			checkFits(t, c, ns)
			// Name the signal (syscall.Signal's String is "killed" or "terminated").
			figure(t, "leader stopped with %s: replica b took the lease after %v; all 300 pods bound in %v",
				map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig],
				takeover.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
		})
	}
}

// 7. API server restart mid-run: the scheduler reconnects, nothing is
// lost, and nothing is bound twice. It has a cluster of its own, since it
// restarts the API server.
func TestAPIServerRestart(t *testing.T) {
	own := cluster.ForTest(t, cluster.Options{})
	cfg := own.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := runInProcess(t, app.Options{Kubeconfig: own.Kubeconfig(), SchedulerName: "schedq-restart", Address: freeAddr(t)})
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	ns := namespace(t, c)
	makeNodes(t, c, "restart", 10, nodeSpec{cpu: "8", memory: "16Gi"})
	before := makePods(t, c, ns, "before", 150, podSpec{scheduler: "schedq-restart", cpu: "200m", memory: "64Mi"})
	restartStart := time.Now()
	if err := own.RestartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	restart := time.Since(restartStart)
	after := makePods(t, c, ns, "after", 150, podSpec{scheduler: "schedq-restart", cpu: "200m", memory: "64Mi"})
	waitBound(t, c, ns, append(before, after...), 2*time.Minute)
	checkFits(t, c, ns)
	if ok, err := s.exited(); ok {
		t.Fatalf("the scheduler stopped: %v", err)
	}
	figure(t, "API server restarted in %v mid-run; all 300 pods bound %v after the restart began",
		restart.Round(time.Millisecond), time.Since(restartStart).Round(time.Millisecond))
}
