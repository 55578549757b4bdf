package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq/kube/sim"
)

// TestLiveStateCopiedWhileScheduling runs the whole scheduler (run, on a
// fake clientset: its informers, queue, cache, wake budget, cycle,
// preemption) through a fill, a preemption of four high-priority pods and
// a churn of informer events (pods deleted, nodes added and relabelled,
// pods of another namespace), while a goroutine copies the live state
// for a forecast again and again and another asks the forecaster for
// forecasts, under -race. Each copy must be consistent: no pod twice, none
// both pending and running, none on a node the copy lacks, none pending
// with a node, and every pod of ours that the pod informer held both
// before and after the copy is in it, running or pending; the forecast of
// every few copies runs without error. Scheduling keeps going: in the end
// every pod is bound. The API server serves PodGroups: the copies start
// before the start-up has asked discovery and registered their informer
// (syncCaches), and the last one holds the PodGroup.
func TestLiveStateCopiedWhileScheduling(t *testing.T) {
	client := fakeCluster(roomyNode("n0"), roomyNode("n1"), roomyNode("n2"), roomyNode("n3"),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g"},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}}}})
	client.Resources = []*metav1.APIResourceList{{GroupVersion: podGroupVersion,
		APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}}}}
	type live struct {
		fc *forecaster
		ls *liveState
	}
	got := make(chan live, 1)
	o := Options{SchedulerName: "schedq", forecasting: func(fc *forecaster, ls *liveState) { got <- live{fc, ls} }}
	o.Config.InitialBackoff, o.Config.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	l := <-got
	l.fc.ttl = 0 // every request a new forecast

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	halt := func() { // before run ends: a forecast under way reads klog, which other tests set
		once.Do(func() {
			close(stop)
			wg.Wait()
			l.fc.mu.Lock()
			running := l.fc.running
			l.fc.mu.Unlock()
			if running != nil {
				<-running
			}
		})
	}
	defer halt()
	var copies, forecasts int
	copied := make(chan struct{})
	wg.Go(func() { copies, forecasts = copyUntil(t, l.fc, l.ls, stop, copied) })
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.fc.get(context.Background()); err != nil && !errors.Is(err, errUnderWay) && !errors.Is(err, sim.ErrNoNodes) {
				t.Errorf("forecaster: %v", err)
				return
			}
		}
	})
	churn(t, client, copied)
	halt()
	if st, _ := l.ls.copy(); len(st.PodGroups) != 1 {
		t.Errorf("the last copy holds %d PodGroups, want the one the API server has", len(st.PodGroups))
	}
	t.Logf("%d copies, %d of them forecast", copies, forecasts)
	if copies < 10 {
		t.Errorf("only %d copies while scheduling", copies)
	}
}

