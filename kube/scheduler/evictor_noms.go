package scheduler

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// nomWrites orders the writes of one pod's status.nominatedNodeName that
// the APIEvictor's goroutines make: the nomination decided last (claimed
// last, by the scheduling loop, which decides in order) is the one left
// in the pod's status, whichever goroutine reaches the API server first.
// A pod is nominated by its own preemption and cleared by a later one of
// higher priority, each in a goroutine of its own: without this, a slow
// nominating patch could land after the clear and leave a stale
// nomination.
//
// Writes of one pod run one at a time; a write superseded by a later
// claim before its turn comes is skipped. The zero value is ready. Safe
// for concurrent use: mu is a leaf lock, never held during a write; a
// pod's turn is taken before mu, never under it. O(1) per claim and per
// write besides the write itself; an entry lives while claims on it are
// outstanding.
type nomWrites struct {
	mu   sync.Mutex
	pods map[types.UID]*nomTurn
}

// nomTurn is one pod's entry: turn (capacity 1) is held during a write;
// gen counts the claims, refs the claims not yet written or skipped.
type nomTurn struct {
	turn chan struct{}
	gen  uint64
	refs int
}

// nomClaim is the right to write a pod's nomination as decided at claim
// time.
type nomClaim struct {
	uid types.UID
	t   *nomTurn
	gen uint64
}

// claim records a new decision about uid's nomination; the claims made
// before it are superseded. Called in the order of the decisions.
func (w *nomWrites) claim(uid types.UID) nomClaim {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[types.UID]*nomTurn{}
	}
	t := w.pods[uid]
	if t == nil {
		t = &nomTurn{turn: make(chan struct{}, 1)}
		w.pods[uid] = t
	}
	t.gen++
	t.refs++
	return nomClaim{uid: uid, t: t, gen: t.gen}
}

// write runs f, the write of c's decision, once no other write of the pod
// is under way, unless a later claim superseded c meanwhile (then f is
// not run: the later decision is written instead). It returns f's error,
// or ctx's if ctx ends while it waits for its turn.
func (w *nomWrites) write(ctx context.Context, c nomClaim, f func() error) error {
	defer w.release(c)
	select {
	case c.t.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.t.turn }()
	w.mu.Lock()
	current := c.t.gen == c.gen
	w.mu.Unlock()
	if !current {
		return nil
	}
	return f()
}

// release ends c, and the pod's entry with its last claim.
func (w *nomWrites) release(c nomClaim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c.t.refs--
	if c.t.refs == 0 && w.pods[c.uid] == c.t {
		delete(w.pods, c.uid)
	}
}
