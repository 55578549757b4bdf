package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// TestAskPodGroupsRetriesDiscovery: a discovery request that fails at
// start-up is asked again until it answers, rather than turning gang
// scheduling off for the process's life (it was, with a warning, and
// every pod naming a PodGroup then waited); a start-up that ends first
// returns its error.
func TestAskPodGroupsRetriesDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int  // discovery requests that fail before one answers
		serves   bool // whether the answer lists podgroups
		cancel   bool // the start-up ends while discovery still fails
		want     bool
		wantErr  bool
		wantAsks int
	}{
		{name: "answers at once", serves: true, want: true, wantAsks: 1},
		{name: "fails twice, then serves PodGroups", failures: 2, serves: true, want: true, wantAsks: 3},
		{name: "fails once, then does not serve them", failures: 1, serves: false, want: false, wantAsks: 2},
		{name: "start-up ends while it fails", failures: 1 << 30, cancel: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs := fake.NewClientset()
				if tc.serves {
					cs.Resources = []*metav1.APIResourceList{{GroupVersion: podGroupVersion, APIResources: []metav1.APIResource{{Name: "podgroups"}}}}
				}
				asks := 0
				cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
					asks++
					if asks <= tc.failures {
						return true, nil, errors.New("connection refused")
					}
					return false, nil, nil
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel {
					time.AfterFunc(10*discoveryRetry+discoveryRetry/2, cancel)
				}
				start := time.Now()
				got, err := askPodGroups(ctx, cs, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if (err != nil) != tc.wantErr || got != tc.want {
					t.Fatalf("askPodGroups = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
				}
				if tc.cancel {
					if asks != 11 {
						t.Errorf("asked %d times in 10.5 retry periods, want 11", asks)
					}
					return
				}
				if asks != tc.wantAsks {
					t.Errorf("asked %d times, want %d", asks, tc.wantAsks)
				}
				if waited, want := time.Since(start), time.Duration(tc.failures)*discoveryRetry; waited != want {
					t.Errorf("answered after %v, want %v (a retry every %v)", waited, want, discoveryRetry)
				}
			})
		})
	}
}

// TestRunServesWhileDiscoveryFails: the whole scheduler on a fake
// clientset whose discovery fails at start-up serves its endpoints all the
// same (/healthz ok, /readyz not yet), as it does while the informers
// sync, so that a liveness probe does not kill it during an API-server
// outage; once discovery answers, the caches sync and a gang of two is
// bound. A shutdown while discovery still fails returns at once. Before
// 2026-11-30 discovery was asked before the endpoints were served: none
// answered until it did.
func TestRunServesWhileDiscoveryFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown bool // SIGTERM while discovery fails, instead of letting it answer
	}{
		{name: "discovery answers later"},
		{name: "shutdown while discovery fails", shutdown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				group := "g"
				pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: group}}
				pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}
				m0, m1 := testPod("m0", "schedq", "1500m"), testPod("m1", "schedq", "1500m")
				for _, m := range []*v1.Pod{m0, m1} {
					m.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
				}
				client := fakeCluster(testNode("n1", "2"), testNode("n2", "2"), pg, m0, m1)
				client.Resources = []*metav1.APIResourceList{{GroupVersion: podGroupVersion,
					APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}}}}
				var failing atomic.Bool
				failing.Store(true)
				var asks atomic.Int32
				client.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
					asks.Add(1)
					if failing.Load() {
						return true, nil, errors.New("connection refused")
					}
					return false, nil, nil
				})
				served := make(chan http.Handler, 1)
				o := Options{SchedulerName: "schedq", serving: func(h http.Handler) { served <- h }}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
				}()
				stopped := false
				defer func() {
					if !stopped {
						cancel()
						<-done
					}
				}()
				var h http.Handler
				select {
				case h = <-served:
				case <-time.After(10 * discoveryRetry): // virtual
					t.Fatalf("no endpoints served after %v of failing discovery (%d requests)", 10*discoveryRetry, asks.Load())
				}
				time.Sleep(5 * discoveryRetry) // virtual: discovery fails a few times more
				synctest.Wait()
				if n := asks.Load(); n < 2 {
					t.Fatalf("discovery asked %d times in %v, want it asked again every %v", n, 5*discoveryRetry, discoveryRetry)
				}
				if code := askRun(h, http.MethodGet, "/healthz", ""); code != http.StatusOK {
					t.Errorf("/healthz while discovery fails: %d, want 200", code)
				}
				if code := askRun(h, http.MethodGet, "/readyz", ""); code != http.StatusServiceUnavailable {
					t.Errorf("/readyz while discovery fails: %d, want 503 (the caches wait for discovery)", code)
				}
				if tc.shutdown {
					start := time.Now()
					cancel()
					stopped = true
					if err := <-done; err != nil {
						t.Errorf("run: %v", err)
					}
					if waited := time.Since(start); waited != 0 {
						t.Errorf("run returned %v after the shutdown, want at once", waited)
					}
					return
				}
				failing.Store(false)
				time.Sleep(discoveryRetry + time.Second) // virtual: the next request, then the sync's polls
				synctest.Wait()
				if code := askRun(h, http.MethodGet, "/readyz", ""); code != http.StatusOK {
					t.Errorf("/readyz once discovery answers: %d, want 200", code)
				}
				if a, b := nodeOf(t, client, "m0"), nodeOf(t, client, "m1"); a == "" || b == "" || a == b {
					t.Errorf("the gang's members are on %q and %q, want both bound, on different nodes", a, b)
				}
			})
		})
	}
}

