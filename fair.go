package schedq

import (
	"fmt"
	"math"
	"time"
)

// defaultHalfLife is the default Fairness.HalfLife.
const defaultHalfLife = time.Minute

// Fairness orders activeQ fairly between tenants (Config.Fairness): the
// caller says which tenant each item belongs to, and the queue charges a
// tenant for every item of it that it pops. Within a priority level, the
// next item comes from the tenant with the lowest weighted usage, usage
// being the charges decayed over HalfLife; tenants with equal usage are
// served in order of arrival. Usage counts in virtual time: the time a
// pop is charged at is the now passed to Pop.
//
// Fairness orders activeQ only: the pops from backoffQ that happen when
// activeQ is empty (pop-from-backoff) keep their own order, but are
// charged to their tenant like any pop.
type Fairness[T any] struct {
	// Tenant returns the tenant an item belongs to. Required. It runs
	// under the lock, each time the item enters activeQ and at pops from
	// backoffQ, and must be pure and fast.
	Tenant func(item T) string
	// Weight returns a tenant's weight, read once when the queue first
	// sees the tenant (or sees it again after forgetting it: a tenant is
	// forgotten when it has nothing in activeQ and its usage has decayed
	// to almost nothing). A tenant of weight 2 gets twice the pops of a
	// tenant of weight 1 while both wait. Nil, or a weight that is not a
	// positive finite number: 1.
	Weight func(tenant string) float64
	// Cost is what popping an item charges its tenant. Nil: 1 per pop, so
	// usage counts pops. A cost that is not a finite non-negative number
	// counts as 1. The caller could charge, say, the resources the item
	// asks for.
	Cost func(item T) float64
	// HalfLife is how fast usage fades: a charge counts half as much
	// after HalfLife. Default 1m.
	HalfLife time.Duration
	// BeforePriority compares tenants before priorities: the tenant with
	// the lowest usage pops next whatever the priority of the other
	// tenants' items, and priority orders only the items of one tenant.
	// Off (the default), priority wins and fairness orders each priority
	// level. With Config.Less, which has no priority levels, it must be set.
	BeforePriority bool
}

// validate checks f (of a Config with a caller's Less if custom) and
// returns a copy with the defaults filled in.
func (f Fairness[T]) validate(custom bool) (Fairness[T], error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Fairness.%s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if f.Tenant == nil {
		return f, bad("Tenant", "must not be nil")
	}
	if f.HalfLife < 0 {
		return f, bad("HalfLife", "must not be negative, got %v", f.HalfLife)
	}
	if f.HalfLife == 0 {
		f.HalfLife = defaultHalfLife
	}
	if custom && !f.BeforePriority {
		return f, bad("BeforePriority", "must be set with Config.Less, whose order has no priority levels for fairness to order")
	}
	return f, nil
}

// weight returns tenant's weight: Weight's answer if it is a positive
// finite number, else 1.
func (f *Fairness[T]) weight(tenant string) float64 {
	if f.Weight == nil {
		return 1
	}
	if w := f.Weight(tenant); w > 0 && !math.IsInf(w, 1) {
		return w
	}
	return 1
}

// cost returns what popping item charges: Cost's answer if it is a finite
// non-negative number, else 1.
func (f *Fairness[T]) cost(item T) float64 {
	if f.Cost == nil {
		return 1
	}
	if c := f.Cost(item); c >= 0 && !math.IsInf(c, 1) {
		return c
	}
	return 1
}

// decay keeps usage decaying without touching every tenant as time
// passes: a charge made at t is stored multiplied by 2^((t-ref)/halfLife),
// so that all stored usages decay together and their order never changes
// with time alone. The stored value of a tenant is its usage at ref
// "grown" to now; dividing by the current scale gives its usage at now.
// When the scale grows large, every stored usage is divided by it and ref
// moves to now (rescale), which keeps the numbers finite.
type decay struct {
	halfLife float64 // ns
	ref      int64   // Unix ns; set by the first charge
	started  bool
}

// decaySteps is how many steps a half-life is cut into: usage decays in
// steps of HalfLife/4096, so that the scale need not be computed afresh at
// every pop.
const decaySteps = 4096

// scale returns 2^((now-ref)/halfLife), in steps of halfLife/decaySteps,
// anchoring ref at the first call.
func (d *decay) scale(now int64) float64 {
	if !d.started {
		d.started, d.ref = true, now
	}
	return math.Exp2(float64(d.step(now)) / decaySteps)
}

// step returns the number of whole steps from ref to now.
func (d *decay) step(now int64) int64 {
	return int64(math.Floor(float64(now-d.ref) / (d.halfLife / decaySteps)))
}

// maxScaleExp is the exponent past which the stored usages are rescaled:
// 2^64 keeps far from overflow, and rescaling then is rare (once every 64
// half-lives).
const maxScaleExp = 64

// retenanted reports whether e, in activeQ, must move because the tenant
// of its item changed (an Update), so that the caller fixes its place.
func (c *Core[K, T]) retenanted(e *entry[K, T]) bool {
	if c.fair == nil {
		return false
	}
	t := e.fairOf().t
	return t == nil || t.name != c.fair.cfg.Tenant(e.Item)
}

// popped does the bookkeeping of a pop at now: the pop rate that Explain
// estimates from, and the tenant's charge under fairness. O(log tenants).
func (c *Core[K, T]) popped(e *entry[K, T], now time.Time) {
	c.rate.add(now.UnixNano())
	if c.fair != nil {
		c.fair.charge(e, now.UnixNano())
	}
}

// validateFairness checks c.Fairness, if set, and fills in a copy with
// its defaults, so the caller's Fairness is never written to.
func (c *Config[K, T]) validateFairness() error {
	if c.Fairness == nil {
		return nil
	}
	f, err := c.Fairness.validate(c.Priority == nil)
	if err != nil {
		return err
	}
	c.Fairness = &f
	return nil
}

// customLess returns the entry order of a caller's Less (without the
// entry-order tie-break, which fairness keeps by stamp), or nil with the
// default order.
func customLess[K comparable, T any](cfg Config[K, T]) func(a, b *entry[K, T]) bool {
	if cfg.Priority != nil {
		return nil
	}
	return func(a, b *entry[K, T]) bool { return cfg.Less(&a.Info, &b.Info) }
}
