package upstream

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	testingclock "k8s.io/utils/clock/testing"
)

// groupQueue builds a queue with GenericWorkload on, restored when t ends.
func groupQueue(t *testing.T) (*queue.PriorityQueue, *testingclock.FakeClock, context.Context, klog.Logger) {
	t.Helper()
	restore, err := SetGroups(true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
	ctx, cancel := context.WithCancel(context.Background())
	q, clk := NewBenchQueue(ctx, Options{})
	t.Cleanup(func() { q.Close(); cancel() })
	return q, clk, ctx, klog.FromContext(ctx)
}

func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	slices.Sort(out)
	return out
}

func addGang(ctx context.Context, q *queue.PriorityQueue, logger klog.Logger, group string, size int, prio int32) {
	q.AddPodGroup(logger, NewPodGroup(group, int32(size), prio))
	for i := range size {
		q.Add(ctx, NewMember(group+"-"+string(rune('a'+i)), group, prio, nil))
	}
}

// A gang is one entity: popped whole ahead of a lower-priority lone pod,
// rejected whole into backoff, popped whole again once its backoff is over,
// and gone once it succeeds.
func TestGroupPopRejectSucceed(t *testing.T) {
	q, clk, ctx, logger := groupQueue(t)
	q.Add(ctx, NewPod("lone", 1, nil))
	addGang(ctx, q, logger, "gang", 3, 100)

	p, err := PopEntity(q, logger)
	if err != nil {
		t.Fatal(err)
	}
	if p.Group == nil || p.Size() != 3 || len(p.Members()) != 3 {
		t.Fatalf("popped %+v, want the gang of 3", p)
	}
	if err := Reject(q, logger, p, []string{PluginA}); err != nil {
		t.Fatal(err)
	}
	if got := names(q.PodsInBackoffQ()); !slices.Equal(got, []string{"gang-a", "gang-b", "gang-c"}) {
		t.Fatalf("backoffQ holds %v, want the 3 members", got)
	}
	if got := len(q.PendingPodGroupPods()); got != 0 {
		t.Fatalf("%d members left pending after the group's requeue", got)
	}

	// The lone pod is next; then, after the backoff, the gang again.
	p, err = PopEntity(q, logger)
	if err != nil || p.Pod == nil || p.Pod.Pod.Name != "lone" {
		t.Fatalf("popped %+v, %v, want lone", p, err)
	}
	if err := Succeed(q, logger, p); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second)
	FlushBackoffQ(q, logger)
	p, err = PopEntity(q, logger)
	if err != nil || p.Group == nil || p.Size() != 3 {
		t.Fatalf("popped %+v, %v, want the gang again", p, err)
	}
	if err := Succeed(q, logger, p); err != nil {
		t.Fatal(err)
	}
	if n := len(q.PodsInActiveQ()) + len(q.PodsInBackoffQ()) + len(q.UnschedulablePods()) + len(q.InFlightPods()); n != 0 {
		t.Fatalf("%d pods left in the queue after the gang succeeded", n)
	}
}

// A member that arrives before its PodGroup waits apart (incomplete), and
// joins the queue when the group object arrives.
func TestGroupMemberBeforeGroup(t *testing.T) {
	q, _, ctx, logger := groupQueue(t)
	q.Add(ctx, NewMember("early", "late-group", 5, nil))
	if got := names(q.IncompletePodGroupPodsPods()); !slices.Equal(got, []string{"early"}) {
		t.Fatalf("incomplete holds %v, want [early]", got)
	}
	if got := len(q.PodsInActiveQ()); got != 0 {
		t.Fatalf("activeQ holds %d pods before the group exists", got)
	}
	q.AddPodGroup(logger, NewPodGroup("late-group", 1, 5))
	if got := names(q.PodsInActiveQ()); !slices.Equal(got, []string{"early"}) {
		t.Fatalf("activeQ holds %v after AddPodGroup, want [early]", got)
	}
}

// A member that arrives while its group is in flight waits in the pending
// list and comes back with the group when the attempt ends.
func TestGroupMemberDuringAttempt(t *testing.T) {
	q, _, ctx, logger := groupQueue(t)
	addGang(ctx, q, logger, "g", 2, 10)
	p, err := PopEntity(q, logger)
	if err != nil || p.Group == nil {
		t.Fatalf("popped %+v, %v", p, err)
	}
	q.Add(ctx, NewMember("g-late", "g", 10, nil))
	if got := names(q.PendingPodGroupPods()); !slices.Equal(got, []string{"g-late"}) {
		t.Fatalf("pending holds %v, want [g-late]", got)
	}
	if err := Succeed(q, logger, p); err != nil {
		t.Fatal(err)
	}
	if got := names(q.PodsInActiveQ()); !slices.Equal(got, []string{"g-late"}) {
		t.Fatalf("activeQ holds %v after the attempt, want [g-late]", got)
	}
}
