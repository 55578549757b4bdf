package schedq

import (
	"math"
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
	// Usage decays in steps of a 4096th of the half-life.
	step := math.Floor(float64(now.Sub(f.ref)) / (float64(f.cfg.HalfLife) / 4096))
	s := math.Exp2(step / 4096)
	f.usage[f.cfg.Tenant(it.Item)] += f.cfg.cost(it.Item) * s
}
