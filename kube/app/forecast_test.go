package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/kube/sim"
)

// liveCluster is a small live scheduler's state: the real cache and
// queue, and the informers' stores, on a fake clock.
type liveCluster struct {
	t      *testing.T
	clk    *testingclock.FakeClock
	cache  *scheduler.Cache
	queue  *podQueue
	pods   cache.Store
	nss    cache.Store
	groups cache.Store
	// objs holds the volumes and claims (liveState.objects).
	objs   cache.Store
	copies atomic.Int32
	// block, if set, holds each forecast's copy until it is closed.
	block chan struct{}
}

var liveNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newLiveCluster(t *testing.T, nodes int) *liveCluster {
	t.Helper()
	// The queue runs on the cluster's clock, as run's does on
	// Options.Clock: the state's copy reads its timestamps against it.
	clk := testingclock.NewFakeClock(liveNow)
	qcfg := scheduler.QueueConfig()
	qcfg.Clock = clk
	q, err := schedq.New(qcfg)
	if err != nil {
		t.Fatal(err)
	}
	l := &liveCluster{t: t, clk: clk, cache: scheduler.NewCache(), queue: q,
		pods: cache.NewStore(cache.MetaNamespaceKeyFunc), nss: cache.NewStore(cache.MetaNamespaceKeyFunc),
		groups: cache.NewStore(cache.MetaNamespaceKeyFunc), objs: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	l.nss.Add(ns)
	l.cache.SetNamespace(ns)
	for i := range nodes {
		name := "n" + string(rune('0'+i))
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"),
				v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}}}
		l.cache.AddNode(n)
	}
	return l
}

// pod makes a pod of cpu cores, with a runtime annotation if runtime is set.
func (l *liveCluster) pod(name, cpu, runtime string) *v1.Pod {
	p := testPod(name, "schedq", cpu)
	p.Namespace, p.UID = "default", types.UID("uid-"+name)
	if runtime != "" {
		p.Annotations = map[string]string{sim.RuntimeAnnotation: runtime}
	}
	return p
}

// running binds p to node, started ago.
func (l *liveCluster) running(p *v1.Pod, node string, ago time.Duration) {
	p.Spec.NodeName = node
	p.Status.StartTime = &metav1.Time{Time: liveNow.Add(-ago)}
	p.Status.Phase = v1.PodRunning
	if err := l.cache.AddPod(p); err != nil {
		l.t.Fatal(err)
	}
	l.pods.Add(p)
}

// pending queues p.
func (l *liveCluster) pending(p *v1.Pod) {
	l.pods.Add(p)
	if err := l.queue.Add(p); err != nil {
		l.t.Fatal(err)
	}
}

// recreate deletes the pending pod key from the queue and queues a pod
// of the same name, made by l.pod, under another UID: the pod deleted
// and created again.
func (l *liveCluster) recreate(key types.NamespacedName, name string) {
	if err := l.queue.Delete(key); err != nil {
		l.t.Fatal(err)
	}
	p := l.pod(name, "1", "")
	p.UID += "-again"
	l.pending(p)
}

func (l *liveCluster) forecaster() *forecaster { return l.forecasterWith(Options{}) }

// forecasterWith is forecaster with the scheduler's options o.
func (l *liveCluster) forecasterWith(o Options) *forecaster {
	ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
		objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: l.clk}
	f := newForecaster(o, ls, l.clk)
	state := f.state
	f.state = func() (*sim.ForecastState, CopyStats) {
		l.copies.Add(1)
		if l.block != nil {
			<-l.block
		}
		return state()
	}
	// A forecast still running when the test ends runs kube-scheduler's
	// plugins, which read klog's logger, which other tests set: wait for
	// it (every test that blocks a forecast releases it before it ends).
	l.t.Cleanup(func() {
		f.mu.Lock()
		done := f.running
		f.mu.Unlock()
		if done != nil {
			<-done
		}
	})
	return f
}

func (l *liveCluster) server() (*httptest.Server, *forecaster) {
	fc := l.forecaster()
	return l.serverOf(fc), fc
}

// serverOf serves the debug endpoints with the forecaster fc.
func (l *liveCluster) serverOf(fc *forecaster) *httptest.Server {
	srv := httptest.NewServer(handler(prometheus.NewRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil, fc))
	l.t.Cleanup(srv.Close)
	return srv
}

