package scheduler

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
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

	// Per pod bound, as kube-scheduler observes them.
	podAttempts prometheus.Histogram
	sli         *prometheus.HistogramVec
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
		podAttempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "pod_scheduling_attempts",
			Help:    "Number of attempts to successfully schedule a pod.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 5),
		}),
		sli: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "pod_scheduling_sli_duration_seconds",
			Help:    "Time from a pod's first entry into the active queue to its binding, over all its attempts, by its number of attempts (15 or more: 15+).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
		}, []string{"attempts"}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.latency, m.bindings, m.bindTime, m.groups, m.podAttempts, m.sli} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// attempt counts an attempt of a pod of profile (its schedulerName; ""
// for the profile NewMetrics was given). Safe on a nil Metrics.
func (m *Metrics) attempt(profile string, r Result, d time.Duration) {
	if m == nil {
		return
	}
	profile = m.profileOr(profile)
	m.attempts.WithLabelValues(r.String(), profile).Inc()
	m.latency.WithLabelValues(r.String(), profile).Observe(d.Seconds())
}

// profileOr is profile, or the profile NewMetrics was given if "".
func (m *Metrics) profileOr(profile string) string {
	if profile == "" {
		return m.profile
	}
	return profile
}

// scheduled observes a pod bound after the attempts of info (its number
// of attempts, the time since it first entered the active queue), as
// kube-scheduler does when a binding succeeds; the queue's recorder
// counts pod_scheduled_after_flush_total. Safe on a nil Metrics.
func (m *Metrics) scheduled(info schedq.Status, now time.Time) {
	if m == nil {
		return
	}
	m.podAttempts.Observe(float64(info.Attempts))
	if !info.InitialAttemptTimestamp.IsZero() {
		label := "15+"
		if info.Attempts < 15 {
			label = strconv.Itoa(info.Attempts)
		}
		m.sli.WithLabelValues(label).Observe(now.Sub(info.InitialAttemptTimestamp).Seconds())
	}
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
