package schedq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestQueueEveryMethodConcurrently checks Queue's doc, "All methods are
// safe for concurrent use", for every method at once on a small key space
// (so that the operations meet on the same items), under -race: the
// readers (Pending, whose sort runs outside the lock and calls Less; Dump,
// Explain, Get, Counts, Stats, Tenants, Nominated) beside every change.
// Less reads every field of the Info copies it gets, so that a copy
// sharing memory the queue then writes would show as a race. The queue
// checks its invariants after every change.
func TestQueueEveryMethodConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name string
		fair bool
	}{
		{name: "Less"},
		{name: "Less with fairness", fair: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, func(c *Config[string, job]) {
				c.Less = func(a, b *Info[job]) bool {
					n := 0
					for _, x := range [][]string{a.RejectedBy, a.WaitingOn, a.Reasons, b.RejectedBy, b.WaitingOn, b.Reasons} {
						for _, s := range x {
							n += len(s)
						}
					}
					_ = n + len(a.Message) + len(b.Message) + int(a.Attempts+b.Attempts)
					return byPrio(a, b)
				}
				c.CheckInvariants = func(err error) { t.Error(err) }
				if tc.fair {
					c.Fairness = &Fairness[job]{Tenant: func(j job) string { return j.label }, BeforePriority: true}
				}
			})
			const keys, rounds = 16, 300
			name := func(i int) string { return fmt.Sprintf("k%02d", i%keys) }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go q.Run(ctx)
			failures := []Failure{{RejectedBy: []string{"Fit"}, Reasons: []string{"full"}}, {WaitingOn: []string{"Volume"}}, {}}
			var consumers, others sync.WaitGroup
			for w := range 2 {
				consumers.Go(func() {
					for i := 0; ; i++ {
						a, err := q.Pop(ctx)
						if err != nil {
							return
						}
						if (i+w)%3 == 0 {
							_ = q.Done(a)
						} else {
							_ = q.Requeue(a, failures[i%len(failures)])
						}
					}
				})
			}
			writers := []func(i int){
				func(i int) { _ = q.Add(job{name: name(i), prio: int32(i % 3), label: []string{"x", "y"}[i%2]}) },
				func(i int) {
					if info, _, ok := q.Get(name(i)); ok {
						nw := info.Item
						nw.prio, nw.label = int32(i%4), []string{"x", "y", "z"}[i%3]
						_ = q.Update(info.Item, nw)
					}
				},
				func(i int) { _ = q.Delete(name(i * 7)) },
				func(i int) { _ = q.Park(mk(name(i*3), 1), failures[i%len(failures)]) },
				func(i int) { _ = q.Activate(name(i), name(i+5)) },
				func(i int) { _ = q.Move(evMachineAdd, nil, i, nil); _ = q.Move(evVolumeAdd, nil, nil, nil) },
				func(i int) { _ = q.Nominate(name(i), []string{"t1", "t2", ""}[i%3]) },
			}
			readers := []func(i int){
				func(i int) { _ = q.Pending(PendingOptions[job]{Limit: 5, Offset: i % 3}) },
				func(i int) { _ = q.Dump().String() },
				func(i int) {
					if x, err := q.Explain(name(i)); err == nil {
						_ = x.String()
					} else if !errors.Is(err, ErrNotFound) {
						t.Error(err)
					}
				},
				func(i int) {
					_, _, _ = q.Get(name(i))
					_, _ = q.Counts(), q.Stats()
					_, _ = q.Tenants(), q.Nominated("t1")
					_ = q.NominatedTargets()
				},
			}
			for _, f := range append(writers, readers...) {
				others.Go(func() {
					for i := range rounds {
						f(i)
					}
				})
			}
			others.Wait()
			cancel()
			consumers.Wait()
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			c := q.Counts()
			if d := q.Dump(); len(d.Items) != c.Active+c.Backoff+c.Unschedulable+c.Gated+c.InFlight {
				t.Errorf("dump of %d items, counts %+v", len(d.Items), c)
			}
		})
	}
}
