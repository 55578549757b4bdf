package gpu

import (
	"fmt"
	"math"
)

// Averaging is how an experiment measures the cluster at a point of
// arrived demand.
type Averaging int

const (
	// AtFirst measures the cluster once, after the first pod whose
	// arrival brings the demand to the point.
	AtFirst Averaging = iota
	// RoundedMean averages over every pod's arrival (placed or dropped)
	// after which the arrived demand, in percent of the GPU capacity
	// rounded to a whole number (half to even), is the point's; if no
	// arrival rounds to it, over those within one percent of it. The
	// allocation rate, the fragmentation and the fragmentation ratio are
	// each the mean of their values after those arrivals, as the paper's
	// artifact's analysis reports them (one measure per scheduled pod).
	// The points must be whole percents.
	RoundedMean
)

// String is the averaging's name: first or rounded.
func (a Averaging) String() string {
	if a == RoundedMean {
		return "rounded"
	}
	return "first"
}

// ParseAveraging reads an Averaging's name.
func ParseAveraging(name string) (Averaging, error) {
	switch name {
	case "first":
		return AtFirst, nil
	case "rounded":
		return RoundedMean, nil
	}
	return 0, fmt.Errorf("%q is not first or rounded", name)
}

// percentOf is the arrived demand in percent of the capacity (both in
// thousandths of a GPU), rounded to a whole number half to even.
func percentOf(arrived, capacity int64) int {
	return int(math.RoundToEven(float64(arrived) / float64(capacity/Milli) / 10))
}

// window gathers RoundedMean's measures for one point.
type window struct {
	pct              int
	exact, near      meanSum
	lastExact, lastN Point
}

// meanSum sums the figures of several measures.
type meanSum struct {
	n                  int
	alloc, frag, ratio float64
}

func (m *meanSum) add(s Stats) {
	m.n++
	m.alloc += s.AllocationRate()
	m.frag += s.Frag
	m.ratio += s.FragRatio()
}

// roundedMeans is RoundedMean's state over a run: the running Stats of
// the cluster (kept up to date node by node) and one window per point.
type roundedMeans struct {
	w       Workload
	nodes   []*Node
	frag    []float64 // per node
	stats   Stats
	windows []window
}

func newRoundedMeans(nodes []*Node, w Workload, points []float64) *roundedMeans {
	r := &roundedMeans{w: w, nodes: nodes, frag: make([]float64, len(nodes))}
	for i, n := range nodes {
		r.frag[i] = Frag(n, w)
		r.stats.Capacity += int64(len(n.Free)) * Milli
		r.stats.Allocated += int64(len(n.Free))*Milli - n.FreeGPU()
		r.stats.Frag += r.frag[i]
	}
	for _, p := range points {
		r.windows = append(r.windows, window{pct: int(math.Round(100 * p))})
	}
	return r
}

// placed updates the running Stats after a pod of r was placed on node i.
func (r *roundedMeans) placed(i int, req Request) {
	f := Frag(r.nodes[i], r.w)
	r.stats.Frag += f - r.frag[i]
	r.frag[i] = f
	r.stats.Allocated += req.GPU()
}

// arrived records the cluster after one pod's arrival.
func (r *roundedMeans) arrived(arrived int64, pt Point) {
	pct := percentOf(arrived, r.stats.Capacity)
	for i := range r.windows {
		w := &r.windows[i]
		switch d := pct - w.pct; {
		case d == 0:
			w.exact.add(r.stats)
			w.lastExact = pt
			fallthrough
		case d >= -1 && d <= 1:
			w.near.add(r.stats)
			w.lastN = pt
		}
	}
}

// points are the measured points: each the mean of its window (the
// Stats, Arrived and Placed those after the window's last arrival), the
// points without any arrival within one percent left out.
func (r *roundedMeans) points() []Point {
	var out []Point
	for _, w := range r.windows {
		m, last := w.exact, w.lastExact
		if m.n == 0 {
			m, last = w.near, w.lastN
		}
		if m.n == 0 {
			continue
		}
		last.Demand = float64(w.pct) / 100
		last.Averaged = m.n
		last.Alloc, last.FragMean, last.Ratio = m.alloc/float64(m.n), m.frag/float64(m.n), m.ratio/float64(m.n)
		out = append(out, last)
	}
	return out
}
