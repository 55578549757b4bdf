package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the scheduler's own metrics, next to the queue's: attempts
// and their latency by result, and bindings.
type Metrics struct {
	attempts *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bindings *prometheus.CounterVec
	bindTime prometheus.Histogram
	groups   *prometheus.CounterVec // group attempts (metrics_groups.go)
	profile  string
}

// NewMetrics registers the scheduler metrics on reg, with kube-scheduler's
// names where it has them.
func NewMetrics(reg prometheus.Registerer, profile string) (*Metrics, error) {
	m := &Metrics{
		profile: profile,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result.",
		}, []string{"result", "profile"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"result", "profile"}),
		bindings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "bindings_total",
			Help: "Bindings, by result: success; error; conflict (the pod was bound already, by another replica most likely); gone (the pod was deleted); terminating (its namespace is being deleted); node_deleted (not sent: the node's deletion was seen first); stale_term (refused by the API server's lease check: made under a term that is over).",
		}, []string{"result"}),
		bindTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "binding_duration_seconds",
			Help:    "Time from the start of an attempt to the end of its binding.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		groups: newGroupAttempts(),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.latency, m.bindings, m.bindTime, m.groups} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) attempt(r Result, d time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(r.String(), m.profile).Inc()
	m.latency.WithLabelValues(r.String(), m.profile).Observe(d.Seconds())
}

// binding counts a binding by its result (see bindingResult) and, for one
// that was sent, observes its duration.
func (m *Metrics) binding(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.bindings.WithLabelValues(result).Inc()
	if result != bindingNodeDeleted {
		m.bindTime.Observe(d.Seconds())
	}
}
