package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// sources lists the runtime sources in the order a forecast reports them.
var sources = []string{SourceKnown, SourceAnnotation, SourceDeadline, SourceHistory, SourceUnknown}

// real converts a virtual instant of the run to the state's clock.
func (r *forecastRun) real(t time.Time) time.Time { return r.st.Now.Add(t.Sub(epoch)) }

// result reads the predicted starts off the finished run. O(n log n).
func (r *forecastRun) result() *Forecast {
	f := &Forecast{At: r.st.Now, Horizon: r.o.Horizon, Arrivals: r.arrivals(), Unknown: r.unknown,
		byKey: make(map[types.NamespacedName]int, len(r.asked))}
	ends := newBasis(r.ends())
	gangStart := r.gangStarts()
	endless := r.endlessRuns()
	running := map[string]int{}
	for _, src := range r.runSrc {
		running[src]++
	}
	f.Ends = counts(running)
	for _, p := range r.asked {
		pf := PodForecast{Pod: framework.Key(p), Gang: framework.GroupName(p), Unknown: r.unknown}
		st := r.s.stats[p.UID]
		start, ok := time.Time{}, st != nil && !st.bound.IsZero()
		if ok {
			start, pf.Node = st.bound, st.ext.node
		}
		if pf.Gang != "" && r.gangNeeds(pf.Gang) > 0 {
			// The gang starts once, at its minCount-th binding: a member
			// bound by then starts with it, one bound later (beyond
			// minCount) at its own binding, one never bound not at all.
			gs, started := gangStart[pf.Gang]
			if ok = ok && started; ok && gs.After(start) {
				start = gs
			}
		}
		upTo := r.s.end
		if ok {
			pf.Starts, pf.Start, pf.Wait, upTo = true, r.real(start), start.Sub(epoch), start
		}
		pf.Basis = ends.upTo(upTo)
		// The pods started in the run before it that run until unknown
		// count as the running ones do (a gang's members bind at its
		// start, not before it).
		pf.Unknown += endless.runningBefore(upTo)
		f.byKey[pf.Pod] = len(f.Pods)
		f.Pods = append(f.Pods, pf)
	}
	return f
}

// ends lists every estimated end that came during the run, by time.
// O(n log n).
func (r *forecastRun) ends() []sourcedEnd {
	out := slices.Clone(r.endsAt)
	for uid, st := range r.s.stats {
		if st.ext.end == endFinished {
			out = append(out, sourcedEnd{st.ext.ended, r.source[uid]})
		}
	}
	slices.SortStableFunc(out, func(a, b sourcedEnd) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.source, b.source))
	})
	return out
}

// basis is the estimated ends of a run, by time, with the count of each
// source among the first i of them (cum[i], in the order of sources), so
// that the basis of each of n pods costs O(log ends), not O(ends).
type basis struct {
	ends []sourcedEnd
	cum  [][]int
}

func newBasis(ends []sourcedEnd) *basis {
	b := &basis{ends: ends, cum: make([][]int, len(ends)+1)}
	flat := make([]int, (len(ends)+1)*len(sources))
	for i := range b.cum {
		b.cum[i] = flat[i*len(sources) : (i+1)*len(sources)]
	}
	for i, e := range ends {
		copy(b.cum[i+1], b.cum[i])
		if k := slices.Index(sources, e.source); k >= 0 {
			b.cum[i+1][k]++
		}
	}
	return b
}

// upTo counts, per source, the ends at or before t. O(log ends).
func (b *basis) upTo(t time.Time) []SourceCount {
	n, _ := slices.BinarySearchFunc(b.ends, t, func(e sourcedEnd, t time.Time) int {
		if e.at.After(t) {
			return 1
		}
		return -1
	})
	var out []SourceCount
	for k, s := range sources {
		if c := b.cum[n][k]; c > 0 {
			out = append(out, SourceCount{s, c})
		}
	}
	return out
}

func counts(m map[string]int) []SourceCount {
	var out []SourceCount
	for _, s := range sources {
		if m[s] > 0 {
			out = append(out, SourceCount{s, m[s]})
		}
	}
	return out
}

// gangNeeds is how many of gang g's members must be bound in the run for
// it to reach its minCount: its members running at the copy (and not
// released since) count. Zero or less: it has reached it, and each
// pending member starts when it is bound.
func (r *forecastRun) gangNeeds(g string) int {
	return cmp.Or(r.minOf[g], len(r.members[g])+r.bound[g]) - r.bound[g]
}

// gangStarts returns when each gang's minCount-th member was bound, for
// the gangs that had not reached their minCount (gangNeeds).
func (r *forecastRun) gangStarts() map[string]time.Time {
	out := map[string]time.Time{}
	for g, ms := range r.members {
		var bound []time.Time
		for _, p := range ms {
			if st := r.s.stats[p.UID]; st != nil && !st.bound.IsZero() {
				bound = append(bound, st.bound)
			}
		}
		need := r.gangNeeds(g)
		if need > 0 && len(bound) >= need {
			slices.SortFunc(bound, time.Time.Compare)
			out[g] = bound[need-1]
		}
	}
	return out
}

// arrivals says what the run assumed of pods not yet created.
func (r *forecastRun) arrivals() string {
	if !r.o.Arrivals || r.st.Window <= 0 || len(r.st.Recent) == 0 {
		return "none: pods not yet created are not counted"
	}
	rate := float64(len(r.st.Recent)) / r.st.Window.Hours()
	s := fmt.Sprintf("recent rate: the %d pods that arrived in the last %v, repeated (%.1f/h)", len(r.st.Recent), r.st.Window, rate)
	if r.arrivalsEnd > 0 {
		s += fmt.Sprintf(" for %v, up to %d pods (a later start may be early)", r.arrivalsEnd, MaxAssumedArrivals)
	}
	return s
}

// runs are the starts and the ends of some pods' runs in a forecast, each
// sorted: a pod removed at its start is in neither.
type runs struct{ starts, ends []time.Time }

// endlessRuns returns the runs of the pods started in the run that have
// no runtime: they run until unknown, as a running pod of source
// SourceUnknown does. O(n log n).
func (r *forecastRun) endlessRuns() *runs {
	u := &runs{}
	for _, st := range r.s.stats {
		if st.bound.IsZero() {
			continue
		}
		if _, ok := r.s.x.traceLife[st.key]; ok {
			continue
		}
		switch {
		case st.ext.ended.IsZero():
			u.starts = append(u.starts, st.bound)
		case st.ext.ended.After(st.bound):
			u.starts, u.ends = append(u.starts, st.bound), append(u.ends, st.ext.ended)
		}
	}
	slices.SortFunc(u.starts, time.Time.Compare)
	slices.SortFunc(u.ends, time.Time.Compare)
	return u
}

// runningBefore counts the runs started before t and not ended by t.
// O(log n).
func (u *runs) runningBefore(t time.Time) int {
	started, _ := slices.BinarySearchFunc(u.starts, t, time.Time.Compare)
	ended, found := slices.BinarySearchFunc(u.ends, t, time.Time.Compare)
	for found && ended < len(u.ends) && u.ends[ended].Equal(t) {
		ended++
	}
	return started - ended
}
