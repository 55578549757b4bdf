package schedq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/schedq/schedq"
)

// Job is a batch job waiting for a machine with enough free GPUs.
type Job struct {
	Name     string
	Priority int32
	GPUs     int
	Paused   bool
}

// The job scheduler's own events: a machine joins, or frees some GPUs.
const (
	joined schedq.Action = 1 << iota
	freed
)

var (
	machineJoined = schedq.Event{Kind: "Machine", Action: joined, Label: "MachineJoined"}
	gpusFreed     = schedq.Event{Kind: "Machine", Action: freed, Label: "GPUsFreed"}
)

// A job queue with events of its own: a job that found no machine with
// enough GPUs waits until GPUs are freed or a machine joins, and its hint
// wakes it only if the event brings enough GPUs. A paused job is held by a
// gate until it is resumed.
func Example() {
	q, err := schedq.New(schedq.Config[string, Job]{
		Key:      func(j Job) string { return j.Name },
		Priority: func(j Job) int32 { return j.Priority },
		Hints: map[string][]schedq.EventHint[Job]{
			"GPUFit": {
				{Event: machineJoined},
				{Event: gpusFreed, Fn: func(j Job, _, gpus any) (schedq.Hint, error) {
					if gpus.(int) >= j.GPUs {
						return schedq.HintQueue, nil
					}
					return schedq.HintSkip, nil
				}},
			},
		},
		PreEnqueue:     []schedq.PreEnqueue[Job]{{Name: "Paused", Admit: func(j Job) bool { return !j.Paused }}},
		DisableBackoff: true, // retry as soon as an event allows, for the example
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	q.Add(Job{Name: "train", Priority: 10, GPUs: 8})
	q.Add(Job{Name: "eval", Priority: 1, GPUs: 1, Paused: true})

	a, _ := q.Pop(ctx) // eval is gated, so train
	fmt.Println("trying", a.Item.Name)
	q.Requeue(a, schedq.Failure{RejectedBy: []string{"GPUFit"}}) // no machine has 8 free GPUs

	q.Move(gpusFreed, nil, 2, nil) // 2 GPUs are not enough for train
	_, where, _ := q.Get("train")
	fmt.Println("after 2 GPUs freed, train is", where)
	q.Move(gpusFreed, nil, 8, nil)
	_, where, _ = q.Get("train")
	fmt.Println("after 8 GPUs freed, train is", where)

	q.Update(Job{Name: "eval", Priority: 1, GPUs: 1, Paused: true}, Job{Name: "eval", Priority: 1, GPUs: 1})
	for range 2 {
		a, _ = q.Pop(ctx)
		fmt.Println("trying", a.Item.Name)
		q.Done(a)
	}
	// Output:
	// trying train
	// after 2 GPUs freed, train is unschedulable
	// after 8 GPUs freed, train is active
	// trying train
	// trying eval
}

// Core is the deterministic state machine under Queue: it takes the time as
// an argument and reads no clock, so a simulation runs it in virtual time,
// calling Tick at each step and asking NextDeadline when to come back.
func ExampleCore() {
	c, _ := schedq.NewCore(schedq.Config[string, Job]{
		Key:      func(j Job) string { return j.Name },
		Priority: func(j Job) int32 { return j.Priority },
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Tick(now) // anchors the flush schedule
	c.Add(Job{Name: "a"}, now)
	a, _ := c.Pop(now)
	c.Requeue(a, schedq.Failure{}, now) // an error: back off for 1s, to the end of its 1s window
	for {
		next, ok := c.NextDeadline()
		if !ok {
			break
		}
		now = next
		c.Tick(now)
		_, where, _ := c.Get("a")
		fmt.Println(now.Format("05.000"), where)
	}
	// Output:
	// 01.000 backoff
	// 02.000 active
}

// Items that Less finds equal pop in the order they entered activeQ.
func ExampleConfig_less() {
	byGPUs := func(a, b *schedq.Info[Job]) bool { return a.Item.GPUs > b.Item.GPUs }
	c, _ := schedq.NewCore(schedq.Config[string, Job]{Key: func(j Job) string { return j.Name }, Less: byGPUs})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, j := range []Job{{Name: "b", GPUs: 1}, {Name: "a", GPUs: 1}, {Name: "c", GPUs: 4}} {
		c.Add(j, now)
	}
	for {
		a, ok := c.Pop(now)
		if !ok {
			break
		}
		fmt.Print(a.Item.Name, " ")
	}
	fmt.Println()
	// Output: c b a
}
