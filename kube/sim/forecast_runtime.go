package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/scheduler"
)

// RuntimeAnnotation is the annotation in which a pod declares how long it
// expects to run once started, as a Go duration ("90s", "2h30m"). The
// forecast ends the pod that long after its start. No plugin reads it, so
// it is left out of the pod's hint class (scheduler.InertAnnotations).
const RuntimeAnnotation = scheduler.ExpectedRuntimeAnnotation

// The sources of a runtime estimate, as a forecast names them.
const (
	SourceDeadline   = "activeDeadlineSeconds" // the pod's spec: it ends by then at the latest
	SourceAnnotation = "annotation"            // RuntimeAnnotation
	SourceHistory    = "history"               // runtimes observed of similar pods (History)
	SourceKnown      = "known"                 // a runtime the caller knows (ForecastOptions.Known)
	SourceUnknown    = "unknown"               // no estimate: runs until unknown
)

// minHistory is how many runtimes a History needs of a kind of pod before
// it estimates one.
const minHistory = 3

// minClass is how many runtimes longer than a pod's elapsed time a class
// finer than the coarsest of a History's labels needs before it estimates
// the pod's; with fewer, the next coarser class does. A median from 20
// runs is within about a quarter of its spread of the true one, where a
// coarser class's bias is usually larger.
const minClass = 20

// History learns pods' runtimes: the runtimes observed for pods of the
// same kind, where a pod's kind is the values of the configured labels
// if the pod has the first, and otherwise its owner's kind and its
// namespace. With several labels the classes nest: a pod is estimated
// from the finest class (the values of the longest prefix of the labels
// it has) that holds at least minClass runs longer than it has run, and
// otherwise from the next coarser, down to the first label alone. It
// estimates a pod's remaining runtime, given the time it has already
// run, from the distribution of its kind's runtimes longer than that:
// by default (KaplanMeier) the product-limit estimate, which counts the
// runs still going and those cut short (ObserveRunning) as
// right-censored; with MedianFinished, from the finished runs alone. A
// forecast gives the pods of one kind distinct quantiles of that
// distribution (Spread), by default spread evenly in an order drawn from
// Seed. Observe is O(1); Estimate O(n log n) after an Observe of its
// kind, then O(log n). Not safe for concurrent use.
type History struct {
	labels  []string
	samples map[string]*runtimes
	// Method is how the runtime distribution is estimated (default
	// KaplanMeier).
	Method HistoryMethod
	// Spread is which quantile of it each pod gets (default
	// SpreadStratified).
	Spread HistorySpread
	// Tail is the quantile KaplanMeier gives beyond its last finished
	// run (default TailLongest).
	Tail HistoryTail
	// Seed draws the order of SpreadStratified.
	Seed uint64
	// quantile, if set, is the quantile of the conditional runtime
	// distribution each pod gets instead of the median.
	quantile map[types.UID]float64
}

// HistoryMethod names how History estimates a remaining runtime.
type HistoryMethod string

// The methods of History.
const (
	// KaplanMeier also counts the runs still going, and any run cut short,
	// as right-censored: the product-limit estimator of the runtime
	// distribution, conditioned on the time the pod has run.
	KaplanMeier HistoryMethod = ""
	// MedianFinished uses only the runtimes of finished pods.
	MedianFinished HistoryMethod = "finished"
)

// HistorySpread names which quantile of its kind's conditional runtime
// distribution each pod of a forecast gets.
type HistorySpread string

// The spreads of History.
const (
	// SpreadStratified gives the n pods of a kind whose runtimes History
	// estimates the quantiles (i+0.5)/n, in an order drawn from Seed: the
	// ends of all of them follow the distribution (see Stratified).
	SpreadStratified HistorySpread = ""
	// SpreadMedian gives every pod the median: their ends cluster.
	SpreadMedian HistorySpread = "median"
	// SpreadApart is SpreadStratified with the running pods of a kind
	// stratified among themselves and the pending ones among
	// themselves, rather than together: a kind's running pods' ends then
	// follow their distributions however many of its pods are pending.
	SpreadApart HistorySpread = "apart"
)

