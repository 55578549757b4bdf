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

// History learns pods' runtimes: the runtimes observed for pods of the
// same kind, where a pod's kind is the value of the configured label if
// the pod has it, and otherwise its owner's kind and its namespace. It
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
	label   string
	samples map[string]*runtimes
	// Method is how the runtime distribution is estimated (default
	// KaplanMeier).
	Method HistoryMethod
	// Spread is which quantile of it each pod gets (default
	// SpreadStratified).
	Spread HistorySpread
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
)

type runtimes struct {
	d      []time.Duration // finished runs
	c      []time.Duration // censored runs: still going, or cut short
	sorted bool            // d and c sorted, ts and s built
	// ts are the distinct finished times and s the Kaplan–Meier S(t) at
	// each (see kmQuantile).
	ts []time.Duration
	s  []float64
}

// NewHistory returns an empty history; label, if set, names the label
// whose value groups pods.
func NewHistory(label string) *History {
	return &History{label: label, samples: map[string]*runtimes{}}
}

// Kind returns the kind History files p under.
func (h *History) Kind(p *v1.Pod) string {
	if v, ok := p.Labels[h.label]; ok && h.label != "" {
		return "label " + h.label + "=" + v
	}
	kind := "none"
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			kind = o.Kind
		}
	}
	return "owner " + kind + " in " + p.Namespace
}

// Observe records that p ran for d.
func (h *History) Observe(p *v1.Pod, d time.Duration) {
	r := h.kind(p)
	r.d = append(r.d, d)
	r.sorted = false
}

// ObserveRunning records that p has run for elapsed and not finished (it
// is still going, or was cut short): a right-censored runtime, which only
// KaplanMeier uses.
func (h *History) ObserveRunning(p *v1.Pod, elapsed time.Duration) {
	r := h.kind(p)
	r.c = append(r.c, elapsed)
	r.sorted = false
}

func (h *History) kind(p *v1.Pod) *runtimes {
	k := h.Kind(p)
	r := h.samples[k]
	if r == nil {
		r = &runtimes{}
		h.samples[k] = r
	}
	return r
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
// given that it has run for elapsed. With MedianFinished it is the
// runtime at rank ⌊q·n⌋ of the n finished runtimes longer than elapsed,
// less elapsed, and ok is false when n < minHistory. With KaplanMeier see
// kmQuantile.
func (h *History) Quantile(p *v1.Pod, elapsed time.Duration, q float64) (time.Duration, bool) {
	r := h.samples[h.Kind(p)]
	if r == nil {
		return 0, false
	}
	r.prepare()
	if h.Method == KaplanMeier {
		return r.kmQuantile(elapsed, q)
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
// declared runtime already exceeded falls through to the next source.
func (o *ForecastOptions) remaining(p *v1.Pod, elapsed time.Duration) (time.Duration, string) {
	if o.Known != nil {
		if d, ok := o.Known(p); ok {
			return max(d-elapsed, 0), SourceKnown
		}
	}
	if d, ok, err := ParseRuntime(p); ok && err == nil && d > elapsed {
		return d - elapsed, SourceAnnotation
	}
	if ds := p.Spec.ActiveDeadlineSeconds; ds != nil && *ds > 0 {
		d := time.Duration(*ds) * time.Second
		return max(d-elapsed, 0), SourceDeadline
	}
	if o.History != nil {
		if d, ok := o.History.Estimate(p, elapsed); ok {
			return d, SourceHistory
		}
	}
	return 0, SourceUnknown
}
