package schedq

import (
	"fmt"
	"slices"
)

// nominator records which item is nominated to which target: the place a
// caller has made room on for the item and expects it to take once the
// room is free. Each key has at most one target; each target lists its
// keys in the order they were nominated there.
//
// A nomination lives as long as its item is known to the queue: Delete
// and Done drop it, and the invariant checker verifies that every
// nominated key is queued or in flight.
type nominator[K comparable] struct {
	of map[K]string // key -> target
	at map[string][]K
}

// set nominates key to target, moving it from its previous target. O(m)
// for m items nominated to the previous target.
func (n *nominator[K]) set(key K, target string) {
	if old, ok := n.of[key]; ok {
		if old == target {
			return
		}
		n.drop(key)
	}
	if n.of == nil {
		n.of, n.at = map[K]string{}, map[string][]K{}
	}
	n.of[key] = target
	n.at[target] = append(n.at[target], key)
}

// drop forgets key's nomination, if any. O(m) for m items nominated to
// its target; O(1) when the key has none.
func (n *nominator[K]) drop(key K) {
	target, ok := n.of[key]
	if !ok {
		return
	}
	delete(n.of, key)
	keys := n.at[target]
	if i := slices.Index(keys, key); i >= 0 {
		keys = slices.Delete(keys, i, i+1)
	}
	if len(keys) == 0 {
		delete(n.at, target)
		return
	}
	n.at[target] = keys
}

// Nominate records that the item with key is nominated to target: a
// place made ready for it (room freed for it) that it should take when
// it is next tried, and that others should count as taken meanwhile.
// A new nomination replaces the item's previous one; an empty target
// clears it. The nomination lasts until cleared, replaced, or the item
// leaves the queue (Delete, or Done of its attempt); requeues and updates
// keep it. A nomination to a target returns an error wrapping ErrNotFound
// if the key is neither queued nor in flight, or was deleted during its
// attempt; clearing one (an empty target) never fails, whatever the key.
// O(m) for m items nominated to the item's previous target.
func (c *Core[K, T]) Nominate(key K, target string) error {
	defer c.check()
	if !c.nominable(key) {
		if target == "" {
			c.nom.drop(key)
			return nil
		}
		return fmt.Errorf("%w: nominate %v", ErrNotFound, key)
	}
	if target == "" {
		c.nom.drop(key)
		return nil
	}
	c.nom.set(key, target)
	return nil
}

// nominable reports whether key may hold a nomination: it is queued, or
// in flight and not deleted.
func (c *Core[K, T]) nominable(key K) bool {
	if m := c.keys[key]; m != nil && m.kind == kindMember {
		return !m.is(flagDeleted) // a member in flight is in the map too
	}
	if c.queuedEntry(key) != nil {
		return true
	}
	f := c.flightEntry(key)
	return f != nil && !f.is(flagDeleted)
}

// Nomination returns the target the item with key is nominated to. O(1).
func (c *Core[K, T]) Nomination(key K) (string, bool) {
	t, ok := c.nom.of[key]
	return t, ok
}

// Nominated returns the items nominated to target, in the order they were
// nominated there, each in its latest version (an update during an
// attempt included). It returns nil, without allocating, when there are
// none. O(m) for m items nominated there.
func (c *Core[K, T]) Nominated(target string) []T {
	keys := c.nom.at[target]
	if len(keys) == 0 {
		return nil
	}
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		if e := c.keys[k]; e != nil {
			out = append(out, e.Item)
		}
	}
	return out
}

// NominatedTargets returns the targets with at least one nominated item,
// sorted, so that a caller can visit only those. O(t log t) for t such
// targets; nil, without allocating, when there are none.
func (c *Core[K, T]) NominatedTargets() []string {
	if len(c.nom.at) == 0 {
		return nil
	}
	out := make([]string, 0, len(c.nom.at))
	for t := range c.nom.at {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// checkNominations verifies that the two indexes of the nominator agree
// and that every nominated key is known to the queue and not deleted.
func (c *Core[K, T]) checkNominations(bad func(string, ...any)) {
	listed := 0
	for target, keys := range c.nom.at {
		if len(keys) == 0 {
			bad("nominator: target %q listed with no items", target)
		}
		for i, k := range keys {
			listed++
			if t, ok := c.nom.of[k]; !ok || t != target {
				bad("nominator: key %v listed under %q but nominated to %q", k, target, t)
			}
			if slices.Contains(keys[:i], k) {
				bad("nominator: key %v listed twice under %q", k, target)
			}
		}
	}
	if listed != len(c.nom.of) {
		bad("nominator: %d keys nominated, %d listed", len(c.nom.of), listed)
	}
	for k := range c.nom.of {
		if !c.nominable(k) {
			bad("nominator: key %v nominated but neither queued nor in flight", k)
		}
	}
}