// about reports whether d is want, or at most a second more: the
// simulator's attempts and bindings take virtual milliseconds.
func about(d, want time.Duration) bool { return d >= want && d <= want+time.Second }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return send(t, http.MethodGet, url, "", "")
}

// send makes a request of method to url with body, of contentType if not
// empty, and returns the answer's status and body.
func send(t *testing.T, method, url, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	return readAnswer(t, resp, err)
}

// readAnswer returns resp's status and body, failing t on err.
func readAnswer(t *testing.T, resp *http.Response, err error) (int, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestLiveForecast(t *testing.T) {
	t.Run("pod fits after a running pod ends at its activeDeadlineSeconds", func(t *testing.T) {
		l := newLiveCluster(t, 1)
		r := l.pod("r", "4", "")
		deadline := int64(600)
		r.Spec.ActiveDeadlineSeconds = &deadline
		l.running(r, "n0", 4*time.Minute)
		l.pending(l.pod("p", "4", "1h"))
		srv, _ := l.server()
		code, body := get(t, srv.URL+"/debug/queue/default/p")
		var a struct{ PredictedStart *Prediction }
		if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a.PredictedStart == nil {
			t.Fatalf("HTTP %d %v: %s", code, err, body)
		}
		p := a.PredictedStart
		if !p.Starts || p.Node != "n0" || !about(p.Wait, 6*time.Minute) || !about(p.Start.Sub(liveNow), 6*time.Minute) {
			t.Errorf("got %+v, want a start on n0 in 6m, when r's activeDeadlineSeconds ends it", p.PodForecast)
		}
		if len(p.Basis) != 1 || p.Basis[0] != (sim.SourceCount{Source: sim.SourceDeadline, Count: 1}) {
			t.Errorf("basis %+v, want one end by %s", p.Basis, sim.SourceDeadline)
		}
		if !strings.HasPrefix(p.Arrivals, "none") {
			t.Errorf("arrivals %q, want none by default", p.Arrivals)
		}
		// schedq explain prints what Explain answers.
		text, err := Explain(context.Background(), http.DefaultClient, srv.URL, "default", "p", "text")
		if err != nil || !strings.Contains(string(text), "predicted start: 2026-03-01T12:06:00Z (in 6m0s) on n0; basis: 1 ends by "+sim.SourceDeadline) {
			t.Errorf("schedq explain: %v %s", err, text)
		}
	})
	t.Run("pod with a volume claim starts on its volume's node", func(t *testing.T) {
		l := newLiveCluster(t, 2)
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"},
			Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				ClaimRef:    &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data", UID: "uid-data"},
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "uid-data",
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
			Spec:   v1.PersistentVolumeClaimSpec{VolumeName: "pv", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
		l.objs.Add(pv)
		l.objs.Add(pvc)
		p := l.pod("p", "1", "1h")
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		l.pending(p)
		srv, _ := l.server()
		code, body := get(t, srv.URL+"/debug/forecast/default/p")
		var f sim.PodForecast
		if err := json.Unmarshal([]byte(body), &f); code != 200 || err != nil {
			t.Fatalf("HTTP %d %v: %s", code, err, body)
		}
		if !f.Starts || f.Node != "n1" || !about(f.Wait, 0) {
			t.Errorf("got %+v, want a start now on n1, where its volume is", f)
		}
		if pvc.ResourceVersion != "" || pv.ResourceVersion != "" {
			t.Errorf("the informers' objects were written: versions %q %q", pvc.ResourceVersion, pv.ResourceVersion)
		}
	})
	t.Run("pod with no estimate says until unknown", func(t *testing.T) {
		l := newLiveCluster(t, 1)
		l.running(l.pod("u", "4", ""), "n0", time.Hour)
		l.pending(l.pod("p", "4", ""))
		srv, _ := l.server()
		code, text := get(t, srv.URL+"/debug/forecast/default/p?format=text")
		if code != 200 || !strings.Contains(text, "not within the horizon of 24h0m0s") ||
			!strings.Contains(text, "1 running pods have no runtime estimate and are taken to run until unknown") {
			t.Errorf("HTTP %d: %s", code, text)
		}
	})
	t.Run("a gang gets one start", func(t *testing.T) {
		l := newLiveCluster(t, 2)
		l.running(l.pod("a", "4", "10m"), "n0", 0)
		l.running(l.pod("b", "4", "30m"), "n1", 0)
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g"}}
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}
		l.groups.Add(pg)
		name := "g"
		for _, n := range []string{"m0", "m1"} {
			p := l.pod(n, "4", "1h")
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
			l.pending(p)
		}
		srv, _ := l.server()
		for _, n := range []string{"m0", "m1"} {
			_, body := get(t, srv.URL+"/debug/forecast/default/"+n)
			var p Prediction
			if err := json.Unmarshal([]byte(body), &p); err != nil || !p.Starts || p.Gang != "default/g" || !about(p.Wait, 30*time.Minute) {
				t.Errorf("%s: %v %s, want the gang's one start in 30m", n, err, body)
			}
		}
	})
}

// TestForecastOfPodNotPending: a bound pod, an unknown one: 404 with why.
func TestForecastOfPodNotPending(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.running(l.pod("r", "1", "1h"), "n0", 0)
	l.pending(l.pod("p", "1", "1h"))
	srv, _ := l.server()
	for _, name := range []string{"r", "nope"} {
		code, body := get(t, srv.URL+"/debug/forecast/default/"+name)
		if code != http.StatusNotFound || !strings.Contains(body, "a forecast is only of pending pods") {
			t.Errorf("%s: HTTP %d %s, want 404 saying it is not pending", name, code, body)
		}
	}
}

// TestOneForecastServesEveryPod: listing every pending pod with its start
// and explaining each runs one forecast per TTL, not one per pod; after
// the TTL (on the fake clock) the next request runs a new one.
func TestOneForecastServesEveryPod(t *testing.T) {
	l := newLiveCluster(t, 2)
	l.running(l.pod("r", "4", "20m"), "n0", 0)
	for _, n := range []string{"p1", "p2", "p3"} {
		l.pending(l.pod(n, "2", "1h"))
	}
	srv, _ := l.server()
	// schedq pending prints what Pending answers.
	page, err := Pending(context.Background(), http.DefaultClient, srv.URL, "", 0, 0, "text")
	code, text := 200, string(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"default/p1: ", "| start: in 0s", "| start: in 20m0s", "forecast of 2026-03-01T12:00:00Z, horizon 24h0m0s; running pods' ends by 1 ends by annotation"} {
		if code != 200 || !strings.Contains(text, want) {
			t.Errorf("HTTP %d: no %q in:\n%s", code, want, text)
		}
	}
	for _, n := range []string{"p1", "p2", "p3"} {
		get(t, srv.URL+"/debug/queue/default/"+n)
	}
	if l.copies.Load() != 1 {
		t.Errorf("%d forecasts for one listing and three explanations within the TTL, want 1", l.copies.Load())
	}
	l.clk.Step(DefaultForecastTTL)
	get(t, srv.URL+"/debug/queue/default/p1")
	if l.copies.Load() != 2 {
		t.Errorf("%d forecasts after the TTL, want 2", l.copies.Load())
	}
}

// BenchmarkLiveStateCopy copies the state of 1,500 nodes running 6,000
// pods with 10,000 pending, and reports the longest hold of the queue's
// and of the cache's lock.
func BenchmarkLiveStateCopy(b *testing.B) {
	t := &testing.T{}
	l := newLiveCluster(t, 0)
	for i := range 1500 {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n-%d", i)},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"),
				v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")}}}
		l.cache.AddNode(n)
		for j := range 4 {
			l.running(l.pod(fmt.Sprintf("r-%d-%d", i, j), "2", "1h"), n.Name, 0)
		}
	}
	for i := range 10_000 {
		l.pending(l.pod(fmt.Sprintf("p-%d", i), "2", "1h"))
	}
	ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
		objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: clock.RealClock{}}
	var worstQ, worstC time.Duration
	for b.Loop() {
		st, cs := ls.copy()
		if len(st.Pending) != 10_000 || len(st.Running) != 6000 {
			b.Fatalf("%d pending, %d running", len(st.Pending), len(st.Running))
		}
		worstQ, worstC = max(worstQ, cs.MaxQueueHold), max(worstC, cs.MaxCacheHold)
	}
	b.ReportMetric(float64(worstQ.Microseconds()), "max-queue-hold-µs")
	b.ReportMetric(float64(worstC.Microseconds()), "max-cache-hold-µs")
}

