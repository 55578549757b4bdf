package schedq

import (
	"maps"
	"math"
	"slices"
	"time"
)

// mFair is fairness as the model states it: a usage per tenant, charged
// at each pop with the cost grown by the decay's scale, and the pop order
// that compares tenants by usage over weight. The fuzz test's priorities
// are distinct, so that with priority first fairness never reorders, and
// with BeforePriority the usage decides and the order breaks its ties.
type mFair struct {
	cfg   Fairness[job]
	usage map[string]float64
	ref   time.Time
	begun bool
}

func newMFair(cfg *Fairness[job]) *mFair {
	if cfg == nil {
		return nil
	}
	f := *cfg
	if f.HalfLife == 0 {
		f.HalfLife = defaultHalfLife
	}
	return &mFair{cfg: f, usage: map[string]float64{}}
}

// fairTestConfig is the fairness of the fuzz test: tenants are labels,
// "web" weighs 2 and "db" a half; an hour's half-life, so that a run never
// reaches the rescale, which the model does not do.
func fairTestConfig(beforePriority bool) *Fairness[job] {
	return &Fairness[job]{
		Tenant: func(p job) string { return p.label },
		Weight: func(t string) float64 {
			switch t {
			case "web":
				return 2
			case "db":
				return 0.5
			}
			return 0
		},
		HalfLife:       time.Hour,
		BeforePriority: beforePriority,
	}
}

func (f *mFair) norm(it *mItem) float64 {
	w := f.cfg.weight(f.cfg.Tenant(it.Item))
	return f.usage[f.cfg.Tenant(it.Item)] / w
}

// before is the pop order of activeQ under fairness.
func (m *model) before(a, b *mItem) bool {
	f := m.fair
	if f == nil {
		return m.cfg.Less(&a.Info, &b.Info)
	}
	if !f.cfg.BeforePriority && a.Item.prio != b.Item.prio {
		return a.Item.prio > b.Item.prio
	}
	if na, nb := f.norm(a), f.norm(b); na != nb {
		return na < nb
	}
	return m.cfg.Less(&a.Info, &b.Info)
}

// charge charges the tenant of a popped item.
func (m *model) charge(it *mItem, now time.Time) {
	f := m.fair
	if f == nil {
		return
	}
	if !f.begun {
		f.begun, f.ref = true, now
	}
	f.usage[f.cfg.Tenant(it.Item)] += f.cfg.cost(it.Item) * f.scale(now)
}

// scale is what a charge at now is multiplied by: usage decays in steps
// of a 4096th of the half-life. 1 before the first charge.
func (f *mFair) scale(now time.Time) float64 {
	if !f.begun {
		return 1
	}
	step := math.Floor(float64(now.Sub(f.ref)) / (float64(f.cfg.HalfLife) / 4096))
	return math.Exp2(step / 4096)
}

// fairWakeOrder orders an event's candidates as the model states a
// budget's order under fairness: the pop order were they all in activeQ
// now and nothing else, each one taken charged to its tenant as a pop at
// now would be.
func (m *model) fairWakeOrder(ready []*mItem) []*mItem {
	f := m.fair
	s := f.scale(m.now)
	usage := maps.Clone(f.usage)
	norm := func(it *mItem) float64 {
		return usage[f.cfg.Tenant(it.Item)] / f.cfg.weight(f.cfg.Tenant(it.Item))
	}
	left := slices.Clone(ready)
	out := make([]*mItem, 0, len(ready))
	for len(left) > 0 {
		best := 0
		for i, it := range left[1:] {
			b := left[best]
			switch {
			case !f.cfg.BeforePriority && it.Item.prio != b.Item.prio:
				if it.Item.prio > b.Item.prio {
					best = i + 1
				}
			case norm(it) != norm(b):
				if norm(it) < norm(b) {
					best = i + 1
				}
			case m.cfg.Less(&it.Info, &b.Info):
				best = i + 1
			}
		}
		it := left[best]
		out = append(out, it)
		usage[f.cfg.Tenant(it.Item)] += f.cfg.cost(it.Item) * s
		left = slices.Delete(left, best, best+1)
	}
	return out
}
