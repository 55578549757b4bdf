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

// machineJoined is the one event of this walkthrough: a machine joins.
var machineJoined = schedq.Event{Kind: "Machine", Action: 1, Label: "MachineJoined"}

func main() {
	var broken error
	q, err := schedq.NewCore(schedq.Config[string, job]{
		Key:      func(j job) string { return j.name },
		Priority: func(j job) int32 { return j.priority },
		Hints: map[string][]schedq.EventHint[job]{
			// Fit wants to hear about new machines.
			"Fit": {{Event: machineJoined}},
		},
		// The gate holds gated jobs. Updates need no registration: with no
		// Config.UpdateEvents, any update of a gated job runs its gates again.
		PreEnqueue: []schedq.PreEnqueue[job]{{Name: "Gate", Admit: func(j job) bool { return !j.gated }}},
		// Check the queue's invariants after every step (O(n) each).
		CheckInvariants: func(err error) { broken = err },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q.Tick(now) // anchors the flush schedule: backoff every 1s from now
	names := []string{"web", "batch", "gpu", "gated"}
	show := func(step string) {
		var b strings.Builder
		for _, n := range names {
			_, loc, _ := q.Get(n)
			fmt.Fprintf(&b, " %s=%-13s", n, loc)
		}
		c := q.Counts()
		fmt.Printf("t=%-5s %-60s|%s| active=%d backoff=%d unschedulable=%d gated=%d inflight=%d\n",
			now.Format("4:05"), step, b.String(), c.Active, c.Backoff, c.Unschedulable, c.Gated, c.InFlight)
	}

	q.Add(job{"web", 100, false}, now)
	q.Add(job{"batch", 10, false}, now)
	q.Add(job{"gpu", 50, false}, now)
	q.Add(job{"gated", 10, true}, now)
	show("add four jobs; one is gated")

	web, _ := q.Pop(now)
	q.Done(web, now)
	show("pop web (highest priority), bind it: Done")

	gpu, _ := q.Pop(now)
	show("pop gpu")
	q.Requeue(gpu, schedq.Failure{RejectedBy: []string{"Fit"}}, now)
	show("gpu fits no node: parked until an event helps")
	if x, err := q.Explain("gpu", now); err == nil {
		fmt.Printf("\nwhy is gpu pending?\n%s\n", x)
	}

	batch, _ := q.Pop(now)
	q.Requeue(batch, schedq.Failure{}, now)
	show("batch fails with an API error: error backoff")

	now = now.Add(500 * time.Millisecond)
	q.Move(machineJoined, nil, "machine-7", nil, now)
	show("a machine joins: Fit hears it; gpu backs off")

	for q.Counts().Backoff > 0 {
		now, _ = q.NextDeadline()
		q.Tick(now)
		show("tick at the next deadline: the backoff flush")
	}

	q.Update(job{"gated", 10, true}, job{"gated", 10, false}, now)
	show("gated's gate is removed: it goes to activeQ")

	for {
		j, ok := q.Pop(now)
		if !ok {
			break
		}
		q.Done(j, now)
		show("pop " + j.Item.name + ", bind it: Done")
	}
	if broken != nil {
		fmt.Fprintln(os.Stderr, broken)
		os.Exit(1)
	}
}
