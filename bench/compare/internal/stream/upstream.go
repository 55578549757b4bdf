package stream

import (
	"sync"
	_ "unsafe" // for go:linkname

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

var registered sync.Once

func metricsOnce() { registered.Do(metrics.Register) }

// The upstream flushes are unexported; see internal/upstream/linkname.go.

//go:linkname upstreamFlushBackoff k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushBackoffQCompleted
func upstreamFlushBackoff(p *queue.PriorityQueue, logger klog.Logger)

//go:linkname upstreamFlushLeftover k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushUnschedulableEntitiesLeftover
func upstreamFlushLeftover(p *queue.PriorityQueue, logger klog.Logger)
