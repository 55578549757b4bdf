package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/sim"
)

// TestRunLeavesNoGoroutine: after SIGTERM (ctx ends) every goroutine run
// started has ended by the time it returns or soon after, with or
// without leader election, with a forecast and a what-if asked and the
// history file written: synctest.Test fails if one is left blocked in
// its bubble (a forecast still under way ends, as the docs say, rather
// than waiting for the queue).
func TestRunLeavesNoGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		elect bool
	}{
		{name: "one replica"},
		{name: "leader election", elect: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				client := fakeCluster(roomyNode("n0"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
					testPod("big", "schedq", "100")) // pending: no node has room
				o := upstreamOptions(t)
				o.Clock = clock.RealClock{} // the bubble's fake time
				o.History.File = filepath.Join(dir, "history.jsonl")
				h, cancel, done := startRun(t, client, o, tc.elect)
				ask := func(method, path, body string) int { return askRun(h, method, path, body) }
				for ask(http.MethodGet, "/debug/queue/default/big", "") != http.StatusOK { // synced and leading
					time.Sleep(100 * time.Millisecond) // fake time
				}
				if code := ask(http.MethodGet, "/debug/forecast/default/big", ""); code != http.StatusOK {
					t.Errorf("forecast: HTTP %d", code)
				}
				if code := ask(http.MethodPost, "/debug/whatif", strings.Replace(whatIfPod, "%s", "1", 1)); code != http.StatusOK {
					t.Errorf("what-if: HTTP %d", code)
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
			})
		})
	}
}

// TestRunEndsTheForecastUnderWay: a forecast under way when ctx ends (here
// waiting for a scheduler that is always busy) has ended by the time run
// returns, without copying the live state: run cancels it and waits for
// it. It went on on its own goroutine after run returned, and copied the
// queue and the cache that run had closed.
func TestRunEndsTheForecastUnderWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		elect bool
	}{
		{name: "one replica"},
		{name: "leader election", elect: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fakeCluster(roomyNode("n0"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
					testPod("big", "schedq", "100"))
				o := upstreamOptions(t)
				o.Clock = clock.RealClock{} // the bubble's fake time
				var fc *forecaster
				gate := make(chan struct{}) // holds a copy made after the stop
				defer close(gate)
				var copies atomic.Int32
				o.forecasting = func(f *forecaster, _ *liveState) {
					fc = f
					f.busy = func() bool { return true } // the forecast waits in its pace
					state := f.state
					f.state = func() (*sim.ForecastState, CopyStats) {
						copies.Add(1)
						<-gate
						return state()
					}
				}
				h, cancel, done := startRun(t, client, o, tc.elect)
				ask := func(path string) int { return askRun(h, http.MethodGet, path, "") }
				for ask("/debug/queue/default/big") != http.StatusOK { // synced and leading
					time.Sleep(100 * time.Millisecond) // fake time
				}
				// The forecast starts, and waits: the request is told it is under way.
				if code := ask("/debug/forecast/default/big"); code != http.StatusServiceUnavailable {
					t.Errorf("forecast: HTTP %d, want 503 while it waits", code)
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
				fc.mu.Lock()
				running := fc.running != nil
				fc.mu.Unlock()
				if running {
					t.Error("a forecast still runs after run returned")
				}
				if n := copies.Load(); n != 0 {
					t.Errorf("the forecast copied the live state %d times after the stop, want none", n)
				}
			})
		})
	}
}

// startRun starts run on client with o (with leader election if elect),
// as the process would, and returns its HTTP handler once it serves, the
// cancel that stands for SIGTERM, and run's result. For tests in a
// synctest bubble: o.Clock should be the bubble's time.
func startRun(t *testing.T, client *fake.Clientset, o Options, elect bool) (http.Handler, context.CancelFunc, <-chan error) {
	t.Helper()
	served := make(chan http.Handler, 1)
	o.serving = func(h http.Handler) { served <- h }
	var f *fence
	if elect {
		o.LeaderElect, o.LeaseNamespace, o.LeaseName = true, "kube-system", "schedq"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
		var err error
		if f, err = newLeaderFence(o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: client, events: client, lease: client}, f, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	return <-served, cancel, done
}

// askRun sends a request to h and returns its status code.
func askRun(h http.Handler, method, path, body string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code
}
