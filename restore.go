package schedq

import (
	"fmt"
	"slices"
	"time"
)

// Restore queues an item that no Pop returned where a queue it copies
// holds it, with the history that queue gave it: loc and st as that
// queue's Explain, Dump or Pending read them. The item keeps st's
// Timestamp, InitialAttemptTimestamp, Attempts, UnschedulableCount,
// ConsecutiveErrors, RejectedBy, WaitingOn, Reasons and Message, so it
// stands in activeQ where its Timestamp puts it among its equals, and a
// later failure backs it off as long as the copied item's would (its
// counts go on from st's). A zero InitialAttemptTimestamp (the copied
// item never reached activeQ) is set when the item first joins activeQ,
// as any item's is. In InActive it joins activeQ; in InBackoff it
// waits with expiry st.BackoffExpiry until the backoff flush releases it
// as it would the copied item: strictly after the expiry, or, with
// pop-from-backoff, at the end of the expiry's 1-second window. It joins
// activeQ at once if that moment is not after now, or with
// Config.DisableBackoff. In InUnschedulable it is parked behind
// st.RejectedBy and st.WaitingOn, with its leftover flush counted from
// st.Timestamp, until an event or that flush moves it. A PreEnqueue check
// that rejects it parks it gated instead, where the checks run for any
// item: before activeQ and, with pop-from-backoff, before backoffQ (in
// InUnschedulable they are not asked, as for Park). Restore returns, in
// this order of precedence, an error wrapping ErrAlreadyQueued if the
// key is queued or in flight, ErrInvalidGroup for a member of a group
// (its group's entity carries the history), and an error for any other
// loc, and then changes nothing. O(log n).
func (c *Core[K, T]) Restore(item T, loc Location, st Status, now time.Time) error {
	defer c.check()
	key := c.cfg.Key(item)
	if c.keys[key] != nil {
		return fmt.Errorf("%w: restore %v: queued or in flight already", ErrAlreadyQueued, key)
	}
	if c.cfg.Group != nil && c.cfg.Group(item) != "" {
		return fmt.Errorf("%w: restore %v: a group member's history is its group's", ErrInvalidGroup, key)
	}
	if loc != InActive && loc != InBackoff && loc != InUnschedulable {
		return fmt.Errorf("schedq: restore %v: to %v: only to activeQ, backoffQ or unschedulable", key, loc)
	}
	e := c.newEntry(item, st.Timestamp)
	e.InitialAttemptTimestamp = st.InitialAttemptTimestamp
	e.Attempts, e.UnschedulableCount, e.ConsecutiveErrors = st.Attempts, st.UnschedulableCount, st.ConsecutiveErrors
	e.RejectedBy, e.WaitingOn = c.lists.of(st.RejectedBy), c.lists.of(st.WaitingOn)
	e.Reasons, e.Message = slices.Clone(st.Reasons), st.Message
	c.enqueue(e)
	switch {
	case loc == InUnschedulable:
		c.park(e, labelAdd, now)
	case loc == InBackoff && !c.cfg.DisableBackoff && c.backoffRunning(st.BackoffExpiry, now):
		c.toBackoff(e, st.BackoffExpiry, labelAdd, now)
	default:
		c.toActive(e, labelAdd, false, now)
	}
	return nil
}
