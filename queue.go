package schedq

import (
	"context"
	"sync"
	"time"
)

// Queue is the concurrent scheduling queue: Core behind one mutex, with a
// blocking Pop and a Run loop for the periodic flushes. All methods are safe
// for concurrent use. The hints, PreEnqueue checks, Key and Less of its
// Config run under the lock; nothing else of the caller's does.
type Queue[K comparable, T any] struct {
	mu     sync.Mutex
	cond   sync.Cond
	core   *Core[K, T]
	clock  Clock
	closed bool
	done   chan struct{} // closed by Close, so that Run returns at once

	flushBackoff, flushUnschedulable time.Duration
}

// New validates cfg and returns an empty queue.
func New[K comparable, T any](cfg Config[K, T]) (*Queue[K, T], error) {
	core, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	q := &Queue[K, T]{
		core:               core,
		clock:              core.cfg.Clock,
		flushBackoff:       core.cfg.FlushBackoffInterval,
		flushUnschedulable: core.cfg.FlushUnschedulableInterval,
		done:               make(chan struct{}),
	}
	q.cond.L = &q.mu
	return q, nil
}

// do runs f on the core under the lock, wakes Pop if f made anything
// poppable, and returns ErrClosed once the queue is closed.
func (q *Queue[K, T]) do(f func(now time.Time) bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if f(q.clock.Now()) {
		q.cond.Broadcast()
	}
	return nil
}

// Add queues a new item (see Core.Add).
func (q *Queue[K, T]) Add(item T) error {
	return q.do(func(now time.Time) bool { return q.core.Add(item, now) })
}

// Update replaces an item with its new version (see Core.Update).
func (q *Queue[K, T]) Update(oldItem, newItem T) error {
	return q.do(func(now time.Time) bool { return q.core.Update(oldItem, newItem, now) })
}

// Delete removes an item (see Core.Delete).
func (q *Queue[K, T]) Delete(key K) error {
	var err error
	if cerr := q.do(func(now time.Time) bool { err = q.core.Delete(key, now); return false }); cerr != nil {
		return cerr
	}
	return err
}

// Done ends a successful attempt (see Core.Done).
func (q *Queue[K, T]) Done(key K, cycle int64) error {
	var err error
	if cerr := q.do(func(time.Time) bool { err = q.core.Done(key, cycle); return false }); cerr != nil {
		return cerr
	}
	return err
}

// AddUnschedulableIfNotPresent requeues an item after a failed attempt (see
// Core.AddUnschedulableIfNotPresent).
func (q *Queue[K, T]) AddUnschedulableIfNotPresent(item T, cycle int64, f Failure) error {
	var err error
	if cerr := q.do(func(now time.Time) bool {
		var poppable bool
		poppable, err = q.core.AddUnschedulableIfNotPresent(item, cycle, f, now)
		return poppable
	}); cerr != nil {
		return cerr
	}
	return err
}

// MoveAllToActiveOrBackoffQueue is a move request (see
// Core.MoveAllToActiveOrBackoffQueue).
func (q *Queue[K, T]) MoveAllToActiveOrBackoffQueue(ev Event, oldObj, newObj any, preCheck func(item T) bool) error {
	return q.do(func(now time.Time) bool {
		return q.core.MoveAllToActiveOrBackoffQueue(ev, oldObj, newObj, preCheck, now)
	})
}

// MoveMatching is the targeted move request (see Core.MoveMatching).
func (q *Queue[K, T]) MoveMatching(ev Event, oldObj, newObj any, match func(info *Info[T]) bool) error {
	return q.do(func(now time.Time) bool { return q.core.MoveMatching(ev, oldObj, newObj, match, now) })
}

// Activate moves the named items to activeQ at once (see Core.Activate).
func (q *Queue[K, T]) Activate(keys ...K) error {
	return q.do(func(now time.Time) bool { return q.core.Activate(keys, now) })
}

// FlushBackoffCompleted runs the backoff flush now (see
// Core.FlushBackoffCompleted). Run calls it every FlushBackoffInterval.
func (q *Queue[K, T]) FlushBackoffCompleted() error {
	return q.do(q.core.FlushBackoffCompleted)
}

// FlushUnschedulableLeftover runs the leftover flush now (see
// Core.FlushUnschedulableLeftover). Run calls it every
// FlushUnschedulableInterval.
func (q *Queue[K, T]) FlushUnschedulableLeftover() error {
	return q.do(q.core.FlushUnschedulableLeftover)
}

// Pop blocks until an item can be popped, ctx ends, or the queue closes,
// and returns the item's Info; the item is then in flight. After Close, Pop
// returns ErrClosed at once, even if items are still queued: they stay
// readable through Pending. If ctx ends first, Pop returns ctx's error.
func (q *Queue[K, T]) Pop(ctx context.Context) (Info[T], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if q.closed {
			return Info[T]{}, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return Info[T]{}, err
		}
		if info, ok := q.core.Pop(q.clock.Now()); ok {
			return info, nil
		}
		if stop == nil && ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				q.mu.Lock()
				q.cond.Broadcast()
				q.mu.Unlock()
			})
		}
		q.cond.Wait()
	}
}

// TryPop pops an item if one is poppable now, without blocking.
func (q *Queue[K, T]) TryPop() (Info[T], bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Info[T]{}, false, ErrClosed
	}
	info, ok := q.core.Pop(q.clock.Now())
	return info, ok, nil
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

// Run runs the periodic flushes until ctx ends or the queue closes: the
// backoff flush every FlushBackoffInterval and the leftover flush every
// FlushUnschedulableInterval, on the configured Clock. It returns ctx's
// error, or ErrClosed as soon as Close is called.
func (q *Queue[K, T]) Run(ctx context.Context) error {
	backoffTick := q.clock.After(q.flushBackoff)
	leftoverTick := q.clock.After(q.flushUnschedulable)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.done:
			return ErrClosed
		case <-backoffTick:
			if err := q.FlushBackoffCompleted(); err != nil {
				return err
			}
			backoffTick = q.clock.After(q.flushBackoff)
		case <-leftoverTick:
			if err := q.FlushUnschedulableLeftover(); err != nil {
				return err
			}
			leftoverTick = q.clock.After(q.flushUnschedulable)
		}
	}
}

// Get returns the item with key and where it is (see Core.Get).
func (q *Queue[K, T]) Get(key K) (Info[T], Location, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Get(key)
}

// Counts returns the number of items in each place.
func (q *Queue[K, T]) Counts() Counts {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Counts()
}

// Pending lists every queued item (see Core.Pending).
func (q *Queue[K, T]) Pending() []Queued[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Pending()
}

// InFlight lists the items in flight, oldest first.
func (q *Queue[K, T]) InFlight() []Info[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.InFlight()
}

// UnschedulableByPlugin returns the items held back per plugin (see
// Core.UnschedulableByPlugin).
func (q *Queue[K, T]) UnschedulableByPlugin() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.UnschedulableByPlugin()
}

// InFlightEvents returns the kept in-flight events per label.
func (q *Queue[K, T]) InFlightEvents() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.InFlightEvents()
}

// SchedulingCycle returns the number of pops so far.
func (q *Queue[K, T]) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.SchedulingCycle()
}

// Explain says where the item with key is and why (see Core.Explain).
func (q *Queue[K, T]) Explain(key K) (Explanation, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Explain(key, q.clock.Now())
}

// Dump explains every item (see Core.Dump).
func (q *Queue[K, T]) Dump() Dump {
	q.mu.Lock()
	d := q.core.collect(q.clock.Now())
	q.mu.Unlock()
	d.finish() // sorting and summing need no lock
	return d
}
