package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq/kube/sim"
)

// countdownCtx is a context whose Err is nil for its first n calls and
// context.Canceled from then on, Done closed with it: a client that
// goes away at a given step of a what-if's run, without a sleep.
type countdownCtx struct {
	context.Context
	left  atomic.Int64 // calls before it is cancelled
	after atomic.Int64 // calls since
	once  sync.Once
	done  chan struct{}
}

func newCountdownCtx(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background(), done: make(chan struct{})}
	c.left.Store(n)
	return c
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) >= 0 {
		return nil
	}
	c.once.Do(func() { close(c.done) })
	c.after.Add(1)
	return context.Canceled
}

func (c *countdownCtx) Done() <-chan struct{} {
	if c.left.Load() < 0 {
		c.once.Do(func() { close(c.done) })
	}
	return c.done
}

// TestWhatIfFollowsTheRequestsContext: a what-if whose client went away,
// before its run or during it, stops at once (its run asks the context
// again at most a couple of times), answers 503, and frees the slot: the
// next what-if runs and answers exactly what it answers when no what-if
// was cancelled before it; the live queue and cache are unchanged.
func TestWhatIfFollowsTheRequestsContext(t *testing.T) {
	l := newLiveCluster(t, 2)
	l.running(l.pod("r", "4", "20m"), "n0", 0)
	l.running(l.pod("s", "2", "1h"), "n1", 0)
	l.pending(l.pod("p", "4", "1h"))
	fc := l.forecaster()
	h := handler(prometheus.NewRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil, fc)
	body := strings.Replace(whatIfPod, "%s", "4", 1)
	whatIf := func(ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/debug/whatif?format=text", strings.NewReader(body)).WithContext(ctx)
		req.Header.Set("Content-Type", "application/yaml")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	// An uncancelled what-if: its answer, and how many steps its runs take.
	full := newCountdownCtx(1 << 40)
	want := whatIf(full)
	steps := (1 << 40) - full.left.Load()
	if want.Code != http.StatusOK || !strings.Contains(want.Body.String(), "default/w") {
		t.Fatalf("HTTP %d: %s", want.Code, want.Body)
	}
	if steps < 10 {
		t.Fatalf("the what-if's runs took %d steps: too few to cancel one midway", steps)
	}
	for _, tc := range []struct {
		name  string
		steps int64 // steps before the client goes away
	}{
		{name: "gone before the run", steps: 0},
		{name: "gone at the run's first step", steps: 1},
		{name: "gone midway", steps: steps / 2},
		{name: "gone near the end", steps: steps - 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := newCountdownCtx(tc.steps)
			got := whatIf(ctx)
			if got.Code != http.StatusServiceUnavailable || !strings.Contains(got.Body.String(), "context canceled") {
				t.Errorf("HTTP %d %q, want 503 saying the request was cancelled", got.Code, got.Body)
			}
			if n := ctx.after.Load(); n > 2 {
				t.Errorf("the run went on after the client went away: the context was asked %d times since", n)
			}
			again := whatIf(context.Background())
			if again.Code != want.Code || again.Body.String() != want.Body.String() {
				t.Errorf("the next what-if: HTTP %d\n%s\nwant HTTP %d\n%s", again.Code, again.Body, want.Code, want.Body)
			}
			if n := l.queue.Counts(); n.Active+n.Backoff+n.Unschedulable != 1 || l.cache.NodeCount() != 2 {
				t.Errorf("the what-if changed the queue (%+v) or the cache", n)
			}
		})
	}
}

// TestForecastWaitFollowsTheRequestsContext: a request waiting for a
// forecast under way stops waiting when its client goes away, before the
// wait's timer (which the fake clock never fires); the forecast runs on
// and is published for the requests after it.
func TestForecastWaitFollowsTheRequestsContext(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cancelBefore bool
	}{
		{name: "gone while waiting", cancelBefore: false},
		{name: "gone before asking", cancelBefore: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := testingclock.NewFakeClock(liveNow)
				block := make(chan struct{})
				f := &forecaster{clock: clk, timers: clk, wait: forecastWait, ttl: DefaultForecastTTL,
					state: func() (*sim.ForecastState, CopyStats) {
						<-block
						return &sim.ForecastState{Now: clk.Now()}, CopyStats{}
					}}
				ctx, cancel := context.WithCancel(t.Context())
				if tc.cancelBefore {
					cancel()
				}
				res := make(chan error, 1)
				go func() { _, err := f.get(ctx); res <- err }()
				synctest.Wait() // the request waits, or has returned
				cancel()
				if err := <-res; !errors.Is(err, context.Canceled) {
					t.Errorf("get: %v, want context.Canceled", err)
				}
				close(block)
				synctest.Wait() // the run ends
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.running != nil || !errors.Is(f.err, sim.ErrNoNodes) {
					t.Errorf("the forecast did not run on to its end: running %v, err %v", f.running != nil, f.err)
				}
			})
		})
	}
}
