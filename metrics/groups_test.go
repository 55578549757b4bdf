package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedq/schedq"
)

type member struct{ name, group string }

// TestGroupMetrics: one lone item and a group of three, as upstream's
// entity metrics count them; then the group's failed attempt.
func TestGroupMetrics(t *testing.T) {
	r := New(Options{})
	c, err := schedq.NewCore(schedq.Config[string, member]{
		Key:      func(m member) string { return m.name },
		Priority: func(member) int32 { return 0 },
		Group:    func(m member) string { return m.group },
		Recorder: r,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := r.Register(reg, c); err != nil {
		t.Fatal(err)
	}
	c.Add(member{"lone", ""}, t0)
	for _, n := range []string{"a", "b", "c"} {
		c.Add(member{n, "pg"}, t0)
	}
	c.Add(member{"x", "other"}, t0)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP scheduler_pending_pods Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 1
scheduler_pending_pods{queue="backoff"} 0
scheduler_pending_pods{queue="gated"} 0
scheduler_pending_pods{queue="incomplete"} 4
scheduler_pending_pods{queue="pending"} 0
scheduler_pending_pods{queue="unschedulable"} 0
`), "scheduler_pending_pods"); err != nil {
		t.Error(err)
	}
	if err := c.SetGroup("pg", schedq.GroupSpec{MinCount: 3}, t0); err != nil {
		t.Fatal(err)
	}
	want := func(text string) {
		t.Helper()
		if err := testutil.GatherAndCompare(reg, strings.NewReader(text), "scheduler_queued_entities", "scheduler_queue_incoming_entities_total"); err != nil {
			t.Error(err)
		}
	}
	want(`
# HELP scheduler_queue_incoming_entities_total Number of queue entities (lone pods and pod groups) added to scheduling queues by event, queue type and entity type.
# TYPE scheduler_queue_incoming_entities_total counter
scheduler_queue_incoming_entities_total{event="ItemAdd",queue="active",type="pod"} 1
scheduler_queue_incoming_entities_total{event="ItemAdd",queue="active",type="podgroup"} 1
# HELP scheduler_queued_entities Number of queue entities (lone pods and pod groups, a group counting once), by queue type and entity type.
# TYPE scheduler_queued_entities gauge
scheduler_queued_entities{queue="active",type="pod"} 1
scheduler_queued_entities{queue="active",type="podgroup"} 1
scheduler_queued_entities{queue="backoff",type="pod"} 0
scheduler_queued_entities{queue="backoff",type="podgroup"} 0
scheduler_queued_entities{queue="gated",type="pod"} 0
scheduler_queued_entities{queue="gated",type="podgroup"} 0
scheduler_queued_entities{queue="unschedulable",type="pod"} 0
scheduler_queued_entities{queue="unschedulable",type="podgroup"} 0
`)
	if got := testutil.ToFloat64(r.incoming.WithLabelValues("active", "ItemAdd")); got != 4 {
		t.Errorf("incoming pods = %v, want 4 (1 lone + a group of 3)", got)
	}
	a, _ := c.Pop(t0)
	if a.Group != "pg" {
		a, _ = c.Pop(t0)
	}
	if err := c.Requeue(a, schedq.Failure{Message: "boom"}, t0); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(r.entitiesIn.WithLabelValues("backoff", "ScheduleAttemptFailure", "podgroup")); got != 1 {
		t.Errorf("incoming_entities{backoff,ScheduleAttemptFailure,podgroup} = %v, want 1", got)
	}
}
