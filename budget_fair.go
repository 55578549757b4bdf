package schedq

import "container/heap"

// fairOrder reorders parked entries, already in the queue's own order
// (popOrder), into the order fairness would pop them were they all in
// activeQ now, and nothing else: by priority level (unless
// BeforePriority), then the tenant whose usage over weight is lowest,
// each item taken adding its charge to its tenant, ties by the queue's
// order. A wake budget offers its room in this order (wakeWithin), so
// that room that comes in pieces goes to the tenants that used the queue
// least, not to whichever tenant's items were parked first. It reads the
// tenants' usage and creates none. O(k log t) for k entries of t
// tenants, besides popOrder's sort.
func (c *Core[K, T]) fairOrder(es []*entry[K, T], nowNs int64) {
	keys := map[string]*fairCursor{}
	scale := 1.0 // a charge at now, as Pop would add it (see decay)
	if c.fair.decay.started {
		scale = c.fair.decay.scale(nowNs)
	}
	if c.fair.cfg.BeforePriority {
		c.fairLevel(es, keys, scale)
		return
	}
	for lo := 0; lo < len(es); {
		hi := lo + 1
		for hi < len(es) && es[hi].prio == es[lo].prio {
			hi++
		}
		c.fairLevel(es[lo:hi], keys, scale)
		lo = hi
	}
}

// fairCursor is a tenant's state in fairOrder: its usage, stored as the
// queue stores it (see decay) with the charges of the items taken so far
// added as Pop adds them, so that keys compare as Pop's would; and its
// items of the level being ordered (their indexes in it, in order).
type fairCursor struct {
	usage, weight float64
	items         []int
	next          int
}

func (cu *fairCursor) key() float64 { return cu.usage / cu.weight }

// fairLevel orders es, one priority level in the queue's order, as
// fairOrder says, with charges of scale per unit of cost; keys carries
// the tenants' usage from level to level. O(k log t).
func (c *Core[K, T]) fairLevel(es []*entry[K, T], keys map[string]*fairCursor, scale float64) {
	f := c.fair
	var live fairCursors
	for i, e := range es {
		name := f.cfg.Tenant(e.Item)
		cu := keys[name]
		if cu == nil {
			cu = &fairCursor{weight: f.cfg.weight(name)}
			if t := f.tenants[name]; t != nil {
				cu.usage, cu.weight = t.usage, t.weight
			}
			keys[name] = cu
		}
		if cu.next == len(cu.items) {
			cu.items, cu.next = cu.items[:0], 0
			live = append(live, cu)
		}
		cu.items = append(cu.items, i)
	}
	heap.Init(&live)
	order := make([]*entry[K, T], 0, len(es))
	for live.Len() > 0 {
		cu := live[0]
		e := es[cu.items[cu.next]]
		cu.next++
		cu.usage += f.cfg.cost(e.Item) * scale
		if cu.next == len(cu.items) {
			heap.Pop(&live)
		} else {
			heap.Fix(&live, 0)
		}
		order = append(order, e)
	}
	copy(es, order)
}

// fairCursors is a heap of the tenants with items left in a level: the
// lowest key first, then the one whose next item comes first in the
// queue's order.
type fairCursors []*fairCursor

func (h fairCursors) Len() int { return len(h) }
func (h fairCursors) Less(i, j int) bool {
	a, b := h[i], h[j]
	if ka, kb := a.key(), b.key(); ka != kb {
		return ka < kb
	}
	return a.items[a.next] < b.items[b.next]
}
func (h fairCursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fairCursors) Push(x any)   { *h = append(*h, x.(*fairCursor)) }
func (h *fairCursors) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