// TestExplainParkedPosition: a parked pod's position does not read as a
// place in activeQ ("0 ahead of 1 in activeQ").
func TestExplainParkedPosition(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "8", ""))
	l.pending(l.pod("q", "1", ""))
	a, err := l.queue.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}, Message: "0/1 nodes are available: 1 Insufficient cpu."}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(prometheus.NewRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil))
	defer srv.Close()
	_, text := get(t, srv.URL+"/debug/queue/default/p?format=text")
	if strings.Contains(text, "ahead of 1 in activeQ") || !strings.Contains(text, "not in activeQ (unschedulable); it would have 1 of activeQ's 1 ahead of it if it entered now") {
		t.Errorf("parked pod's explanation:\n%s", text)
	}
}

// TestForecastWhileSchedulerChanges: forecasts, listings and what-ifs
// are served while the cache and the queue change under them (pods bound
// and removed, pods queued and deleted), concurrently, under -race. Every
// answer is a forecast or a clear error, never a failed run.
func TestForecastWhileSchedulerChanges(t *testing.T) {
	l := newLiveCluster(t, 3)
	for i := range 6 {
		l.running(l.pod(fmt.Sprintf("r%d", i), "1", "30m"), fmt.Sprintf("n%d", i%3), 0)
	}
	fc := l.forecaster()
	fc.ttl = 0 // every request copies the state again
	srv := httptest.NewServer(handler(prometheus.NewRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil, fc))
	defer srv.Close()
	done, going := make(chan struct{}), make(chan struct{})
	go func() { // the informers' side
		defer close(done)
		<-going // else, on a loaded machine, it could end before the first request
		for i := range 200 {
			p := l.pod(fmt.Sprintf("c%d", i), "1", "10m")
			l.pending(p)
			if i%2 == 0 {
				b := p.DeepCopy()
				b.Spec.NodeName = fmt.Sprintf("n%d", i%3)
				l.queue.Delete(types.NamespacedName{Namespace: "default", Name: p.Name})
				l.pods.Update(b)
				if err := l.cache.AddPod(b); err != nil {
					t.Error(err)
					return
				}
			}
			if i%5 == 0 {
				l.cache.RemovePod(types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("c%d", i-2)})
			}
		}
	}()
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		default:
		}
		if n == 0 {
			close(going)
		}
		code, body := get(t, srv.URL+"/debug/queue?order=pop&format=text")
		if code != 200 || strings.Contains(body, "no forecast") {
			t.Fatalf("listing: HTTP %d %s", code, body)
		}
		code, body = post(t, srv.URL+"/debug/whatif", strings.Replace(whatIfPod, "%s", "1", 1))
		if code != 200 && !strings.Contains(body, "exists already") {
			t.Fatalf("what-if: HTTP %d %s", code, body)
		}
	}
}

