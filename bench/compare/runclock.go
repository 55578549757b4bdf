package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/schedq/schedq"
)

// runClock is a manual clock that lets a benchmark drive Queue.Run in step:
// Step moves the time and, if Run's timer is due, fires it and returns
// once Run has ticked and is waiting again. So the flushes run inside the
// real Queue, in the benchmark's virtual time, with nothing left running
// between steps.
type runClock struct {
	mu    sync.Mutex
	now   time.Time
	timer chan time.Time
	at    time.Time
	armed chan struct{}
}

func newRunClock() *runClock {
	return &runClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), armed: make(chan struct{})}
}

// Now implements schedq.Clock.
func (c *runClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After implements schedq.Clock; Run calls it once per tick.
func (c *runClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.timer, c.at = ch, c.now.Add(d)
	c.mu.Unlock()
	c.armed <- struct{}{}
	return ch
}

// Step advances the clock by d and lets Run tick if its timer is due.
func (c *runClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var fire chan time.Time
	if c.timer != nil && !c.now.Before(c.at) {
		fire, c.timer = c.timer, nil
	}
	now := c.now
	c.mu.Unlock()
	if fire != nil {
		fire <- now
		<-c.armed
	}
}

// runQueue starts q.Run on clk and waits for its first tick; the queue is
// closed when the benchmark ends.
func runQueue[K comparable, T any](b testing.TB, q *schedq.Queue[K, T], clk *runClock) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx)
	}()
	<-clk.armed
	b.Cleanup(func() {
		cancel()
		<-done
	})
}
