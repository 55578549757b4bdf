package schedq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func newQueue(t *testing.T, mutate ...func(*Config[string, job])) *Queue[string, job] {
	t.Helper()
	cfg := testConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestQueueCloseWakesBlockedPop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t)
		errc := make(chan error, 1)
		go func() {
			_, err := q.Pop(context.Background())
			errc <- err
		}()
		synctest.Wait() // Pop is blocked
		select {
		case err := <-errc:
			t.Fatalf("Pop returned %v before Close", err)
		default:
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("Pop after Close: %v", err)
		}
	})
}

func TestQueuePopBlocksUntilAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t)
		got := make(chan string, 1)
		go func() {
			info, err := q.Pop(context.Background())
			if err != nil {
				t.Error(err)
			}
			got <- info.Item.name
		}()
		synctest.Wait()
		if err := q.Add(mk("a", 1)); err != nil {
			t.Fatal(err)
		}
		if name := <-got; name != "a" {
			t.Fatalf("popped %q", name)
		}
	})
}

func TestQueuePopContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := q.Pop(ctx)
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Pop after cancel: %v", err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := q.Pop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pop with deadline: %v", err)
		}
	})
}

func TestQueueAfterClose(t *testing.T) {
	q := newQueue(t, groupsOn)
	if err := q.Add(mk("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := q.Nominate("a", "m1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	ops := map[string]error{
		"Add":      q.Add(mk("b", 1)),
		"Update":   q.Update(mk("a", 1), mk("a", 2)),
		"Delete":   q.Delete("a"),
		"Done":     q.Done(att("a", 1)),
		"Requeue":  q.Requeue(req(mk("a", 1), 1), Failure{}),
		"MoveAll":  q.Move(evMachineAdd, nil, nil, nil),
		"Activate": q.Activate("a"),
		"Park":     q.Park(mk("c", 1), Failure{RejectedBy: []string{"Fit"}}),
		"DoneMembers": q.DoneMembers(Attempt[string, job]{Group: "g", Info: Info[job]{Cycle: 1}},
			[]int{0}, ""),
		"SetGroup":    q.SetGroup("g", GroupSpec{MinCount: 1}),
		"DeleteGroup": q.DeleteGroup("g"),
		"Nominate":    q.Nominate("a", "m2"),
		"Unnominate":  q.Nominate("a", ""),
		"Close":       q.Close(),
	}
	for name, err := range ops {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if _, err := q.Pop(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Pop after Close: %v", err)
	}
	// Nothing is lost: the queued item is still readable.
	if d := q.Dump(); len(d.Items) != 1 || d.Items[0].Key != "a" {
		t.Fatalf("dump after Close: %+v", d.Items)
	}
	if target, ok := q.Nomination("a"); target != "m1" || !ok {
		t.Fatalf("nomination after Close: %q %v, want m1 as before", target, ok)
	}
}

func TestQueueRunFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = true })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runErr := make(chan error, 1)
		go func() { runErr <- q.Run(ctx) }()

		if err := q.Add(mk("a", 1)); err != nil {
			t.Fatal(err)
		}
		info, err := q.Pop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := q.Requeue(req(info.Item, info.Cycle), Failure{}); err != nil {
			t.Fatal(err)
		}
		// The error backoff is 1s; the backoff flush, ticking every 1s,
		// moves it to activeQ and wakes this Pop.
		if _, err := q.Pop(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second || waited > 2*time.Second {
			t.Fatalf("popped after %v, want within the second after the 1s backoff", waited)
		}
		if err := q.Requeue(req(info.Item, info.Cycle+1), Failure{RejectedBy: []string{"Quiet"}}); err != nil {
			t.Fatal(err)
		}
		// Parked on a plugin no event wakes: the leftover flush retries it
		// after 5 minutes, at the first 30s tick past that.
		start = time.Now()
		if _, err := q.Pop(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < defaultMaxInUnschedulable || waited > defaultMaxInUnschedulable+40*time.Second {
			t.Fatalf("leftover flush after %v", waited)
		}
		cancel()
		if err := <-runErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	})
}

// TestQueueRunReturnsAtClose: Run does not wait for its next tick to
// notice Close.
func TestQueueRunReturnsAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t)
		runErr := make(chan error, 1)
		go func() { runErr <- q.Run(context.Background()) }()
		synctest.Wait()
		start := time.Now()
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-runErr; !errors.Is(err, ErrClosed) {
			t.Fatalf("Run: %v", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("Run returned %v after Close, want at once", waited)
		}
	})
}

