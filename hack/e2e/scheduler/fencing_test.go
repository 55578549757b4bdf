package scheduler

import (
	"context"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/scheduler"
)

// 8. Zombie leader: the leader is stopped (SIGSTOP) for longer than its
// lease, the standby takes over, and the old leader is continued
// (SIGCONT). The binding fence deploy/schedq.yaml ships is in force. The
// audit log, where each replica binds as a user of its own, must show no
// binding from the old leader that succeeded after the new one acquired
// the lease (the client-side fence stops nearly all of them from being
// sent; the figure counts those sent, which the API server refused). The
// old leader does not exit: it goes back to
// standby, and when the new leader dies it campaigns, wins and binds.
func TestZombieLeader(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	name := "schedq-zombie"
	lease := name
	makeNodes(t, c, name, 20, nodeSpec{cpu: "8", memory: "16Gi"})
	cl.BindingFence(t, "kube-system", lease)
	// A slow leader (20 bindings/s) still has bindings waiting for the
	// rate limiter when it is stopped: they are what a zombie would send.
	a := startReplica(t, "a", name, lease, "--kube-api-qps=20", "--kube-api-burst=20")
	waitFor(t, time.Minute, "replica a to lead", func(context.Context) (bool, error) { return holder(t, c, lease) == "a", nil })
	b := startReplica(t, "b", name, lease)
	waitFor(t, time.Minute, "replica b to be ready (standby)", func(context.Context) (bool, error) {
		return readyzBody(b.addr) == "ok: standby", nil
	})
	first := makePods(t, c, ns, "first", 400, podSpec{scheduler: name, cpu: "200m", memory: "64Mi"})
	waitFor(t, time.Minute, "the leader to bind 40 pods", func(context.Context) (bool, error) {
		return boundCount(bound(t, c, ns)) >= 40, nil
	})
	stopped := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "replica b to take the lease", func(context.Context) (bool, error) { return holder(t, c, lease) == "b", nil })
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued := time.Now()
	waitFor(t, 30*time.Second, "replica a back in standby", func(context.Context) (bool, error) {
		return readyzBody(a.addr) == "ok: standby", nil
	})
	waitBound(t, c, ns, first, 2*time.Minute)
	checkFits(t, c, ns)

	events := audit(t, cl)
	took, ok := acquired(events, lease, "replica-b", stopped)
	if !ok {
		t.Fatal("the audit log has no lease acquisition by replica-b")
	}
	var byA, byB, zombie, zombieOK int
	for _, e := range bindings(events, ns) {
		switch e.User.Username {
		case "replica-a":
			byA++
			if !e.RequestReceived.Before(took) {
				zombie++
				if e.ok() {
					zombieOK++
				}
			}
		case "replica-b":
			byB++
		}
	}
	if zombieOK != 0 {
		t.Errorf("%d of the old leader's %d binding requests after replica b acquired the lease succeeded, with the binding fence in force", zombieOK, zombie)
	}
	if d := doubleBinds(events, ns); len(d) > 0 {
		t.Errorf("pods bound more than once: %v", d)
	}
	figure(t, "leader stopped for %v, until its 4s lease (counted from its last renewal) had expired and replica b acquired it, %v after the stop; "+
		"binding requests: %d by a, %d by b, %d by a after b acquired (%d of them succeeded; binding fence in force)",
		continued.Sub(stopped).Round(time.Millisecond), took.Sub(stopped).Round(time.Millisecond), byA, byB, zombie, zombieOK)

	// Lease lost, process alive: a campaigns again and takes over when b dies.
	select {
	case <-a.exited:
		t.Fatalf("replica a exited after losing the lease: %v", a.err)
	default:
	}
	killed := time.Now()
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	second := makePods(t, c, ns, "second", 50, podSpec{scheduler: name, cpu: "200m", memory: "64Mi"})
	waitFor(t, time.Minute, "replica a to lead again", func(context.Context) (bool, error) { return holder(t, c, lease) == "a", nil })
	waitBound(t, c, ns, second, time.Minute)
	checkFits(t, c, ns)
	figure(t, "after b was killed, a (back from standby) bound 50 new pods %v later", time.Since(killed).Round(time.Millisecond))
}

// The binding fence checks schedq's stamped bindings only. While its
// Lease does not exist (before schedq's first election, or after the
// Lease is deleted), a binding without the stamp, another scheduler's,
// is admitted, and a stamped one refused. Both are dry runs of a pod that
// does not exist: admission comes first, so an admitted one then fails
// with "not found".
func TestFenceWithoutLeaseAdmitsOtherSchedulers(t *testing.T) {
	c := client(t)
	lease := "schedq-no-such-lease"
	cl.BindingFence(t, "kube-system", lease)
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	plain := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "no-such-pod"},
		Target: v1.ObjectReference{Kind: "Node", Name: "none"}}
	if err := c.CoreV1().Pods("default").Bind(ctx, plain, dry); !apierrors.IsNotFound(err) {
		t.Errorf("an unstamped binding while schedq's Lease does not exist: %v; want it admitted (then not found)", err)
	}
	stamped := plain.DeepCopy()
	stamped.Labels = map[string]string{scheduler.FencedLabel: "true"}
	stamped.Annotations = map[string]string{scheduler.StampLeaseAnnotation: "kube-system/" + lease,
		scheduler.StampHolderAnnotation: "a", scheduler.StampTransitionsAnnotation: "0"}
	if err := c.CoreV1().Pods("default").Bind(ctx, stamped, dry); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("a stamped binding while its Lease does not exist: %v; want it refused", err)
	}
}
