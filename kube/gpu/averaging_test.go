package gpu

import (
	"math"
	"strings"
	"testing"
)

// percentOf rounds half to even, as the artifact's analysis (Python's
// round) does: 2.5% is 2, 3.5% is 4.
func TestPercentOfRoundsHalfToEven(t *testing.T) {
	for _, c := range []struct {
		name              string
		arrived, capacity int64
		want              int
	}{
		{"below half", 48, 2000, 2},         // 2.4%
		{"half to even, down", 50, 2000, 2}, // 2.5%
		{"half to even, up", 70, 2000, 4},   // 3.5%
		{"above half", 52, 2000, 3},         // 2.6%
		{"whole", 1_300, 1_000, 130},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := percentOf(c.arrived, c.capacity); got != c.want {
				t.Fatalf("percentOf(%d, %d) = %d, want %d", c.arrived, c.capacity, got, c.want)
			}
		})
	}
}

// One node of two GPUs (2000 thousandths; 1% is 20), shares of 8 only,
// BestFit packing them on GPU 0, fragmentation against whole GPUs only
// (the partly used GPU 0 is fragment, GPU 1 is not). After k pods the
// arrived demand is 0.4·k%; the pods after whose arrival it rounds to 2%
// are the 4th, 5th and 6th (1.6, 2.0, 2.4%), with 32, 40 and 48
// allocated: allocation 0.016, 0.020, 0.024 (mean 0.020), fragmentation
// 968, 960, 952 (mean 960), ratio 968/1968, 960/1960, 952/1952.
// AtFirst measures the 5th alone (the first to reach 2.0%).
func TestRunRoundedMeanByHand(t *testing.T) {
	c := Config{Nodes: []*Node{NewNode("n", "T4", 64_000, 1<<20, 2)}, Pods: []Request{{CPU: 1, Count: 1, Share: 8}},
		Workload: Workload{{Req: Request{CPU: 1, Count: 1, Share: Milli}, P: 1}}, Policy: BestFit, Demand: 0.03, Seed: 1, Points: []float64{0.02}, Averaging: RoundedMean}
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 1 {
		t.Fatalf("points %+v, want one", r.Points)
	}
	p := r.Points[0]
	wantRatio := (968.0/1968 + 960.0/1960 + 952.0/1952) / 3
	if p.Demand != 0.02 || p.Averaged != 3 || math.Abs(p.Alloc-0.020) > 1e-12 || math.Abs(p.FragMean-960) > 1e-9 || math.Abs(p.Ratio-wantRatio) > 1e-12 {
		t.Fatalf("rounded mean at 2%%: %+v, want 3 arrivals, allocation 0.020, fragmentation 960, ratio %v", p, wantRatio)
	}
	if p.Arrived != 6 || p.Placed != 6 || p.Allocated != 48 {
		t.Fatalf("rounded mean at 2%%: arrived %d placed %d allocated %d, want the window's last arrival (6, 6, 48)", p.Arrived, p.Placed, p.Allocated)
	}
	c.Averaging = AtFirst
	r, err = Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Points[0]; p.Averaged != 1 || p.Alloc != 0.02 || p.FragMean != 960 || p.Ratio != 960.0/1960 || p.Arrived != 5 {
		t.Fatalf("at first: %+v, want the 5th pod alone (allocation 0.02, fragmentation 960)", p)
	}
}

// Shares of 50 on the same node: the arrived demand goes 2.5 (rounded to
// 2), 5, 7.5 (8), 10%. No arrival rounds to 3%: the point is the mean of
// those within one percent (the first alone, 50 allocated); none is within
// one percent of 7% but 8%: the third alone (150).
func TestRunRoundedMeanFallsBackWithinOnePercent(t *testing.T) {
	c := Config{Nodes: []*Node{NewNode("n", "T4", 64_000, 1<<20, 2)}, Pods: []Request{{CPU: 1, Count: 1, Share: 50}},
		Policy: BestFit, Demand: 0.1, Seed: 1, Points: []float64{0.03, 0.07}, Averaging: RoundedMean}
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 2 {
		t.Fatalf("points %+v, want two", r.Points)
	}
	for i, want := range []struct {
		demand    float64
		allocated int64
	}{{0.03, 50}, {0.07, 150}} {
		p := r.Points[i]
		if p.Demand != want.demand || p.Averaged != 1 || p.Allocated != want.allocated || p.Alloc != float64(want.allocated)/2000 {
			t.Fatalf("point %d: %+v, want %v measured once with %d allocated", i, p, want.demand, want.allocated)
		}
	}
}

func TestRoundedMeanWantsWholePercents(t *testing.T) {
	c := Config{Nodes: []*Node{NewNode("n", "T4", 64_000, 1<<20, 2)}, Pods: []Request{share500}, Policy: BestFit, Demand: 1, Points: []float64{0.505}, Averaging: RoundedMean}
	if _, err := Run(c); err == nil || !strings.Contains(err.Error(), "point 0.505: averaging rounded wants whole percents") {
		t.Fatalf("error %v", err)
	}
	c.Averaging = Averaging(9)
	if _, err := Run(c); err == nil || !strings.Contains(err.Error(), "unknown averaging 9") {
		t.Fatalf("error %v", err)
	}
}

func TestParseAveraging(t *testing.T) {
	for _, a := range []Averaging{AtFirst, RoundedMean} {
		if got, err := ParseAveraging(a.String()); err != nil || got != a {
			t.Fatalf("ParseAveraging(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAveraging("mean"); err == nil || !strings.Contains(err.Error(), `"mean" is not first or rounded`) {
		t.Fatalf("error %v", err)
	}
}
