package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newGroupAttempts is scheduler_podgroup_schedule_attempts_total, as
// kube-scheduler v1.37 names it: group attempts by result (scheduled,
// unschedulable, error) and profile. Its members count as pods in
// schedule_attempts_total (memberAttempts).
func newGroupAttempts() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "scheduler", Name: "podgroup_schedule_attempts_total",
		Help: "Number of attempts to schedule pod groups, by the result.",
	}, []string{"result", "profile"})
}

// groupAttempt counts a group attempt of profile (see attempt). Safe on
// a nil Metrics.
func (m *Metrics) groupAttempt(profile string, r Result) {
	if m == nil {
		return
	}
	m.groups.WithLabelValues(r.String(), m.profileOr(profile)).Inc()
}

// memberAttempts counts n members of a group attempt as pods' attempts
// with result r, as kube-scheduler counts each member of a pod group in
// schedule_attempts_total. Safe on a nil Metrics.
func (m *Metrics) memberAttempts(profile string, r Result, n int, d time.Duration) {
	for range n {
		m.attempt(profile, r, d)
	}
}