func TestQueueConcurrent(t *testing.T) {
	q := newQueue(t)
	const producers, consumers, perProducer = 4, 4, 500
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	go q.Run(ctx) // the flushes run beside the producers and consumers
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				if err := q.Add(mk(fmt.Sprintf("p%d-%d", p, i), int32(i%7))); err != nil {
					t.Error(err)
				}
				if i%50 == 0 {
					q.Move(evMachineAdd, nil, nil, nil)
				}
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	for range consumers {
		wg.Go(func() {
			for {
				info, err := q.Pop(ctx)
				if err != nil {
					return
				}
				name := info.Item.name
				if info.Attempts == 1 && len(name)%2 == 0 {
					// Fail some once, and bring them straight back.
					if err := q.Requeue(req(info.Item, info.Cycle), Failure{RejectedBy: []string{"Fit"}}); err != nil {
						t.Error(err)
					}
					q.Activate(name)
					continue
				}
				if err := q.Done(att(name, info.Cycle)); err != nil {
					t.Error(err)
				}
				mu.Lock()
				seen[name]++
				if len(seen) == producers*perProducer {
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != producers*perProducer {
		t.Fatalf("%d items done, want %d", len(seen), producers*perProducer)
	}
	for name, n := range seen {
		if n != 1 {
			t.Fatalf("%s done %d times", name, n)
		}
	}
	if c := q.Counts(); c != (Counts{}) {
		t.Fatalf("counts after draining: %+v", c)
	}
	q.mu.Lock()
	err := q.core.checkInvariants()
	q.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueueDump: the locked Dump sorts and sums outside the lock, and
// gives what the core's Dump gives.
func TestQueueDump(t *testing.T) {
	q := newQueue(t)
	for _, name := range []string{"c", "a", "b"} {
		if err := q.Add(mk(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	d := q.Dump()
	var keys []string
	for _, x := range d.Items {
		keys = append(keys, x.Key)
	}
	if !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Errorf("items %v, want sorted by key", keys)
	}
	if len(d.Summary) == 0 || d.Summary[0].Location != InActive || d.Summary[0].Count != 3 {
		t.Errorf("summary %+v", d.Summary)
	}
}

// manualClock is a Clock that moves only when told to, for Run's ticks.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []manualWaiter
	waiting chan struct{} // gets a value whenever After is called
}

type manualWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, manualWaiter{c.now.Add(d), ch})
	c.waiting <- struct{}{}
	return ch
}

// Step moves the clock on and fires the timers that are due.
func (c *manualClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
		} else {
			w.ch <- c.now
		}
	}
	c.waiters = kept
}

// TestQueueRunOnInjectedClock: Run takes its ticks, and the queue its
// time, from Config.Clock, so a caller's fake clock drives the flushes.
func TestQueueRunOnInjectedClock(t *testing.T) {
	clk := &manualClock{now: t0, waiting: make(chan struct{}, 16)}
	q := newQueue(t, func(c *Config[string, job]) { c.Clock = clk; c.DisablePopFromBackoff = true })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- q.Run(ctx) }()
	<-clk.waiting // Run's first wait, for the backoff flush

	if err := q.Add(mk("a", 1)); err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(context.Background())
	stop() // Pop with an ended context does not block
	info, err := q.Pop(done)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	if err := q.Requeue(req(info.Item, info.Cycle), Failure{}); err != nil {
		t.Fatal(err)
	}
	if _, loc, _ := q.Get("a"); loc != InBackoff {
		t.Fatalf("a is %v, want in backoff for 1s", loc)
	}
	clk.Step(time.Second) // the flush ticks at the expiry itself: still backing off
	<-clk.waiting         // Run has flushed, then asked for its next tick
	if _, loc, _ := q.Get("a"); loc != InBackoff {
		t.Fatalf("a is %v at its expiry, want still in backoff", loc)
	}
	clk.Step(time.Second) // the next flush, after the expiry
	<-clk.waiting
	if _, loc, _ := q.Get("a"); loc != InActive {
		t.Fatalf("a is %v after the backoff flush on the injected clock, want active", loc)
	}
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

// TestQueueWakesOnlyWhenPoppable: a blocked Pop wakes when an operation
// leaves something poppable, whichever operation it is, and not when an
// item lands where Pop cannot take it (gated, or parked).
func TestQueueWakesOnlyWhenPoppable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t)
		popped := make(chan string, 1)
		go func() {
			a, err := q.Pop(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			popped <- a.Item.name
		}()
		synctest.Wait()
		steps := []struct {
			name string
			op   func() error
			want string // "" : Pop still blocked
		}{
			{"add a gated item", func() error { return q.Add(job{name: "g", gated: true}) }, ""},
			{"update it, still gated", func() error { return q.Update(job{name: "g", gated: true}, job{name: "g", gated: true, label: "x"}) }, ""},
			{"a move no gate hears", func() error { return q.Move(evMachineAdd, nil, nil, nil) }, ""},
			{"lift its gate", func() error { return q.Update(job{name: "g", gated: true, label: "x"}, job{name: "g", label: "x"}) }, "g"},
		}
		for _, s := range steps {
			if err := s.op(); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			select {
			case got := <-popped:
				if got != s.want {
					t.Fatalf("after %s: popped %q, want %q", s.name, got, s.want)
				}
			default:
				if s.want != "" {
					t.Fatalf("after %s: Pop still blocked, want %q", s.name, s.want)
				}
			}
		}
	})
}

// TestZeroValuePanics checks what the doc comments of Core and Queue
// promise of their zero values: not a hang, nor a silent success, but a
// panic.
func TestZeroValuePanics(t *testing.T) {
	tests := []struct {
		name string
		call func()
	}{
		{"Core.Add", func() { var c Core[string, job]; c.Add(mk("a", 1), t0) }},
		{"Core.Pop", func() { var c Core[string, job]; c.Pop(t0) }},
		{"Queue.Add", func() { var q Queue[string, job]; _ = q.Add(mk("a", 1)) }},
		{"Queue.Pop", func() { var q Queue[string, job]; _, _ = q.Pop(context.Background()) }},
		{"Queue.Close", func() { var q Queue[string, job]; _ = q.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s on a zero value did not panic", tc.name)
				}
			}()
			tc.call()
		})
	}
}
