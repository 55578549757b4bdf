package schedq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/schedq/schedq"
)

type Pod struct {
	Name     string
	Priority int32
}

// A queue of pods in the default order, driven through one failed attempt
// and the event that helps it.
func Example() {
	q, err := schedq.New(schedq.Config[string, Pod]{
		Key:      func(p Pod) string { return p.Name },
		Priority: func(p Pod) int32 { return p.Priority },
		Hints: map[string][]schedq.EventHint[Pod]{
			"NodeResourcesFit": {{Event: schedq.EventNodeAdd}},
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	q.Add(Pod{"small", 1})
	q.Add(Pod{"big", 10})

	p, _ := q.Pop(ctx) // highest priority first
	fmt.Println("trying", p.Item.Name)
	q.AddUnschedulableIfNotPresent(p.Item, p.Cycle, schedq.Failure{UnschedulablePlugins: []string{"NodeResourcesFit"}})
	_, where, _ := q.Get("big")
	fmt.Println("big is", where)

	p, _ = q.Pop(ctx)
	fmt.Println("trying", p.Item.Name)
	q.Done(p.Item.Name, p.Cycle)

	q.MoveAllToActiveOrBackoffQueue(schedq.EventNodeAdd, nil, nil, nil)
	_, where, _ = q.Get("big")
	fmt.Println("after NodeAdd, big is", where)
	// Output:
	// trying big
	// big is unschedulable
	// trying small
	// after NodeAdd, big is backoff
}

// Core is the deterministic state machine under Queue: it takes the time as
// an argument, so a simulation can run it in virtual time.
func ExampleCore() {
	c, _ := schedq.NewCore(schedq.Config[string, Pod]{
		Key:      func(p Pod) string { return p.Name },
		Priority: func(p Pod) int32 { return p.Priority },
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Add(Pod{"a", 1}, now)
	p, _ := c.Pop(now)
	c.AddUnschedulableIfNotPresent(p.Item, p.Cycle, schedq.Failure{}, now) // an error
	for _, step := range []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond} {
		now = now.Add(step)
		c.FlushBackoffCompleted(now)
		_, where, _ := c.Get("a")
		fmt.Println(now.Format("05.000"), where)
	}
	// Output:
	// 00.000 backoff
	// 00.500 backoff
	// 02.000 active
}

// ByPriority builds the default order for a custom Less, here with a
// tie-break on the name.
func ExampleByPriority() {
	byPrio := schedq.ByPriority(func(p Pod) int32 { return p.Priority })
	less := func(a, b *schedq.Info[Pod]) bool {
		if byPrio(a, b) || byPrio(b, a) {
			return byPrio(a, b)
		}
		return a.Item.Name < b.Item.Name
	}
	c, _ := schedq.NewCore(schedq.Config[string, Pod]{Key: func(p Pod) string { return p.Name }, Less: less})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []Pod{{"b", 1}, {"a", 1}, {"c", 5}} {
		c.Add(p, now)
	}
	for {
		p, ok := c.Pop(now)
		if !ok {
			break
		}
		fmt.Print(p.Item.Name, " ")
	}
	fmt.Println()
	// Output: c a b
}
