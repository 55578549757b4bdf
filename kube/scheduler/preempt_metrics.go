package scheduler

import "github.com/prometheus/client_golang/prometheus"

// PreemptionMetrics are kube-scheduler's preemption metrics: searches
// started, and victims chosen per preemption.
type PreemptionMetrics struct {
	attempts prometheus.Counter
	victimsH prometheus.Histogram
}

// NewPreemptionMetrics registers the preemption metrics on reg.
func NewPreemptionMetrics(reg prometheus.Registerer) (*PreemptionMetrics, error) {
	m := &PreemptionMetrics{
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "preemption_attempts_total",
			Help: "Total preemption attempts in the cluster till now",
		}),
		victimsH: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "preemption_victims",
			Help:    "Number of selected preemption victims",
			Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.victimsH} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *PreemptionMetrics) attempt() {
	if m != nil {
		m.attempts.Inc()
	}
}

func (m *PreemptionMetrics) victims(n int) {
	if m != nil {
		m.victimsH.Observe(float64(n))
	}
}
