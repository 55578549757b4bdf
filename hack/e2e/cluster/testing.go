package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Figure records a figure a test measured: in the test's log, and as a
// line of the file $SCHEDQ_E2E_REPORT names (which .ci/run prints), since
// go test hides the logs of passing packages.
func Figure(t testing.TB, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf("%s: %s", t.Name(), fmt.Sprintf(format, args...))
	t.Log(line)
	if path := os.Getenv("SCHEDQ_E2E_REPORT"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// WaitFor polls cond every 50ms until it holds, and fails t at the
// deadline with a message naming what it waited for. It never sleeps a
// fixed time to wait for a result.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// WaitPods waits until cond holds of the pods of ns, by name, and fails t
// after timeout with a message naming what it waited for and, if
// describe is set, what it says of the pods then. It follows a watch
// (an informer's list and watch, which lists again after an outage),
// checking cond once listed and after each change, so that it wakes on
// the change it waits for rather than on a poll.
func WaitPods(t testing.TB, c kubernetes.Interface, ns string, timeout time.Duration, what string,
	cond func(pods map[string]*v1.Pod) bool, describe func(pods map[string]*v1.Pod) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pc := c.CoreV1().Pods(ns)
	// With the client's word on watch-list streams: a fake clientset
	// cannot serve one, and an informer that asked for one would never
	// sync.
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return pc.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pc.Watch(ctx, o)
		},
	}, c)
	var store cache.Store
	pods := func() map[string]*v1.Pod {
		out := map[string]*v1.Pod{}
		for _, obj := range store.List() {
			p := obj.(*v1.Pod)
			out[p.Name] = p
		}
		return out
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &v1.Pod{}, func(s cache.Store) (bool, error) {
		store = s
		return cond(pods()), nil
	}, func(watch.Event) (bool, error) { return cond(pods()), nil })
	if err != nil {
		msg := fmt.Sprintf("waiting for %s: %v", what, err)
		if describe != nil && store != nil {
			msg += "; " + describe(pods())
		}
		t.Fatal(msg)
	}
}

// Namespace creates a namespace named after the test; its pods are
// deleted at the end (there is no namespace controller to do it).
func Namespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		c.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	return name
}