// TestAskPodGroupsCutsAHungRequest: a discovery request the API server
// never answers ends with the start-up (a SIGTERM while it hangs returns
// at once) or after discoveryTimeout, and is then asked again. Before
// 2026-11-30 the request took no context: the clients set no timeout, so
// it hung until the connection broke, the shutdown included.
func TestAskPodGroupsCutsAHungRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cancelAt time.Duration // the start-up ends then; 0: never
		want     bool
		wantErr  bool
		wantAsks int
		wantAt   time.Duration // when askPodGroups returns
	}{
		{name: "shutdown cuts it", cancelAt: 3 * time.Second, wantErr: true, wantAsks: 1, wantAt: 3 * time.Second},
		{name: "given up after the timeout, then asked again", want: true, wantAsks: 2, wantAt: discoveryTimeout + discoveryRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs := fake.NewClientset()
				cs.Resources = []*metav1.APIResourceList{{GroupVersion: podGroupVersion, APIResources: []metav1.APIResource{{Name: "podgroups"}}}}
				d := &hangingDiscovery{FakeDiscovery: cs.Discovery().(*fakediscovery.FakeDiscovery), hangs: 1}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				start := time.Now()
				got, err := askPodGroups(ctx, hangingClient{cs, d}, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if (err != nil) != tc.wantErr || got != tc.want {
					t.Fatalf("askPodGroups = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
				}
				if d.asks != tc.wantAsks {
					t.Errorf("asked %d times, want %d", d.asks, tc.wantAsks)
				}
				if at := time.Since(start); at != tc.wantAt {
					t.Errorf("returned after %v, want %v", at, tc.wantAt)
				}
			})
		})
	}
}

// hangingClient is a fake clientset whose discovery is d.
type hangingClient struct {
	*fake.Clientset
	d *hangingDiscovery
}

// Discovery implements kubernetes.Interface.
func (c hangingClient) Discovery() discovery.DiscoveryInterfaces { return c.d }

// hangingDiscovery is a fake discovery whose first hangs requests for a
// group version are never answered: they end with their context.
type hangingDiscovery struct {
	*fakediscovery.FakeDiscovery
	hangs, asks int
}

// ServerResourcesForGroupVersionWithContext implements
// discovery.DiscoveryInterfaceWithContext.
func (d *hangingDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	d.asks++
	if d.asks <= d.hangs {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}
