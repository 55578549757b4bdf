package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schedq/schedq/kube/sim"
)

// statusBar draws a one-line progress bar of the pods handled, with a
// wall-clock estimate of the time left.
func statusBar(w io.Writer, label string, now func() time.Time) func(sim.Progress) {
	start := now()
	return func(p sim.Progress) {
		fmt.Fprintf(w, "\r%s", statusLine(label, p, now().Sub(start)))
	}
}

// statusLine renders one state of the bar: the ETA assumes the pods left
// take as long each as the pods handled so far.
func statusLine(label string, p sim.Progress, elapsed time.Duration) string {
	const width = 30
	if p.Building {
		n := 0
		if p.ToBuild > 0 {
			n = min(width, width*p.Built/p.ToBuild)
		}
		return fmt.Sprintf("%-20s [%s%s] building the cluster: %d/%d nodes and pods, %s elapsed ", label,
			strings.Repeat("#", n), strings.Repeat(".", width-n), p.Built, p.ToBuild, elapsed.Round(time.Second))
	}
	frac := 0.0
	if p.Total > 0 {
		frac = min(1, float64(p.Handled)/float64(p.Total))
	}
	eta := "ETA --"
	if frac > 0 {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		eta = "ETA " + left.Round(time.Second).String()
	}
	n := int(frac * width)
	return fmt.Sprintf("%-20s [%s%s] %d/%d pods handled, %s virtual, %s elapsed, %s ", label,
		strings.Repeat("#", n), strings.Repeat(".", width-n), p.Handled, p.Total, p.Now.Round(time.Second),
		elapsed.Round(time.Second), eta)
}
