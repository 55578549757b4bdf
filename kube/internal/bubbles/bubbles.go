// Package bubbles makes k8s.io/apimachinery's process-wide error handling
// safe for test binaries that run some tests in testing/synctest bubbles
// and others on the real clock.
//
// utilruntime.HandleError, which client-go and kube-scheduler call on
// errors they cannot return, rate-limits itself by sleeping until 1 ms
// after the previous error, measured with time.Now in whatever clock the
// caller has. A bubble's clock is fake and carries no monotonic reading.
// An error inside a bubble after one outside it sleeps the bubble, and
// jumps its clock, to the real instant of that error; the bubble's later
// errors are then stamped as far in the future as its fake time has run
// since. The next error on the real clock sleeps that long, under
// whatever lock its caller holds: kube-scheduler's queue lock, in
// kube/app's TestWholeSchedulerWorkloads, which then hung for minutes.
// Test binaries keep the logging and drop the rate limit.
package bubbles

import (
	"context"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// NoErrorRateLimit replaces utilruntime.ErrorHandlers with one that
// logs each error, as the first of the defaults does, and never sleeps.
// Call it from a test binary's init, before any test runs: the handlers
// are a package variable, read without a lock.
func NoErrorRateLimit() {
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{logError}
}

func logError(ctx context.Context, err error, msg string, keysAndValues ...any) {
	klog.FromContext(ctx).Error(err, msg, keysAndValues...)
}
