package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
)

// TenantSource is a Source that also reports its tenants, under fairness
// (schedq.Config.Fairness). *schedq.Queue implements it. The per-tenant
// gauges are read from it at scrape time.
type TenantSource interface {
	Tenants() []schedq.TenantStats
}

// tenantMetrics are the per-tenant metrics: pops pushed through
// schedq.Recorder.Popped, and the levels read at scrape. With
// Options.DisableTenantLabel they carry no tenant label and sum over the
// tenants, so that their cardinality stays one.
type tenantMetrics struct {
	labels  []string
	pops    *prometheus.CounterVec
	popsBy  cache[string, prometheus.Counter]
	pending *prometheus.Desc
	usage   *prometheus.Desc
}

func newTenantMetrics(o Options, name func(string) string) *tenantMetrics {
	m := &tenantMetrics{labels: []string{"tenant"}}
	if o.DisableTenantLabel {
		m.labels = nil
	}
	m.pops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_tenant_pops_total",
		Help: "Items popped from the queue, by tenant (fair sharing).",
	}, m.labels)
	m.popsBy.resolve = func(tenant string) prometheus.Counter { return m.pops.WithLabelValues(m.values(tenant)...) }
	m.pending = prometheus.NewDesc(name("queue_tenant_pending_pods"),
		"Items waiting in activeQ, by tenant (fair sharing).", m.labels, nil)
	m.usage = prometheus.NewDesc(name("queue_tenant_usage"),
		"A tenant's decayed usage, the charges of its pops halved per half-life, that fair sharing orders tenants by (before their weight).", m.labels, nil)
	return m
}

// register exports the per-tenant metrics on reg.
func (m *tenantMetrics) register(reg prometheus.Registerer, r *Recorder) error {
	for _, c := range []prometheus.Collector{m.pops, tenantLevels{r}} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// values returns the label values for tenant.
func (m *tenantMetrics) values(tenant string) []string {
	if m.labels == nil {
		return nil
	}
	return []string{tenant}
}

// Popped implements schedq.Recorder.
func (r *Recorder) Popped(tenant string) {
	if r.tenants.labels == nil {
		tenant = ""
	}
	r.tenants.popsBy.get(tenant).Inc()
}

// tenantLevels is the collector of the per-tenant gauges.
type tenantLevels struct{ r *Recorder }

func (l tenantLevels) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.r.tenants.pending
	ch <- l.r.tenants.usage
}

func (l tenantLevels) Collect(ch chan<- prometheus.Metric) {
	l.r.mu.Lock()
	src, _ := l.r.source.(TenantSource)
	l.r.mu.Unlock()
	if src == nil {
		return
	}
	m := l.r.tenants
	ts := src.Tenants()
	if m.labels == nil {
		if len(ts) == 0 {
			return
		}
		var pending, usage float64
		for _, t := range ts {
			pending += float64(t.Active)
			usage += t.Usage
		}
		ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, pending)
		ch <- prometheus.MustNewConstMetric(m.usage, prometheus.GaugeValue, usage)
		return
	}
	for _, t := range ts {
		ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(t.Active), t.Name)
		ch <- prometheus.MustNewConstMetric(m.usage, prometheus.GaugeValue, t.Usage, t.Name)
	}
}
