package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
	fwprofile "github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// stuckBinder never finishes a binding until released: a cycle that
// binds through it hangs, as a deadlocked cycle would. It sends on
// entered (buffered) as a binding begins to wait.
type stuckBinder struct{ entered, release chan struct{} }

func (b stuckBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if !scheduler.Started(start, done) {
		return
	}
	b.entered <- struct{}{}
	<-b.release
	done(nil)
}

type nopReporter struct{}

func (nopReporter) Unschedulable(context.Context, *v1.Pod, string, string, func() scheduler.FailureRecord) {
}
func (nopReporter) Scheduled(context.Context, *v1.Pod, string)           {}
func (nopReporter) Warn(context.Context, runtime.Object, string, string) {}

// TestProbesFailWhileACycleHangs: a cycle of the real scheduling loop
// (terms.cycle) that hangs for longer than the stall timeout fails
// /healthz, /livez and /readyz, on a fake clock; they pass again once it
// returns.
func TestProbesFailWhileACycleHangs(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	watch := newLoopWatch(clk, time.Minute)
	st := &state{}
	st.synced.Store(true)
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	h := Handler(prometheus.NewRegistry(), q, st.ready, watch.live)
	get := func(path string) (int, string) {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		return rr.Code, rr.Body.String()
	}
	c := scheduler.NewCache()
	c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}}})
	b := stuckBinder{entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg, err := fwprofile.Default()
	if err != nil {
		t.Fatal(err)
	}
	fw, err := fwprofile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], fwprofile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	s, err := scheduler.New(q, c, b, nopReporter{}, scheduler.Options{Profiles: []*fwprofile.Framework{fw}})
	if err != nil {
		t.Fatal(err)
	}
	tm := &terms{watch: watch}
	if err := q.Add(testPod("p", "schedq", "1")); err != nil {
		t.Fatal(err)
	}
	info, err := q.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		tm.cycle(context.Background(), s, info)
		close(done)
	}()
	<-b.entered // the cycle is under way, stuck in its binding
	if watch.since.Load() == 0 {
		t.Fatal("the cycle is binding, but the watchdog saw it not begin")
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(p); code != 200 {
			t.Fatalf("GET %s at once: %d %q", p, code, body)
		}
	}
	clk.Step(time.Minute)
	if code, _ := get("/livez"); code != 200 {
		t.Fatalf("/livez after exactly the timeout: %d", code)
	}
	clk.Step(time.Second)
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(p); code != 503 || !strings.Contains(body, "scheduling loop stuck") {
			t.Errorf("GET %s with the cycle stuck: %d %q", p, code, body)
		}
	}
	close(b.release)
	<-done
	if code, body := get("/livez"); code != 200 {
		t.Fatalf("/livez once the cycle returned: %d %q", code, body)
	}
}
