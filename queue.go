package schedq

import (
	"context"
	"sync"
	"time"
)

// Queue is the concurrent scheduling queue: Core behind one mutex, with a
// blocking Pop and a Run loop that drives Tick on the configured Clock. All
// methods are safe for concurrent use. Every callback of the caller's runs
// under the lock, inside the operation that calls it (the package
// documentation lists them), except Config.Less in Pending's sort. Make
// one with New: the zero Queue has no Config, is not usable, and panics
// on Add, Pop or Close.
type Queue[K comparable, T any] struct {
	mu      sync.Mutex
	cond    sync.Cond
	core    *Core[K, T]
	clock   Clock
	closed  bool
	waiting int           // Pops blocked in cond.Wait
	done    chan struct{} // closed by Close, so that Run returns at once
}

// New validates cfg and returns an empty queue. A mistake in cfg is an
// error wrapping ErrInvalidConfig that names the field.
func New[K comparable, T any](cfg Config[K, T]) (*Queue[K, T], error) {
	core, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	q := &Queue[K, T]{core: core, clock: core.cfg.Clock, done: make(chan struct{})}
	q.cond.L = &q.mu
	return q, nil
}

// do runs f on the core under the lock, then wakes the blocked Pops if
// anything is poppable. It returns ErrClosed once the queue is closed, and
// otherwise f's error.
func (q *Queue[K, T]) do(f func(now time.Time) error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	err := f(q.clock.Now())
	if q.waiting > 0 && q.core.Poppable() {
		q.cond.Broadcast()
	}
	return err
}

// Add queues a new item (see Core.Add).
func (q *Queue[K, T]) Add(item T) error {
	return q.do(func(now time.Time) error { q.core.Add(item, now); return nil })
}

// Update replaces an item with its new version (see Core.Update).
func (q *Queue[K, T]) Update(oldItem, newItem T) error {
	return q.do(func(now time.Time) error { q.core.Update(oldItem, newItem, now); return nil })
}

// Delete removes an item (see Core.Delete).
func (q *Queue[K, T]) Delete(key K) error {
	return q.do(func(now time.Time) error { return q.core.Delete(key, now) })
}

// Done ends an attempt that succeeded or was given up (see Core.Done).
func (q *Queue[K, T]) Done(a Attempt[K, T]) error {
	return q.do(func(now time.Time) error { return q.core.Done(a, now) })
}

// Requeue puts an item back after its attempt failed (see Core.Requeue).
func (q *Queue[K, T]) Requeue(a Attempt[K, T], f Failure) error {
	return q.do(func(now time.Time) error { return q.core.requeueAttempt(&a, &f, now) })
}

// Park queues an item no Pop returned as if an attempt had failed (see
// Core.Park).
func (q *Queue[K, T]) Park(item T, f Failure) error {
	return q.do(func(now time.Time) error { return q.core.Park(item, f, now) })
}

// DoneMembers ends a group attempt that placed some of its members (see
// Core.DoneMembers).
func (q *Queue[K, T]) DoneMembers(a Attempt[K, T], placed []int, message string, reasons ...string) error {
	return q.do(func(now time.Time) error { return q.core.DoneMembers(a, placed, message, now, reasons...) })
}

// Move is a move request (see Core.Move).
func (q *Queue[K, T]) Move(ev Event, oldObj, newObj any, match func(info *Info[T]) bool) error {
	return q.do(func(now time.Time) error { q.core.Move(ev, oldObj, newObj, match, now); return nil })
}

// Activate moves the named items to activeQ at once (see Core.Activate).
func (q *Queue[K, T]) Activate(keys ...K) error {
	return q.do(func(now time.Time) error { q.core.Activate(keys, now); return nil })
}

// Pop returns the next attempt, blocking until an item can be popped, ctx
// ends, or the queue closes; the item is then in flight. An item that can
// be popped at once is returned even if ctx has ended, so Pop with an
// ended context never blocks. After Close, Pop returns ErrClosed, even if
// items are still queued: they stay readable through Dump. If ctx ends
// first, Pop returns ctx's error.
func (q *Queue[K, T]) Pop(ctx context.Context) (a Attempt[K, T], err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed && q.core.pop(q.clock.Now(), &a) {
		return a, nil // the attempt written in place, without a copy
	}
	return q.popWait(ctx)
}

// popWait is Pop once nothing was poppable at once (or the queue is
// closed), under the lock: it waits for a change, then tries again.
func (q *Queue[K, T]) popWait(ctx context.Context) (Attempt[K, T], error) {
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if q.closed {
			return Attempt[K, T]{}, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return Attempt[K, T]{}, err
		}
		if stop == nil && ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				q.mu.Lock()
				q.cond.Broadcast()
				q.mu.Unlock()
			})
		}
		q.waiting++
		q.cond.Wait()
		q.waiting--
		if q.closed {
			continue // ErrClosed, above
		}
		var a Attempt[K, T]
		if q.core.pop(q.clock.Now(), &a) {
			return a, nil
		}
	}
}

// Close closes the queue: blocked and later Pops return ErrClosed, as do
// all changes. Readers keep working. Closing twice returns ErrClosed.
func (q *Queue[K, T]) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.closed = true
	close(q.done)
	q.cond.Broadcast()
	return nil
}

// Run drives the queue's periodic work (Core.Tick) on the configured
// Clock until ctx ends or the queue closes. It wakes at the next deadline
// (Core.NextDeadline), and at least every FlushBackoffInterval. It returns
// ctx's error, or ErrClosed as soon as Close is called.
func (q *Queue[K, T]) Run(ctx context.Context) error {
	every := q.core.cfg.FlushBackoffInterval
	for {
		var wait time.Duration
		err := q.do(func(now time.Time) error {
			q.core.Tick(now)
			wait = every
			if next, ok := q.core.NextDeadline(); ok && next.Sub(now) < wait {
				wait = max(next.Sub(now), 0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.done:
			return ErrClosed
		case <-q.clock.After(wait):
		}
	}
}

// Get returns the item with key and where it is (see Core.Get).
func (q *Queue[K, T]) Get(key K) (Info[T], Location, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Get(key)
}

// Counts returns the number of items in each place (see Core.Counts).
func (q *Queue[K, T]) Counts() Counts {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Counts()
}

// Stats returns the counts and the levels behind the gauges (see
// Core.Stats).
func (q *Queue[K, T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Stats()
}

// Explain says where the item with key is and why (see Core.Explain).
func (q *Queue[K, T]) Explain(key K) (Explanation[K], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Explain(key, q.clock.Now())
}

// Dump explains every item (see Core.Dump). It holds the lock for O(n)
// and sorts outside it.
func (q *Queue[K, T]) Dump() Dump[K] {
	q.mu.Lock()
	d := q.core.collect(q.clock.Now())
	q.mu.Unlock()
	d.finish() // sorting and summing need no lock
	return d
}

// Nominate nominates the item with key to target, or clears its
// nomination if target is empty (see Core.Nominate). Like every change,
// it returns ErrClosed once the queue is closed.
func (q *Queue[K, T]) Nominate(key K, target string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	return q.core.Nominate(key, target)
}

// Nomination returns the target the item with key is nominated to (see
// Core.Nomination).
func (q *Queue[K, T]) Nomination(key K) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Nomination(key)
}

// Nominated returns the items nominated to target (see Core.Nominated).
func (q *Queue[K, T]) Nominated(target string) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Nominated(target)
}

// NominatedTargets returns the targets with nominated items, sorted (see
// Core.NominatedTargets).
func (q *Queue[K, T]) NominatedTargets() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.NominatedTargets()
}
