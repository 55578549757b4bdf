package scheduler

import (
	"testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// A pending pod whose status names a nominated node (a previous leader
// preempted for it) is nominated there in the queue as soon as it is
// added, so that the freed room counts as taken after a failover too.
func TestAddPodRestoresNomination(t *testing.T) {
	cases := []struct {
		name, status string
		want         bool
	}{
		{name: "nominated", status: "n1", want: true},
		{name: "not nominated", status: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := schedq.New(testQueueConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			h := &Handlers{Queue: q, Cache: NewCache(), SchedulerName: "schedq"}
			p := cpuPod("preemptor", "1")
			p.Status.NominatedNodeName = tc.status
			h.AddPod(p)
			node, ok := q.Nomination(framework.Key(p))
			if ok != tc.want || node != tc.status {
				t.Fatalf("Nomination = %q, %v; want %q, %v", node, ok, tc.status, tc.want)
			}
			if got := len(q.Nominated("n1")); got != map[bool]int{true: 1}[tc.want] {
				t.Fatalf("Nominated(n1) has %d pods", got)
			}
		})
	}
}
