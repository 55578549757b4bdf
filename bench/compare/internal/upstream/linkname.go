package upstream

import (
	_ "unsafe" // for go:linkname

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
)

// The two periodic flushes of the upstream queue are unexported methods. These
// declarations bind to them by symbol name so the driver can call them
// synchronously. This only works against the pinned upstream version; if the
// methods are renamed the build fails at link time.

//go:linkname flushBackoffQCompleted k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushBackoffQCompleted
func flushBackoffQCompleted(p *queue.PriorityQueue, logger klog.Logger)

//go:linkname flushUnschedulablePodsLeftover k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushUnschedulableEntitiesLeftover
func flushUnschedulablePodsLeftover(p *queue.PriorityQueue, logger klog.Logger)