// TestLiveForecastLearnsRuntimes: pods of a Job that ran 20 minutes each,
// seen ending by the pod informer's handler, give a running pod of that
// Job without an estimate 15 more minutes (it ran 5): the pending pod
// starts then, on a basis of one end from history.
func TestLiveForecastLearnsRuntimes(t *testing.T) {
	l := newLiveCluster(t, 1)
	job := func(p *v1.Pod) *v1.Pod {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", Controller: &yes}}
		return p
	}
	srv, fc := l.server()
	h := fc.hist.handler()
	for i := range 3 {
		old := job(l.pod(fmt.Sprintf("done%d", i), "1", ""))
		old.Spec.NodeName, old.Status.Phase = "n0", v1.PodRunning
		old.Status.StartTime = &metav1.Time{Time: liveNow.Add(-2 * time.Hour)}
		ended := old.DeepCopy()
		ended.Status.Phase = v1.PodSucceeded
		ended.Status.ContainerStatuses = []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			FinishedAt: metav1.Time{Time: liveNow.Add(-100 * time.Minute)}}}}}
		h.OnUpdate(old, ended)
	}
	l.running(job(l.pod("r", "4", "")), "n0", 5*time.Minute)
	l.pending(l.pod("p", "4", "1h"))
	_, body := get(t, srv.URL+"/debug/forecast/default/p")
	var p Prediction
	if err := json.Unmarshal([]byte(body), &p); err != nil || !p.Starts || !about(p.Wait, 15*time.Minute) ||
		len(p.Basis) != 1 || p.Basis[0] != (sim.SourceCount{Source: sim.SourceHistory, Count: 1}) || p.Unknown != 0 {
		t.Errorf("%v %s, want a start in 15m on one end from history", err, body)
	}
}

