package schedq

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// lj is a job of a tenant (its label).
func lj(name string, prio int32, tenant string) job {
	return job{name: name, prio: prio, label: tenant}
}

// fairBy returns a harness mutation turning fairness on between labels,
// with the cached default order, and weights from w (missing: 1).
func fairBy(w map[string]float64, tune ...func(*Fairness[job])) func(*Config[string, job]) {
	return func(c *Config[string, job]) {
		c.Less, c.Priority = nil, jobPrio
		f := &Fairness[job]{Tenant: func(p job) string { return p.label }, HalfLife: time.Minute}
		if w != nil {
			f.Weight = func(t string) float64 { return w[t] }
		}
		for _, fn := range tune {
			fn(f)
		}
		c.Fairness = f
	}
}

func TestFairOrder(t *testing.T) {
	flood := []job{lj("a1", 0, "a"), lj("a2", 0, "a"), lj("a3", 0, "a"), lj("a4", 0, "a"), lj("a5", 0, "a")}
	small := []job{lj("b1", 0, "b"), lj("b2", 0, "b")}
	cases := []struct {
		name   string
		mutate []func(*Config[string, job])
		items  []job
		want   []string
	}{
		{"off: arrival order", nil, append(flood[:5:5], small...),
			[]string{"a1", "a2", "a3", "a4", "a5", "b1", "b2"}},
		{"equal weights alternate, ties by arrival", []func(*Config[string, job]){fairBy(nil)}, append(flood[:5:5], small...),
			[]string{"a1", "b1", "a2", "b2", "a3", "a4", "a5"}},
		{"weight 2 gets twice the pops", []func(*Config[string, job]){fairBy(map[string]float64{"a": 2})}, append(flood[:5:5], small...),
			[]string{"a1", "b1", "a2", "a3", "b2", "a4", "a5"}},
		{"bad weights count as 1", []func(*Config[string, job]){fairBy(map[string]float64{"a": -1, "b": 0})}, append(flood[:5:5], small...),
			[]string{"a1", "b1", "a2", "b2", "a3", "a4", "a5"}},
		{"priority wins over usage", []func(*Config[string, job]){fairBy(nil)},
			[]job{lj("a1", 5, "a"), lj("a2", 5, "a"), lj("b1", 0, "b"), lj("b2", 5, "b")},
			[]string{"a1", "b2", "a2", "b1"}},
		{"BeforePriority: usage wins", []func(*Config[string, job]){fairBy(nil, func(f *Fairness[job]) { f.BeforePriority = true })},
			[]job{lj("a1", 5, "a"), lj("a2", 5, "a"), lj("b1", 0, "b"), lj("b2", 5, "b")},
			[]string{"a1", "b2", "a2", "b1"}},
		{"BeforePriority: low priority of a light tenant first", []func(*Config[string, job]){fairBy(nil, func(f *Fairness[job]) { f.BeforePriority = true })},
			[]job{lj("a1", 5, "a"), lj("a2", 9, "a"), lj("b1", 0, "b")},
			[]string{"a2", "b1", "a1"}},
		{"cost", []func(*Config[string, job]){fairBy(nil, func(f *Fairness[job]) {
			f.Cost = func(p job) float64 {
				if p.label == "a" {
					return 3
				}
				return 1
			}
		})}, append(flood[:3:3], small...),
			[]string{"a1", "b1", "b2", "a2", "a3"}},
		{"with a caller's Less", []func(*Config[string, job]){func(c *Config[string, job]) {
			c.Fairness = &Fairness[job]{Tenant: func(p job) string { return p.label }, BeforePriority: true}
		}}, append(flood[:3:3], small...),
			[]string{"a1", "b1", "a2", "b2", "a3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.mutate...)
			h.add(tc.items...)
			h.wantOrder(tc.want...)
		})
	}
}

// TestFairDecay: usage halves per half-life, so old pops weigh less than
// recent ones.
func TestFairDecay(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"), lj("a3", 0, "a"), lj("a4", 0, "a"))
	h.drain() // a: 4 pops at t0
	h.step(time.Minute)
	h.add(lj("b1", 0, "b"), lj("b2", 0, "b"), lj("b3", 0, "b"))
	h.drain() // b: 3 pops at t0+1m; a's 4 count 2 by now
	h.add(lj("b4", 0, "b"), lj("a5", 0, "a"))
	h.wantOrder("a5", "b4")
	f := h.c.fair
	if got := f.usageAt(f.tenants["a"], h.now.UnixNano()); got != 3 {
		t.Errorf("usage of a one half-life after 4 pops, then 1: %v, want 3", got)
	}
	h.step(2 * time.Minute)
	if got := f.usageAt(f.tenants["b"], h.now.UnixNano()); got != 1 {
		t.Errorf("usage of b two half-lives after 4 pops: %v, want 1", got)
	}
}

