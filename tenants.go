package schedq

import (
	"slices"
	"strings"
	"time"
)

// TenantStats is what the queue knows of one tenant, under
// Config.Fairness.
type TenantStats struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	// Active is how many of its items wait in activeQ.
	Active int `json:"active"`
	// Usage is its pops' charges, decayed to now.
	Usage float64 `json:"usage"`
	// Pops counts its pops since the queue last forgot the tenant (see
	// Fairness.Weight); the Recorder hears of each pop (Popped).
	Pops int64 `json:"pops"`
}

// Tenants returns the tenants the queue remembers, by name; nil without
// fairness. O(t log t) for t tenants.
func (c *Core[K, T]) Tenants(now time.Time) []TenantStats {
	f := c.fair
	if f == nil {
		return nil
	}
	out := make([]TenantStats, 0, len(f.tenants))
	for _, t := range f.tenants {
		out = append(out, TenantStats{Name: t.name, Weight: t.weight, Active: t.live, Usage: f.usageAt(t, now.UnixNano()), Pops: t.pops})
	}
	slices.SortFunc(out, func(a, b TenantStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Tenants returns the tenants the queue remembers (see Core.Tenants).
func (q *Queue[K, T]) Tenants() []TenantStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.core.Tenants(q.clock.Now())
}
