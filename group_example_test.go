package schedq_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/schedq/schedq"
)

// Worker is one worker of a distributed training job: a gang that must
// start at least MinCount workers at once, or none.
type Worker struct {
	Name string
	Job  string // its gang; "" for a lone task
	GPUs int
}

// A gang of three workers of which at least two must be placed. The
// first pop finds room for one only: nothing is placed, and the gang waits,
// parked on the plugin that rejected it, until GPUs are freed. The second
// pop places two, and the third worker comes back alone to be tried again.
func Example_groups() {
	q, err := schedq.New(schedq.Config[string, Worker]{
		Key:            func(w Worker) string { return w.Name },
		Priority:       func(Worker) int32 { return 0 },
		Group:          func(w Worker) string { return w.Job },
		Hints:          map[string][]schedq.EventHint[Worker]{"GPUFit": {{Event: gpusFreed}}},
		DisableBackoff: true, // retry as soon as an event allows, for the example
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, n := range []string{"w0", "w1", "w2"} {
		q.Add(Worker{Name: n, Job: "train", GPUs: 8})
	}
	_, where, _ := q.Get("w0")
	fmt.Println("before the group object:", where)
	q.SetGroup("train", schedq.GroupSpec{MinCount: 2})

	a, _ := q.Pop(ctx)
	fmt.Printf("trying group %s with %d members\n", a.Group, len(a.Members))
	q.Requeue(a, schedq.Failure{RejectedBy: []string{"GPUFit"}, Message: "only 1 of 2 fit"})
	x, _ := q.Explain("w1")
	fmt.Println(strings.SplitN(x.Reason, ";", 2)[0])

	q.Move(gpusFreed, nil, 16, nil)
	a, _ = q.Pop(ctx)
	q.DoneMembers(a, []int{0, 1}, "2 of 3 placed") // a success short of all members
	a, _ = q.Pop(ctx)
	fmt.Printf("left to place: %d member(s), %s\n", len(a.Members), a.Members[0].Key)
	q.Done(a)
	fmt.Printf("%+v\n", q.Counts())
	// Output:
	// before the group object: incomplete
	// trying group train with 3 members
	// group "train" (3 members, min 2): unschedulable: rejected by GPUFit
	// left to place: 1 member(s), w2
	// {Active:0 Backoff:0 Unschedulable:0 Gated:0 InFlight:0 Incomplete:0 Pending:0}
}