// HistoryTail names what KaplanMeier gives a quantile that its estimate
// never reaches: when the runs longer than the pod's elapsed time that
// are still going are so many that S(t) never falls to 1 − q.
type HistoryTail string

// The tails of History.
const (
	// TailLongest gives the longest run observed, less the elapsed time:
	// a lower bound, set by the single longest run.
	TailLongest HistoryTail = ""
	// TailExponential continues the estimate past its last finished run
	// at the constant hazard it shows from the elapsed time to that run:
	// with S the conditional survival at the last finished time t, the
	// q-quantile of the remaining runtime is (t − e)·ln(1 − q) ÷ ln S.
	TailExponential HistoryTail = "exponential"
)

// ParseHistoryTail reads a tail's name: "longest" or "" (TailLongest), or
// "exponential".
func ParseHistoryTail(s string) (HistoryTail, error) {
	switch s {
	case "", "longest":
		return TailLongest, nil
	case string(TailExponential):
		return TailExponential, nil
	}
	return "", fmt.Errorf("history tail %q: not longest or exponential", s)
}

type runtimes struct {
	d      []time.Duration // finished runs
	c      []time.Duration // censored runs: still going, or cut short
	sorted bool            // d and c sorted, ts and s built
	// ts are the distinct finished times and s the Kaplan–Meier S(t) at
	// each (see kmQuantile).
	ts []time.Duration
	s  []float64
}

// NewHistory returns an empty history; labels, if set, name the labels
// whose values group pods, coarsest first (empty names are left out).
func NewHistory(labels ...string) *History {
	var ls []string
	for _, l := range labels {
		if l != "" {
			ls = append(ls, l)
		}
	}
	return &History{labels: ls, samples: map[string]*runtimes{}}
}

// Kind returns the finest kind History files p under.
func (h *History) Kind(p *v1.Pod) string {
	ks := h.kinds(p)
	return ks[len(ks)-1]
}

// kinds returns the kinds p is filed under, coarsest first: one per
// prefix of the labels that p has, or, if it has not the first, its
// owner kind and namespace, then its controller (the pods of one
// template: a ReplicaSet, a Job, a StatefulSet) if it has one. O(labels).
func (h *History) kinds(p *v1.Pod) []string {
	var ks []string
	var b strings.Builder
	b.WriteString("label ")
	for i, l := range h.labels {
		v, ok := p.Labels[l]
		if !ok {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l + "=" + v)
		ks = append(ks, b.String())
	}
	if len(ks) > 0 {
		return ks
	}
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			coarse := "owner " + o.Kind + " in " + p.Namespace
			return []string{coarse, coarse + ": " + o.Name}
		}
	}
	return []string{"owner none in " + p.Namespace}
}

// Observe records that p ran for d. O(labels).
func (h *History) Observe(p *v1.Pod, d time.Duration) {
	for _, r := range h.classes(p) {
		r.d = append(r.d, d)
		r.sorted = false
	}
}

// ObserveRunning records that p has run for elapsed and not finished (it
// is still going, or was cut short): a right-censored runtime, which only
// KaplanMeier uses. O(labels).
func (h *History) ObserveRunning(p *v1.Pod, elapsed time.Duration) {
	for _, r := range h.classes(p) {
		r.c = append(r.c, elapsed)
		r.sorted = false
	}
}

// classes returns the runtimes of each of p's kinds, coarsest first,
// made if missing.
func (h *History) classes(p *v1.Pod) []*runtimes {
	ks := h.kinds(p)
	rs := make([]*runtimes, len(ks))
	for i, k := range ks {
		r := h.samples[k]
		if r == nil {
			r = &runtimes{}
			h.samples[k] = r
		}
		rs[i] = r
	}
	return rs
}

