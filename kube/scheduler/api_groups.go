package scheduler

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Warn implements Reporter (and Warner): a Warning event on obj (a pod or a PodGroup).
func (r APIReporter) Warn(_ context.Context, obj runtime.Object, reason, message string) {
	r.Recorder.Eventf(obj, nil, v1.EventTypeWarning, reason, "Scheduling", "%s", note(message))
}
