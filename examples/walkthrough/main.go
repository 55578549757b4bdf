// Command walkthrough shows items moving between the queue's sub-queues:
// it drives a schedq.Core in virtual time and prints where each item is
// after every step.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schedq/schedq"
)

type job struct {
	name     string
	priority int32
	gated    bool
}

func main() {
	nodeAdd := schedq.Event{Resource: schedq.Node, Action: schedq.Add}
	q, err := schedq.NewCore(schedq.Config[string, job]{
		Key:      func(j job) string { return j.name },
		Priority: func(j job) int32 { return j.priority },
		Hints: map[string][]schedq.EventHint[job]{
			// NodeResourcesFit wants to hear about new nodes.
			"NodeResourcesFit": {{Event: nodeAdd}},
			// The gate wants to hear about updates of the item itself. A
			// PreEnqueue check that registers nothing is only re-checked by
			// Activate and the leftover flush.
			"SchedulingGates": {{Event: schedq.Event{Resource: schedq.UnschedulablePod, Action: schedq.Update}}},
		},
		PreEnqueue: []schedq.PreEnqueue[job]{{Name: "SchedulingGates", Admit: func(j job) bool { return !j.gated }}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"web", "batch", "gpu", "gated"}
	show := func(step string) {
		var b strings.Builder
		for _, n := range names {
			_, loc, _ := q.Get(n)
			fmt.Fprintf(&b, " %s=%-13s", n, loc)
		}
		c := q.Counts()
		fmt.Printf("t=%-5s %-56s|%s| active=%d backoff=%d unschedulable=%d gated=%d inflight=%d\n",
			now.Format("4:05"), step, b.String(), c.Active, c.Backoff, c.Unschedulable, c.Gated, c.InFlight)
	}

	q.Add(job{"web", 100, false}, now)
	q.Add(job{"batch", 10, false}, now)
	q.Add(job{"gpu", 50, false}, now)
	q.Add(job{"gated", 10, true}, now)
	show("add four jobs; one is gated")

	web, _ := q.Pop(now)
	q.Done(web.Item.name, web.Cycle)
	show("pop web (highest priority), bind it: Done")

	gpu, _ := q.Pop(now)
	show("pop gpu")
	q.AddUnschedulableIfNotPresent(gpu.Item, gpu.Cycle, schedq.Failure{UnschedulablePlugins: []string{"NodeResourcesFit"}}, now)
	show("gpu fits no node: parked until an event helps")
	if x, err := q.Explain("gpu", now); err == nil {
		fmt.Printf("\nwhy is gpu pending?\n%s\n", x)
	}

	batch, _ := q.Pop(now)
	q.AddUnschedulableIfNotPresent(batch.Item, batch.Cycle, schedq.Failure{}, now)
	show("batch fails with an API error: error backoff")

	now = now.Add(500 * time.Millisecond)
	q.MoveAllToActiveOrBackoffQueue(nodeAdd, nil, "node-7", nil, now)
	show("a node joins: gpu's plugin hears it, still backing off")

	now = now.Add(1500 * time.Millisecond)
	q.FlushBackoffCompleted(now)
	show("2s later the backoff flush moves both to activeQ")

	q.Update(job{"gated", 10, true}, job{"gated", 10, false}, now)
	show("gated's gate is removed: it goes to activeQ")

	for {
		j, ok := q.Pop(now)
		if !ok {
			break
		}
		q.Done(j.Item.name, j.Cycle)
		show("pop " + j.Item.name + ", bind it: Done")
	}
	if err := q.CheckInvariants(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
