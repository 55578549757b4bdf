package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedq/schedq/hack/e2e/cluster"
	"github.com/schedq/schedq/kube/app"
)

// 9b. Leader election across an etcd restart, with the shipped timings
// (lease 15s, renew deadline 10s, retry 2s) and the binding fence in
// force: etcd is stopped and started again at once. The scheduler keeps
// its lease, or takes it back, renews it, and binds pods created after
// the restart. The figure says which, and how long each step took.
func TestEtcdRestartLeaderElection(t *testing.T) {
	own := cluster.ForTest(t, cluster.Options{Audit: true})
	c, err := kubernetes.NewForConfig(own.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const name, lease = "schedq-etcd-restart", "schedq-etcd-restart"
	own.BindingFence(t, "kube-system", lease)
	addr := freeAddr(t)
	s := runInProcess(t, withLease(app.Options{Kubeconfig: own.Kubeconfig(), SchedulerName: name, Address: addr}, lease, "etcd"))
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	ns := namespace(t, c)
	makeNodes(t, c, "etcd-restart", 5, nodeSpec{cpu: "16", memory: "64Gi"})
	before := makePods(t, c, ns, "before", 50, podSpec{scheduler: name, cpu: "100m", memory: "64Mi"})
	waitBound(t, c, ns, before, time.Minute)
	_, transitionsBefore := leaseState(t, c, lease)

	stopped := time.Now()
	own.StopEtcd()
	if err := own.StartEtcd(context.Background()); err != nil {
		t.Fatal(err)
	}
	etcdBack := time.Now()
	if err := own.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiReady := time.Now()
	waitFor(t, time.Minute, "the lease renewed by the scheduler after the restart", func(context.Context) (bool, error) {
		renewed, _ := leaseState(t, c, lease)
		return holder(t, c, lease) == "etcd" && renewed.After(etcdBack), nil
	})
	renewedAt := time.Now()
	_, transitionsAfter := leaseState(t, c, lease)
	after := makePods(t, c, ns, "after", 50, podSpec{scheduler: name, cpu: "100m", memory: "64Mi"})
	created := time.Now()
	waitBound(t, c, ns, after, time.Minute)
	boundIn := time.Since(created)
	if ok, err := s.exited(); ok {
		t.Fatalf("the scheduler stopped: %v", err)
	}
	checkFits(t, c, ns)
	if d := doubleBinds(audit(t, own), ns); len(d) > 0 {
		t.Errorf("pods bound more than once: %v", d)
	}
	kept := map[bool]string{true: "kept its lease", false: "took its lease back"}[transitionsAfter == transitionsBefore]
	figure(t, "etcd stopped and started again in %v, kube-apiserver ready %v later; the scheduler %s (leaseTransitions %d -> %d), renewal seen %v after etcd was back; 50 pods created after the restart bound in %v",
		etcdBack.Sub(stopped).Round(time.Millisecond), apiReady.Sub(etcdBack).Round(time.Millisecond), kept,
		transitionsBefore, transitionsAfter, renewedAt.Sub(etcdBack).Round(time.Millisecond), boundIn.Round(time.Millisecond))
}

// leaseState returns the lease's renew time and transitions.
func leaseState(t testing.TB, c kubernetes.Interface, lease string) (time.Time, int32) {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, -1
	}
	var renewed time.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	var tr int32
	if l.Spec.LeaseTransitions != nil {
		tr = *l.Spec.LeaseTransitions
	}
	return renewed, tr
}
