package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

func testNode(name string, cpu string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("10"),
		}},
	}
}

func testPod(name, scheduler, cpu string) *v1.Pod {
	return &v1.Pod{
		// A UID, as the API server gives: kube-scheduler's cache refuses
		// a pod without one.
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{SchedulerName: scheduler, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

// fakeCluster is a fake clientset whose pods/binding subresource sets the
// pod's node, as the API server does.
func fakeCluster(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		obj, err := c.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		if p.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s/%s is already bound to %s", p.Namespace, p.Name, p.Spec.NodeName)
		}
		p.Spec.NodeName = b.Target.Name
		return true, nil, c.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	return c
}

// TestRunSchedulesPodsOfOurs runs the whole scheduler on a fake clientset
// in a synctest bubble: it binds the pods whose schedulerName is ours,
// where they fit, leaves the others alone, and marks the one that fits
// nowhere with PodScheduled=False.
func TestRunSchedulesPodsOfOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(
			testNode("n1", "2"), testNode("n2", "2"),
			testPod("a", "schedq", "1500m"), testPod("b", "schedq", "1500m"),
			testPod("theirs", "default-scheduler", "100m"), testPod("huge", "schedq", "64"),
		)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, Options{SchedulerName: "schedq"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		// Virtual time: the start-up waits poll every 100ms, so let a
		// second pass in the bubble, then wait for everything to settle.
		time.Sleep(time.Second)
		synctest.Wait()

		nodes := map[string]string{}
		pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			nodes[p.Name] = p.Spec.NodeName
		}
		if nodes["a"] == "" || nodes["b"] == "" || nodes["a"] == nodes["b"] {
			t.Fatalf("a and b must be bound to different nodes (1.5 of 2 cpus each): %v", nodes)
		}
		if nodes["theirs"] != "" || nodes["huge"] != "" {
			t.Fatalf("bound a pod that is not ours or fits nowhere: %v", nodes)
		}
		huge, err := client.CoreV1().Pods("default").Get(context.Background(), "huge", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var cond *v1.PodCondition
		for i := range huge.Status.Conditions {
			if huge.Status.Conditions[i].Type == v1.PodScheduled {
				cond = &huge.Status.Conditions[i]
			}
		}
		if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != "Unschedulable" ||
			!strings.HasPrefix(cond.Message, "0/2 nodes are available: 2 Insufficient cpu") {
			t.Fatalf("PodScheduled condition of the pod that fits nowhere: %+v", cond)
		}
		// And an event says so, as kube-scheduler's does.
		evs, err := client.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var failed []string
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Type == v1.EventTypeWarning {
				failed = append(failed, e.Regarding.Name+": "+e.Note)
			}
		}
		if len(failed) != 1 || !strings.HasPrefix(failed[0], "huge: 0/2 nodes are available: 2 Insufficient cpu") {
			t.Errorf("FailedScheduling events %q, want one for huge with the condition's message", failed)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	if _, err := Config("/no/such/kubeconfig"); err == nil || !strings.Contains(err.Error(), "/no/such/kubeconfig") {
		t.Fatalf("missing kubeconfig: %v", err)
	}
}

func TestUnreachableAPIServer(t *testing.T) {
	kc := t.TempDir() + "/kubeconfig"
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), Options{Kubeconfig: kc, SchedulerName: "schedq", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "API server https://127.0.0.1:1 is not reachable") {
		t.Fatalf("err %v", err)
	}
}

func TestDebugEndpoints(t *testing.T) {
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	q.Add(testPod("waiting", "schedq", "1"))
	ready := false
	h := Handler(prometheus.NewRegistry(), q, func() (bool, string) { return ready, "not yet" }, nil)
	get := func(path string) (int, string) {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		return rr.Code, rr.Body.String()
	}
	tests := []struct {
		path string
		code int
		has  string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 503, "not yet"},
		{"/debug/queue", 200, `"location": "active"`},
		{"/debug/queue?format=text", 200, "active"},
		{"/debug/queue/default/waiting", 200, `"key": "default/waiting"`},
		{"/debug/queue/default/waiting?format=text", 200, "ready: waiting in activeQ"},
		{"/debug/queue/default/nobody", 404, "default/nobody is not in schedq's queue"},
		{"/metrics", 200, ""},
	}
	for _, tc := range tests {
		code, body := get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s: %d %q; want %d containing %q", tc.path, code, body, tc.code, tc.has)
		}
	}
	ready = true
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz when ready: %d", code)
	}
}