// churn drives the cluster through the API: 16 one-core pods fill four
// 4-core nodes; four 2-core pods of a higher priority preempt; then two
// low pods end, two nodes arrive, the nodes are relabelled, and four small
// pods of another namespace arrive. It returns once every pod is bound.
func churn(t *testing.T, client *fake.Clientset, copied <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	create := func(ns, name, cpu string, prio int32) {
		p := testPod(name, "schedq", cpu)
		p.Namespace, p.UID, p.Spec.Priority = ns, types.UID("uid-"+ns+"-"+name), &prio
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 {
		create("default", fmt.Sprintf("low%d", i), "1", 1)
	}
	waitBound(t, client, 16)
	for i := range 4 {
		create("default", fmt.Sprintf("high%d", i), "2", 100)
	}
	waitPods(t, client, "the high-priority pods bound, by preemption", func(pods []v1.Pod) bool {
		n := 0
		for _, p := range pods {
			if p.Spec.Priority != nil && *p.Spec.Priority == 100 && p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 4
	})
	ended := 0
	for _, p := range listPods(t, client) {
		if p.Spec.Priority != nil && *p.Spec.Priority == 1 && ended < 2 {
			if err := client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			ended++
		}
	}
	for _, name := range []string{"n4", "n5"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, roomyNode(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 { // one at a time, each while a copy is taken
		<-copied
		create("team", fmt.Sprintf("tiny%d", i), "25m", 0)
	}
	for i := range 4 {
		create("team", fmt.Sprintf("small%d", i), "100m", 0)
		n, err := client.CoreV1().Nodes().Get(ctx, fmt.Sprintf("n%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels["zone"] = "z" + fmt.Sprint(i%2)
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPods(t, client, "every pod bound", func(pods []v1.Pod) bool {
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
}

// copyUntil copies l's state until stop is closed, checks each copy, and
// runs the forecast of every fifth. It returns how many it copied and
// forecast.
func copyUntil(t *testing.T, fc *forecaster, l *liveState, stop <-chan struct{}, copied chan<- struct{}) (copies, forecasts int) {
	var midway int
	defer func() { t.Logf("%d copies with pending pods", midway) }()
	for {
		select {
		case <-stop:
			return copies, forecasts
		default:
		}
		before := oursIn(l.pods)
		st, _ := l.copy()
		after := oursIn(l.pods)
		copies++
		select {
		case copied <- struct{}{}:
		default:
		}
		if len(st.Pending) > 0 {
			midway++
		}
		if err := checkCopy(st, before, after); err != nil {
			t.Errorf("copy %d: %v", copies, err)
			return copies, forecasts
		}
		if copies%5 != 1 || len(st.Nodes) == 0 {
			continue
		}
		forecasts++
		b, err := sim.NewForecastBase(st)
		if err == nil {
			_, err = sim.RunForecast(fc.sc, st, sim.ForecastOptions{Horizon: time.Hour, Base: b})
		}
		if err != nil {
			t.Errorf("forecast of copy %d: %v", copies, err)
			return copies, forecasts
		}
	}
}

// oursIn lists the pods of schedq in s that are neither ending nor ended.
func oursIn(s cache.Store) map[types.UID]string {
	out := map[types.UID]string{}
	for _, obj := range s.List() {
		p := obj.(*v1.Pod)
		if p.Spec.SchedulerName == "schedq" && p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			out[p.UID] = p.Namespace + "/" + p.Name
		}
	}
	return out
}

// checkCopy says what is inconsistent in st, a copy taken between the
// pod informer's lists before and after.
func checkCopy(st *sim.ForecastState, before, after map[types.UID]string) error {
	nodes := map[string]bool{}
	for _, n := range st.Nodes {
		if nodes[n.Name] {
			return fmt.Errorf("node %s twice", n.Name)
		}
		nodes[n.Name] = true
	}
	in := map[types.UID]string{}
	for _, rp := range st.Running {
		p := rp.Pod
		switch {
		case in[p.UID] != "":
			return fmt.Errorf("pod %s/%s running twice", p.Namespace, p.Name)
		case !nodes[p.Spec.NodeName]:
			return fmt.Errorf("pod %s/%s runs on node %q, which the copy lacks", p.Namespace, p.Name, p.Spec.NodeName)
		}
		in[p.UID] = "running"
	}
	for _, p := range st.Pending {
		switch {
		case in[p.UID] != "":
			return fmt.Errorf("pod %s/%s pending and %s", p.Namespace, p.Name, in[p.UID])
		case p.Spec.NodeName != "":
			return fmt.Errorf("pod %s/%s pending with node %s", p.Namespace, p.Name, p.Spec.NodeName)
		}
		in[p.UID] = "pending"
	}
	for uid, key := range before {
		if after[uid] != "" && in[uid] == "" {
			return fmt.Errorf("pod %s, there before and after the copy, is neither running nor pending in it", key)
		}
	}
	return nil
}

// roomyNode has 4 cores and room for 110 pods.
func roomyNode(name string) *v1.Node {
	n := testNode(name, "4")
	n.Status.Allocatable[v1.ResourcePods] = resource.MustParse("110")
	return n
}

func listPods(t *testing.T, client *fake.Clientset) []v1.Pod {
	pods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func waitBound(t *testing.T, client *fake.Clientset, n int) {
	waitPods(t, client, fmt.Sprintf("%d pods bound", n), func(pods []v1.Pod) bool {
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound >= n
	})
}

// waitPods waits until cond holds of the cluster's pods: it checks them
// at the start and again after each change a watch of them shows, with
// no sleep; it gives up after a minute, naming what it waited for. A
// goroutine drains the watch as its events come, so that the fake's
// buffer never fills however long a check takes.
func waitPods(t *testing.T, client *fake.Clientset, what string, cond func([]v1.Pod) bool) {
	t.Helper()
	w, err := client.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed, drained := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(drained)
		for range w.ResultChan() {
			select {
			case changed <- struct{}{}:
			default: // a check is due already
			}
		}
	}()
	defer func() { w.Stop(); <-drained }()
	timeout := time.After(time.Minute)
	for !cond(listPods(t, client)) {
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no %s within a minute", what)
		}
	}
}
