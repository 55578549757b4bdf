package sim

import (
	"fmt"
	"math"
	"slices"
)

// fragDemandChart draws the GPUs' allocation rate and fragmentation, as
// fragChart does, against the arrived GPU demand (the GPU requests of the
// pods arrived so far over the GPU capacity) instead of virtual time, as
// the GPU-sharing paper plots them. The demand only grows, so each column
// of demand holds the largest value reached while the demand was in it.
// O(samples + columns) per run and line.
func fragDemandChart(runs []pageRun) svgChart {
	c := newChart("frag-demand-chart", "GPU allocation and fragmentation against arrived GPU demand", 200)
	parts := []allocPart{
		{"gpu allocated", "#7c3aed", func(a AllocSample) float64 { return a.GPU }},
		{"gpu fragmented", "#dc2626", func(a AllocSample) float64 { return a.Frag }},
		{"fragmented of unallocated", "#059669", func(a AllocSample) float64 { return a.FragRatio }},
	}
	most := 0.0 // the largest demand of any run, a fraction
	for _, r := range runs {
		for _, a := range r.R.Alloc {
			most = max(most, a.Demand)
		}
	}
	xStep, xTop := niceMax(int(math.Ceil(100*most)), 8) // in percent
	colOf := func(d float64) int { return min(columns-1, max(0, int(columns*100*d/float64(xTop)))) }
	type line struct {
		name, color, run, dash string
		vals                   []int // tenths of a percent, -1 for none
	}
	var lines []line
	hi := 0
	for _, p := range parts {
		for _, r := range runs {
			vals := make([]int, columns)
			for i := range vals {
				vals[i] = -1
			}
			for _, a := range r.R.Alloc {
				b := colOf(a.Demand)
				vals[b] = max(vals[b], int(math.Round(1000*p.v(a))))
			}
			hi = max(hi, slices.Max(vals))
			lines = append(lines, line{p.name, p.color, r.Label, r.Dash, vals})
		}
	}
	step, top := niceMax(hi, 4)
	for _, l := range lines {
		c.Lines = append(c.Lines, svgLine{Series: l.name, Run: l.run, Color: l.color, Dash: l.dash, Points: c.demandPolyline(l.vals, float64(top))})
	}
	for v := 0; v <= top; v += step {
		c.YTicks = append(c.YTicks, tick{Pos: c.y(float64(v), float64(top)), Label: fmt.Sprintf("%g%%", float64(v)/10), Anchor: "end"})
	}
	for v := 0; v <= xTop; v += xStep {
		c.XTicks = append(c.XTicks, tick{Pos: c.Left + c.PW*float64(v)/float64(xTop), Label: fmt.Sprintf("%d%%", v), Anchor: "middle"})
	}
	if n := len(c.XTicks); n > 0 {
		c.XTicks[n-1].Anchor = "end"
	}
	return c
}

// demandPolyline draws one value per column of demand, at the column's
// centre, skipping columns the demand never was in.
func (c *svgChart) demandPolyline(vals []int, top float64) string {
	var b []byte
	for i, v := range vals {
		if v < 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "%.1f,%.1f", c.Left+c.PW*(float64(i)+0.5)/columns, c.y(float64(v), top))
	}
	return string(b)
}
