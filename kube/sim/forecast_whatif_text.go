package sim

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// whatIfChangesListed is how many changed forecasts WriteText lists; the
// JSON answer lists them all.
const whatIfChangesListed = 20

// WriteText writes the what-if's answer for people: the state's instant
// at, the pending pods, the horizon and the assumption about arrivals;
// for each added pod whether it fits now (and where, or why not), whom it would
// preempt and its predicted start; then the pending pods whose predicted
// start changes (the first 20). The command line's and the live
// scheduler's answers are this text. O(pods + changes).
func (x *WhatIf) WriteText(w io.Writer, at time.Time, horizon time.Duration) {
	fmt.Fprintf(w, "at %s, %s pending; horizon %v; new arrivals: %s\n", at.UTC().Format(time.RFC3339), podCount(x.Pending), horizon, x.Arrivals)
	for _, p := range x.Pods {
		switch {
		case p.FitsNow:
			fmt.Fprintf(w, "%s: fits now on %s\n", p.Pod, p.Node)
		case len(p.Preempts) > 0:
			fmt.Fprintf(w, "%s: fits on %s by preempting %s\n", p.Pod, p.Node, joinPods(p.Preempts))
		case p.Reason != "":
			fmt.Fprintf(w, "%s: does not fit now: %s\n", p.Pod, p.Reason)
		default:
			fmt.Fprintf(w, "%s: does not fit now\n", p.Pod)
		}
		fmt.Fprintf(w, "  predicted start: %s\n", p.Forecast.text(horizon))
	}
	fmt.Fprintf(w, "pending pods whose predicted start changes: %d\n", len(x.Changed))
	for i, c := range x.Changed {
		if i == whatIfChangesListed {
			fmt.Fprintf(w, "  … and %d more (the JSON answer lists them all)\n", len(x.Changed)-i)
			break
		}
		fmt.Fprintf(w, "  %s: %s → %s\n", c.Pod, c.Before.text(horizon), c.After.text(horizon))
	}
}

// text is f in a few words: when and where it starts (or that it does
// not within horizon), the estimates it rests on, and how many running
// pods it took to run until unknown. O(sources).
func (f PodForecast) text(horizon time.Duration) string {
	var b strings.Builder
	switch {
	case !f.Starts:
		fmt.Fprintf(&b, "not within the horizon of %v", horizon)
	case f.Gang != "":
		fmt.Fprintf(&b, "in %v, with its gang %s", f.Wait.Round(time.Second), f.Gang)
	default:
		fmt.Fprintf(&b, "in %v on %s", f.Wait.Round(time.Second), f.Node)
	}
	srcs := make([]string, len(f.Basis))
	for i, s := range f.Basis {
		srcs[i] = fmt.Sprintf("%d %s", s.Count, s.Source)
	}
	if len(srcs) > 0 {
		fmt.Fprintf(&b, " (after ends by %s)", strings.Join(srcs, ", "))
	}
	if f.Unknown > 0 {
		fmt.Fprintf(&b, "; %d running pods end at an unknown time", f.Unknown)
	}
	return b.String()
}

func joinPods(ps []types.NamespacedName) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// podCount is n pods in words: "1 pod", "3 pods".
func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}