// TestExplainPodInDoubt: the explanation of a pod that the cache holds as
// a binding in doubt says so and where, not that the pod is unknown,
// bound or not ours; so does that of a group member the cache holds apart
// from the queue while its group's bindings end; other pods missing from
// the queue get the plain answer.
func TestExplainPodInDoubt(t *testing.T) {
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	doubt := func(key types.NamespacedName) (string, bool) { return "n1", key.Name == "doubtful" }
	held := func(key types.NamespacedName) (string, bool) { return "its binding failed", key.Name == "member" }
	h := Handler(prometheus.NewRegistry(), inDoubtView{q, doubt, held}, func() (bool, string) { return true, "" }, nil)
	for _, tc := range []struct {
		name, path, has string
	}{
		{name: "in doubt", path: "/debug/queue/default/doubtful", has: "held on node n1 as a binding in doubt"},
		{name: "a member held apart", path: "/debug/queue/default/member", has: "is not in schedq's queue: its binding failed"},
		{name: "unknown", path: "/debug/queue/default/nobody", has: "it is unknown, bound, or not ours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rr.Code != http.StatusNotFound || !strings.Contains(rr.Body.String(), tc.has) {
				t.Errorf("%d %q; want 404 containing %q", rr.Code, rr.Body.String(), tc.has)
			}
		})
	}
}

// TestForecastPodInDoubt: /debug/forecast/{namespace}/{name} of a pod
// the cache holds as a binding in doubt, or apart from the queue with its
// group, is a 404 that says so, as /debug/queue/{namespace}/{name}'s is;
// it answered "unknown, bound, or not ours", which hid a pending pod of
// ours. Other pods missing from the queue get the plain answer.
func TestForecastPodInDoubt(t *testing.T) {
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	doubt := func(key types.NamespacedName) (string, bool) { return "n1", key.Name == "doubtful" }
	held := func(key types.NamespacedName) (string, bool) { return "its binding failed", key.Name == "member" }
	// The 404 is answered before the forecaster is asked.
	h := handler(prometheus.NewRegistry(), inDoubtView{q, doubt, held}, func() (bool, string) { return true, "" }, nil, &forecaster{})
	for _, tc := range []struct {
		name, path string
		has        []string
	}{
		{name: "in doubt", path: "/debug/forecast/default/doubtful",
			has: []string{"held on node n1 as a binding in doubt", "a forecast is only of pods in the queue"}},
		{name: "a member held apart", path: "/debug/forecast/default/member",
			has: []string{"is not in schedq's queue: its binding failed", "a forecast is only of pods in the queue"}},
		{name: "unknown", path: "/debug/forecast/default/nobody",
			has: []string{"(unknown, bound, or not ours): a forecast is only of pending pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rr.Code != http.StatusNotFound {
				t.Errorf("HTTP %d %q; want 404", rr.Code, rr.Body.String())
			}
			for _, want := range tc.has {
				if !strings.Contains(rr.Body.String(), want) {
					t.Errorf("%q; want it to contain %q", rr.Body.String(), want)
				}
			}
		})
	}
}

// TestRunStoppedWhileConnecting: SIGTERM (ctx ends) while the API server
// has not answered the first request is a shutdown, as at any later
// point: Run returns nil (exit status 0), or the context's cause. It
// returned "no answer within 15s", and the process exited 1.
func TestRunStoppedWhileConnecting(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stop }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // before Close, which waits for the handlers
	kc := writeKubeconfig(t, "hanging", srv.URL)
	cause := errors.New("stopped for the test")
	for _, tc := range []struct {
		name   string
		cancel func() (context.Context, context.CancelFunc)
		want   error
	}{
		{name: "SIGTERM", want: nil, cancel: func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}},
		{name: "another cause", want: cause, cancel: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(cause) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.cancel()
			cancel()
			err := Run(ctx, Options{Kubeconfig: kc, SchedulerName: "schedq", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("Run: %v, want %v", err, tc.want)
			}
		})
	}
}