// Estimate returns how much longer p, which has run for elapsed, is
// expected to run: the quantile assigned to p (Stratified, Sampled; the
// median if none) of its kind's runtimes longer than elapsed, less
// elapsed; see Quantile.
func (h *History) Estimate(p *v1.Pod, elapsed time.Duration) (time.Duration, bool) {
	q, ok := h.quantile[p.UID]
	if !ok {
		q = 0.5
	}
	return h.Quantile(p, elapsed, q)
}

// Quantile returns the q-quantile (0 < q < 1) of p's remaining runtime,
// given that it has run for elapsed, from the finest of p's classes
// that has minClass runs longer than elapsed (the coarsest needs
// minHistory). With MedianFinished it is the runtime at rank ⌊q·n⌋ of
// the n finished runtimes longer than elapsed, less elapsed, and ok is
// false when n < minHistory. With KaplanMeier see kmQuantile.
// O(labels · log n) once prepared.
func (h *History) Quantile(p *v1.Pod, elapsed time.Duration, q float64) (time.Duration, bool) {
	ks := h.kinds(p)
	for i := len(ks) - 1; i >= 0; i-- {
		r := h.samples[ks[i]]
		if r == nil {
			continue
		}
		r.prepare()
		if i > 0 && r.longer(elapsed, h.Method == KaplanMeier) < minClass {
			continue
		}
		if d, ok := h.quantileOf(r, elapsed, q); ok || i == 0 {
			return d, ok
		}
	}
	return 0, false
}

// quantileOf is Quantile from the runtimes of one class, prepared.
func (h *History) quantileOf(r *runtimes, elapsed time.Duration, q float64) (time.Duration, bool) {
	if h.Method == KaplanMeier {
		return r.kmQuantile(elapsed, q, h.Tail)
	}
	i, _ := slices.BinarySearch(r.d, elapsed+1)
	tail := r.d[i:]
	if len(tail) < minHistory {
		return 0, false
	}
	return tail[min(int(q*float64(len(tail))), len(tail)-1)] - elapsed, true
}

// ParseRuntime reads p's RuntimeAnnotation; ok is false without one.
func ParseRuntime(p *v1.Pod) (d time.Duration, ok bool, err error) {
	v, ok := p.Annotations[RuntimeAnnotation]
	if !ok {
		return 0, false, nil
	}
	d, err = time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("pod %s/%s: annotation %s: %q is not a positive duration such as 90s or 2h", p.Namespace, p.Name, RuntimeAnnotation, v)
	}
	return d, true, nil
}

// remaining estimates how much longer p runs, having run for elapsed
// (0 for a pod not started), and names the source. The sources are
// tried in order: known, annotation, activeDeadlineSeconds, history. A
// declared runtime already exceeded falls through to the next source,
// and so does one longer than the deadline, by which the pod ends at the
// latest.
func (o *ForecastOptions) remaining(p *v1.Pod, elapsed time.Duration) (time.Duration, string) {
	if o.Known != nil {
		if d, ok := o.Known(p); ok {
			return max(d-elapsed, 0), SourceKnown
		}
	}
	deadline, hasDeadline := time.Duration(0), false
	if ds := p.Spec.ActiveDeadlineSeconds; ds != nil && *ds > 0 {
		deadline, hasDeadline = time.Duration(*ds)*time.Second, true
	}
	if d, ok, err := ParseRuntime(p); ok && err == nil && d > elapsed && (!hasDeadline || d <= deadline) {
		return d - elapsed, SourceAnnotation
	}
	if hasDeadline {
		return max(deadline-elapsed, 0), SourceDeadline
	}
	if o.History != nil {
		if d, ok := o.History.Estimate(p, elapsed); ok {
			return d, SourceHistory
		}
	}
	return 0, SourceUnknown
}
