package sim

import (
	"fmt"
	"time"
)

// Marker is a scenario event on the time axis: when, and what happened.
// Events of one instant share a marker.
type Marker struct {
	T     time.Duration
	Label string
}

// markers lists the scenario's timed events up to the end of the run, in
// time order. O(events).
func (sc *Scenario) markers(end time.Duration) []Marker {
	var out []Marker
	for _, e := range sc.Events {
		if e.At > end {
			continue
		}
		label := e.describe()
		if n := len(out); n > 0 && out[n-1].T == e.At {
			out[n-1].Label += "; " + label
			continue
		}
		out = append(out, Marker{T: e.At, Label: label})
	}
	return out
}

// describe says what an event does, briefly: "+20 nodes (wave1)".
func (e EventSpec) describe() string {
	count := func(x *Selection) string {
		if x.Count == 0 {
			return "all"
		}
		return fmt.Sprint(x.Count)
	}
	switch {
	case e.AddNodes != nil:
		return fmt.Sprintf("+%d nodes (%s)", e.AddNodes.Count, e.AddNodes.Name)
	case e.RemoveNodes != nil:
		return fmt.Sprintf("−%s nodes of %s", count(e.RemoveNodes), e.RemoveNodes.Group)
	case e.TaintNodes != nil:
		return fmt.Sprintf("taint %s nodes of %s (%s)", count(&e.TaintNodes.Selection), e.TaintNodes.Group, e.TaintNodes.Taint.Key)
	case e.UntaintNodes != nil:
		return fmt.Sprintf("untaint %s nodes of %s (%s)", count(&e.UntaintNodes.Selection), e.UntaintNodes.Group, e.UntaintNodes.Taint.Key)
	case e.DeletePods != nil:
		return fmt.Sprintf("delete %s bound pods of %s", count(e.DeletePods), e.DeletePods.Group)
	case e.RemoveGates != nil:
		return fmt.Sprintf("remove the gates of %s pods of %s", count(e.RemoveGates), e.RemoveGates.Group)
	}
	return "event"
}
