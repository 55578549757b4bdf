package scheduler

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedq/schedq/kube/app"
)

// 8b. Zombie bindings already past the client-side fence: a leader's
// binding requests are held after the fence let them through (as in a
// process paused between the fence's check and the send), while every
// other request of it hangs, so that it cannot renew its lease; the
// standby takes over; then the held requests are sent. Without the
// binding fence (the admission policy deploy/schedq.yaml ships) they bind
// late; with it, the API server refuses every one of them.
func TestZombieHeldBindings(t *testing.T) {
	for _, policy := range []bool{false, true} {
		t.Run(map[bool]string{false: "without-policy", true: "with-policy"}[policy], func(t *testing.T) {
			c := client(t)
			ns := namespace(t, c)
			name := "schedq-held-" + map[bool]string{false: "off", true: "on"}[policy]
			lease := name
			makeNodes(t, c, name, 10, nodeSpec{cpu: "8", memory: "16Gi"})
			if policy {
				cl.BindingFence(t, "kube-system", lease)
			}
			fr := &freezer{}
			a := startInProcessReplica(t, "a", name, lease, fr.wrap)
			waitFor(t, time.Minute, "replica a to lead", func(context.Context) (bool, error) { return holder(t, c, lease) == "a", nil })
			// b binds slowly (10/s), so that the zombie's held bindings
			// reach the API server before b binds the same pods (it pops
			// them in the same order).
			b := startReplica(t, "b", name, lease, "--kube-api-qps=10", "--kube-api-burst=10", "--log-level=debug")
			waitFor(t, time.Minute, "replica b to be ready (standby)", func(context.Context) (bool, error) {
				return readyzBody(b.addr) == "ok: standby", nil
			})
			pods := makePods(t, c, ns, "p", 300, podSpec{scheduler: name, cpu: "200m", memory: "64Mi"})
			waitFor(t, time.Minute, "the leader to bind 40 pods", func(context.Context) (bool, error) {
				return boundCount(bound(t, c, ns)) >= 40, nil
			})
			frozen := time.Now()
			fr.freeze()
			waitFor(t, time.Minute, "replica b to take the lease", func(context.Context) (bool, error) { return holder(t, c, lease) == "b", nil })
			held := fr.thaw()
			waitFor(t, time.Minute, "the held bindings to be answered", func(context.Context) (bool, error) { return fr.answered() == held, nil })
			waitBound(t, c, ns, pods, 3*time.Minute)
			a.stop()

			events := audit(t, cl)
			took, ok := acquired(events, lease, "replica-b", frozen)
			if !ok {
				t.Fatal("the audit log has no lease acquisition by replica-b")
			}
			// Until a takes the lease back, if it does (b, slowed down
			// on a loaded machine, can lose it): from then on a binds as
			// the leader again.
			again, ok := acquired(events, lease, "replica-a", took)
			if !ok {
				again = time.Now()
			}
			var late, lateOK int
			for _, e := range bindings(events, ns) {
				if e.User.Username == "replica-a" && !e.RequestReceived.Before(took) && e.RequestReceived.Before(again) {
					late++
					if e.ok() {
						lateOK++
					}
				}
			}
			figure(t, "binding fence %s: %d binding requests held past the client-side fence during the freeze; after b acquired the lease %v after the freeze, %d of a's binding requests reached the API server, %d succeeded",
				map[bool]string{false: "off", true: "on"}[policy], held, took.Sub(frozen).Round(time.Millisecond), late, lateOK)
			if held == 0 {
				t.Fatal("no binding was held past the client-side fence: the test did not reproduce a zombie")
			}
			if late == 0 {
				t.Errorf("none of the %d held bindings reached the API server after b acquired the lease", held)
			}
			if policy {
				if lateOK != 0 {
					t.Errorf("%d late bindings of the old leader succeeded with the binding fence in force", lateOK)
				}
				checkFits(t, c, ns)
			}
			if d := doubleBinds(events, ns); len(d) > 0 {
				t.Errorf("pods bound more than once: %v", d)
			}
		})
	}
}

// startInProcessReplica runs a scheduler with leader election in the test
// process, as the user of its slot (the first letter of id), its requests
// sent through wrap.
func startInProcessReplica(t *testing.T, id, name, lease string, wrap func(http.RoundTripper) http.RoundTripper) *inProcess {
	t.Helper()
	kubeconfig, err := cl.KubeconfigFor("replica-" + id[:1])
	if err != nil {
		t.Fatal(err)
	}
	// 20 bindings/s, as a loaded leader: bindings queue in client-go's
	// rate limiter, and pass the fence one by one.
	o := withLease(app.Options{Kubeconfig: kubeconfig, SchedulerName: name, QPS: 20, Burst: 20, WrapTransport: wrap}, lease, id)
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 250*time.Millisecond
	return runInProcess(t, o)
}

// freezer holds a replica's requests beneath its fence while frozen:
// binding requests until thaw, then sent whatever their context says (a
// paused process's requests leave when it is continued); every other
// request until thaw or its context ends (the lease renewals time out).
type freezer struct {
	mu      sync.Mutex
	frozen  chan struct{} // nil: not frozen
	held    int
	answers int
	thawed  bool
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = make(chan struct{})
}

// thaw sends the held requests and returns how many bindings were held.
func (f *freezer) thaw() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.frozen)
	f.frozen = nil
	return f.held
}

// answered is how many held bindings have had their answer.
func (f *freezer) answered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answers
}

func (f *freezer) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		binding := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding")
		f.mu.Lock()
		ch := f.frozen
		if ch != nil && binding {
			f.held++
		}
		f.mu.Unlock()
		if ch == nil {
			return next.RoundTrip(req)
		}
		if !binding {
			select {
			case <-ch:
				return next.RoundTrip(req)
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		<-ch
		resp, err := next.RoundTrip(req.WithContext(context.WithoutCancel(req.Context())))
		f.mu.Lock()
		f.answers++
		f.mu.Unlock()
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