// TestForecastWaitIsBounded: a forecast that takes longer than the wait
// does not hold requests: before the first one, the answer says it is
// under way (503, to a what-if too); once one exists, a request after the TTL gets it,
// older than the TTL, while the next one runs. It runs in a synctest
// bubble, the requests served in memory: synctest.Wait tells when a
// request is answered or waits on the forecaster's fake clock, and when
// the first forecast has ended, where the test polled the real clock.
func TestForecastWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLiveCluster(t, 1)
		l.pending(l.pod("p", "1", "1h"))
		block := make(chan struct{})
		l.block = block
		defer func() { // the forecast still held, if the test fails
			select {
			case <-block:
			default:
				close(block)
			}
		}()
		fc := l.forecaster()
		h := handler(prometheus.NewRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil, fc)
		serve := func(method, path, body string) func() (int, string) {
			return func() (int, string) {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				if body != "" {
					req.Header.Set("Content-Type", "application/yaml")
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Code, rec.Body.String()
			}
		}
		forecast := serve(http.MethodGet, "/debug/forecast/default/p", "")
		// ask makes the request and, if it waits on the clock, ends the
		// wait; the request must then be answered.
		ask := func(request func() (int, string)) (int, string) {
			t.Helper()
			type answer struct {
				code int
				body string
			}
			ch := make(chan answer, 1)
			go func() {
				code, body := request()
				ch <- answer{code, body}
			}()
			synctest.Wait() // answered, or waiting on the fake clock
			if l.clk.HasWaiters() {
				l.clk.Step(forecastWait) // the request's wait ends
				synctest.Wait()
			}
			select {
			case a := <-ch:
				return a.code, a.body
			default:
				t.Fatal("the request was not answered once its wait ended")
				return 0, ""
			}
		}
		code, body := ask(forecast)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "the first forecast is under way") {
			t.Fatalf("before the first forecast: HTTP %d %s", code, body)
		}
		code, body = ask(serve(http.MethodPost, "/debug/whatif", strings.Replace(whatIfPod, "%s", "1", 1)))
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "the first forecast is under way") {
			t.Errorf("a what-if before the first forecast: HTTP %d %s, want 503", code, body)
		}
		close(block) // the first forecast ends
		synctest.Wait()
		fc.mu.Lock()
		last := fc.last
		fc.mu.Unlock()
		if last == nil {
			t.Fatal("no forecast published once the first one ended")
		}
		first := last.F.At
		block = make(chan struct{}) // the next one hangs
		l.block = block
		l.clk.Step(DefaultForecastTTL)
		code, body = ask(forecast)
		var p Prediction
		if err := json.Unmarshal([]byte(body), &p); code != 200 || err != nil || !p.At.Equal(first) {
			t.Fatalf("while the second forecast runs: HTTP %d %v %s, want the first one", code, err, body)
		}
	})
}

// explainCountingView counts the queue's Explain calls, each of which
// computes a position in line under the queue's lock (O(queued pods)).
type explainCountingView struct {
	queueView
	explains atomic.Int32
}

func (v *explainCountingView) Explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error) {
	v.explains.Add(1)
	return v.queueView.Explain(key)
}

// TestForecastOfPodAsksNoPosition: /debug/forecast/{namespace}/{name}
// of a pending pod answers its predicted start without Explain, whose
// position in line (not part of the answer) holds the queue's lock for
// O(queued pods) at each request; a pod not queued is still explained,
// in O(1), to say why. It explained every pod it was asked about.
func TestForecastOfPodAsksNoPosition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     int
		explains int32
	}{
		{name: "p", code: http.StatusOK},
		{name: "nope", code: http.StatusNotFound, explains: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			l.pending(l.pod("p", "1", "1h"))
			v := &explainCountingView{queueView: l.queue}
			srv := httptest.NewServer(handler(prometheus.NewRegistry(), v, func() (bool, string) { return true, "ok" }, nil, l.forecaster()))
			t.Cleanup(srv.Close)
			if code, body := get(t, srv.URL+"/debug/forecast/default/"+tc.name); code != tc.code {
				t.Errorf("HTTP %d %q, want %d", code, body, tc.code)
			}
			if n := v.explains.Load(); n != tc.explains {
				t.Errorf("%d explanations, want %d", n, tc.explains)
			}
		})
	}
}
