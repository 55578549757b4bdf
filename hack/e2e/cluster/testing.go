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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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
