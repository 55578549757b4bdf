package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedq/schedq"
)

// coreAt is a Core read at a fixed time, as a TenantSource.
type coreAt struct {
	*schedq.Core[string, job]
	now time.Time
}

func (c coreAt) Tenants() []schedq.TenantStats { return c.Core.Tenants(c.now) }

// tenantOf: a job's tenant is its name's first letter.
func tenantOf(j job) string { return j.name[:1] }

func fairFixture(t *testing.T, o Options) (*schedq.Core[string, job], *prometheus.Registry) {
	t.Helper()
	r := New(o)
	c, err := schedq.NewCore(schedq.Config[string, job]{
		Key:      func(j job) string { return j.name },
		Priority: func(j job) int32 { return j.prio },
		Fairness: &schedq.Fairness[job]{Tenant: tenantOf, HalfLife: time.Minute},
		Recorder: r,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := r.Register(reg, coreAt{c, t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a1", "a2", "a3", "b1"} {
		c.Add(job{name: n}, t0)
	}
	for range 2 {
		a, _ := c.Pop(t0)
		c.Done(a, t0)
	}
	return c, reg
}

func TestTenantMetrics(t *testing.T) {
	_, reg := fairFixture(t, Options{})
	want := `
# HELP scheduler_queue_tenant_pending_pods Items waiting in activeQ, by tenant (fair sharing).
# TYPE scheduler_queue_tenant_pending_pods gauge
scheduler_queue_tenant_pending_pods{tenant="a"} 2
scheduler_queue_tenant_pending_pods{tenant="b"} 0
# HELP scheduler_queue_tenant_pops_total Items popped from the queue, by tenant (fair sharing).
# TYPE scheduler_queue_tenant_pops_total counter
scheduler_queue_tenant_pops_total{tenant="a"} 1
scheduler_queue_tenant_pops_total{tenant="b"} 1
# HELP scheduler_queue_tenant_usage A tenant's decayed usage, the charges of its pops halved per half-life, that fair sharing orders tenants by (before their weight).
# TYPE scheduler_queue_tenant_usage gauge
scheduler_queue_tenant_usage{tenant="a"} 0.5
scheduler_queue_tenant_usage{tenant="b"} 0.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"scheduler_queue_tenant_pending_pods", "scheduler_queue_tenant_pops_total", "scheduler_queue_tenant_usage"); err != nil {
		t.Error(err)
	}
}

func TestTenantLabelOff(t *testing.T) {
	_, reg := fairFixture(t, Options{DisableTenantLabel: true})
	want := `
# HELP scheduler_queue_tenant_pending_pods Items waiting in activeQ, by tenant (fair sharing).
# TYPE scheduler_queue_tenant_pending_pods gauge
scheduler_queue_tenant_pending_pods 2
# HELP scheduler_queue_tenant_pops_total Items popped from the queue, by tenant (fair sharing).
# TYPE scheduler_queue_tenant_pops_total counter
scheduler_queue_tenant_pops_total 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"scheduler_queue_tenant_pending_pods", "scheduler_queue_tenant_pops_total"); err != nil {
		t.Error(err)
	}
}
