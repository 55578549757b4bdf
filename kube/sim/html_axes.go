package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// tick is an axis label at a position in pixels.
type tick struct {
	Pos    float64
	Label  string
	Anchor string // the label's text-anchor: start, middle or end
}

// timeSteps are the even steps a time axis may take.
var timeSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 5 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour,
	30 * 24 * time.Hour, 60 * 24 * time.Hour, 90 * 24 * time.Hour, 180 * 24 * time.Hour, 365 * 24 * time.Hour,
}

// timeTicks returns ticks at an even step (multiples of it) from the
// window's start to its end, at most most+1 of them, placed by x. The first label starts at the axis and the last one
// ends at it if it would otherwise cross the chart's edge at right.
func timeTicks(w Window, most int, x func(time.Duration) float64, right float64) []tick {
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if (w.To-w.From)/s <= time.Duration(most) {
			step = s
			break
		}
	}
	var out []tick
	for t := (w.From + step - 1) / step * step; t <= w.To; t += step {
		out = append(out, tick{Pos: x(t), Label: fmtDur(t), Anchor: "middle"})
	}
	if n := len(out); n > 0 && out[n-1].Pos+3.5*float64(len(out[n-1].Label)) > right {
		out[n-1].Anchor = "end"
	}
	return out
}

// niceMax returns an even step for an axis from 0 to at least v, and the
// axis's top: a multiple of the step with at most most steps.
func niceMax(v, most int) (step, top int) {
	if v < 1 {
		v = 1
	}
	for mag := 1; ; mag *= 10 {
		for _, m := range []int{1, 2, 5} {
			step = m * mag
			if top = (v + step - 1) / step * step; top/step <= most {
				return step, top
			}
		}
	}
}

// countTicks returns the ticks of a count axis from 0 to top, placed by y.
func countTicks(step, top int, y func(float64) float64) []tick {
	var out []tick
	for v := 0; v <= top; v += step {
		out = append(out, tick{Pos: y(float64(v)), Label: fmtCount(v), Anchor: "end"})
	}
	return out
}

// fmtCount writes a count briefly: 950, 12k, 1.5M.
func fmtCount(v int) string {
	switch {
	case v >= 1_000_000 && v%100_000 == 0:
		return strconv.FormatFloat(float64(v)/1e6, 'f', -1, 64) + "M"
	case v >= 10_000 && v%1000 == 0:
		return strconv.Itoa(v/1000) + "k"
	}
	return strconv.Itoa(v)
}

// fmtDur writes a virtual duration briefly, in at most two units: 0, 250ms,
// 1.5s, 4m, 4m30s, 2h15m, 3d, 3d12h.
func fmtDur(d time.Duration) string {
	const day = 24 * time.Hour
	two := func(a time.Duration, ua string, b time.Duration, ub string) string {
		s := fmt.Sprintf("%d%s", a, ua)
		if b > 0 {
			s += fmt.Sprintf("%d%s", b, ub)
		}
		return s
	}
	switch {
	case d == 0:
		return "0"
	case d >= day:
		return two(d/day, "d", (d%day)/time.Hour, "h")
	case d >= time.Hour:
		return two(d/time.Hour, "h", (d%time.Hour)/time.Minute, "m")
	case d >= time.Minute:
		return two(d/time.Minute, "m", (d%time.Minute)/time.Second, "s")
	case d >= time.Second:
		return strings.TrimSuffix(strconv.FormatFloat(d.Seconds(), 'f', 3, 64), ".000") + "s"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// logTicks returns the decades from 10^lo to 10^hi seconds, placed by x.
func logTicks(lo, hi int, x func(float64) float64) []tick {
	var out []tick
	for e := lo; e <= hi; e++ {
		d := time.Duration(math.Pow(10, float64(e)) * float64(time.Second))
		label := fmtDur(d)
		if e >= 2 {
			label = fmt.Sprintf("%gs", math.Pow(10, float64(e)))
		}
		out = append(out, tick{Pos: x(float64(e)), Label: label, Anchor: "middle"})
	}
	return out
}