// TestFairRescale: far in virtual time the stored usages are rescaled;
// they stay finite and the order stays right.
func TestFairRescale(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	for i := range 200 {
		h.add(lj(fmt.Sprint("a", i), 0, "a"), lj(fmt.Sprint("b", i), 0, "b"))
		first := h.drain()
		if len(first) != 2 {
			t.Fatalf("step %d: popped %v", i, first)
		}
		h.step(time.Minute) // 200 half-lives in all: rescaled thrice
	}
	f := h.c.fair
	for name, tn := range f.tenants {
		if u := f.usageAt(tn, h.now.UnixNano()); u < 1 || u > 2.1 {
			t.Errorf("tenant %s: usage %v, want between 1 and 2 (one pop a half-life)", name, u)
		}
	}
	if f.decay.ref == t0.UnixNano() {
		t.Error("never rescaled")
	}
}

// TestFairUpdateMovesTenant: an update that changes an item's tenant
// moves it to that tenant's turn.
func TestFairUpdateMovesTenant(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"), lj("a3", 0, "a"), lj("b1", 0, "b"))
	h.c.Update(lj("a3", 0, "a"), lj("a3", 0, "c"), h.now)
	h.check()
	h.wantOrder("a1", "b1", "a3", "a2")
}

// TestFairForgetsTenants: tenants that left and whose usage faded are
// forgotten, so the queue does not grow with every tenant ever seen.
func TestFairForgetsTenants(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	for i := range 1000 {
		h.add(lj(fmt.Sprint("x", i), 0, fmt.Sprint("t", i)))
		h.drain()
		h.step(10 * time.Minute) // 10 half-lives: the usage fades to 1/1024
	}
	if n := len(h.c.fair.tenants); n > 130 {
		t.Errorf("%d tenants remembered, want at most 2x what is live, plus 64", n)
	}
}

// TestFairBackoffPopCharges: a pop from backoffQ (activeQ empty) charges
// its tenant too.
func TestFairBackoffPopCharges(t *testing.T) {
	h := newHarness(t, fairBy(nil))
	h.add(lj("a1", 0, "a"))
	h.pop()
	h.move(evMachineAdd, nil) // during the attempt: the requeue backs off
	h.fail("a1", "Fit")
	h.want("a1", InBackoff)
	if got := h.popName(); got != "a1" {
		t.Fatalf("popped %q", got)
	}
	if n := h.c.fair.tenants["a"].pops; n != 2 {
		t.Errorf("tenant a charged %d pops, want 2", n)
	}
}

func TestFairConfigErrors(t *testing.T) {
	cases := []struct {
		field string
		f     Fairness[job]
		less  bool
	}{
		{"Fairness.Tenant", Fairness[job]{}, false},
		{"Fairness.HalfLife", Fairness[job]{Tenant: jobKey, HalfLife: -1}, false},
		{"Fairness.BeforePriority", Fairness[job]{Tenant: jobKey}, true},
	}
	for _, tc := range cases {
		cfg := testConfig()
		if !tc.less {
			cfg.Less, cfg.Priority = nil, jobPrio
		}
		cfg.Fairness = &tc.f
		_, err := NewCore(cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), tc.field) {
			t.Errorf("%s: error %v, want ErrInvalidConfig naming it", tc.field, err)
		}
	}
}

// TestFairNoAllocs: Add, Pop and Done allocate nothing in steady state
// with fairness on.
func TestFairNoAllocs(t *testing.T) {
	c, err := NewCore(Config[int, benchItem]{
		Key:      func(it benchItem) int { return it.id },
		Priority: func(it benchItem) int32 { return it.prio },
		Fairness: &Fairness[benchItem]{Tenant: func(it benchItem) string { return benchTenants[it.id%len(benchTenants)] }},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	for i := range 1000 {
		c.Add(benchItem{id: i, prio: int32(i % 3)}, now)
	}
	id := 0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		a, _ := c.Pop(now)
		c.Done(a, now)
		id = a.Item.id
		c.Add(benchItem{id: id, prio: a.Item.prio}, now)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Add+Pop+Done, want 0", allocs)
	}
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

var benchTenants = []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"}

type tenantRec struct {
	nopRecorder
	pops map[string]int
}

func (r *tenantRec) Popped(tenant string) { r.pops[tenant]++ }

// TestTenants: the tenants' stats, and the recorder hearing each pop.
func TestTenants(t *testing.T) {
	rec := &tenantRec{pops: map[string]int{}}
	h := newHarness(t, fairBy(map[string]float64{"b": 4}), func(c *Config[string, job]) { c.Recorder = rec })
	h.add(lj("a1", 0, "a"), lj("a2", 0, "a"), lj("b1", 0, "b"))
	h.pop()
	h.step(time.Minute)
	got := h.c.Tenants(h.now)
	want := []TenantStats{{Name: "a", Weight: 1, Active: 1, Usage: 0.5, Pops: 1}, {Name: "b", Weight: 4, Active: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Tenants %+v, want %+v", got, want)
	}
	if rec.pops["a"] != 1 || len(rec.pops) != 1 {
		t.Errorf("recorder heard %v, want a once", rec.pops)
	}
	if n := newHarness(t).c.Tenants(h.now); n != nil {
		t.Errorf("Tenants without fairness: %v", n)
	}
}
